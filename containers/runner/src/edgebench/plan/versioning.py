"""Version numbers as upstream spells them: parsing and semantic-version ordering (pure). versions.py (which
re-exports these) reads the release sources; spec.py validates a rerun's trigger with them."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Iterable

from edgebench.errors import SpecError

# MAJOR.MINOR[.PATCH][-PRERELEASE][+BUILD], optional leading v (v3.31.7, 1.18.0, v2.11.1, 1.19.0-rc.1)
_VERSION = re.compile(
    r"^v?(?P<major>\d{1,9})\.(?P<minor>\d{1,9})(?:\.(?P<patch>\d{1,9}))?"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)


class VersionError(SpecError):
    """A version string that is not a version (exit code 2)."""


# ------------------------------------------------------------------------------------------------ versions
@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Version:
    """A release version as upstream spells it (`text`), ordered as semantic versions: numeric MAJOR.MINOR.PATCH,
    a pre-release below its release, pre-release identifiers numeric < alphanumeric; build metadata ignored."""

    text: str
    release: tuple[int, int, int]
    pre: tuple[str, ...] = ()

    @property
    def is_prerelease(self) -> bool:
        return bool(self.pre)

    @property
    def _key(self) -> tuple:
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.release, 0 if self.pre else 1, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key == other._key

    def __lt__(self, other: "Version") -> bool:
        return self._key < other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return self.text


def parse_version(text: Any, what: str = "version") -> Version:
    """`text` as a Version, or VersionError naming `what` and the expected form."""
    if not isinstance(text, str) or not _VERSION.match(text.strip()) or len(text) > 80:
        shown = repr(text) if len(repr(text)) <= 60 else repr(text)[:60] + "..."
        raise VersionError(f"{what} {shown} is not a version (expected MAJOR.MINOR[.PATCH][-PRERELEASE], "
                           "e.g. v3.31.8 or 1.18.1)")
    text = text.strip()
    m = _VERSION.match(text)
    pre = tuple(m.group("pre").split(".")) if m.group("pre") else ()
    return Version(text, (int(m.group("major")), int(m.group("minor")), int(m.group("patch") or 0)), pre)


def is_version(text: Any) -> bool:
    try:
        parse_version(text)
    except VersionError:
        return False
    return True


def newest_release(versions: Iterable[Version]) -> Version | None:
    """The highest version that is not a pre-release (rc, beta, pre, dev), or None."""
    releases = [v for v in versions if not v.is_prerelease]
    return max(releases) if releases else None
