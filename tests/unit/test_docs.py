"""The README stays a front door (short, linking one docs/ page per subsystem) and no link in the docs is broken."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = sorted((REPO / "docs").rglob("*.md"))
PENDING = {"docs/lab-local.md"}  # announced in the README, being written
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return [m.group(1) for m in LINK.finditer(text) if not re.match(r"[a-z]+:", m.group(1))]


def test_readme_is_short_and_keeps_the_front_door():
    text = README.read_text()
    assert len(text.splitlines()) < 200, "the README is a front door: reference material goes to docs/"
    for heading in ("## The two commands", "## What a sweep gives", "## Where to look next", "## Benchmarks"):
        assert heading in text
    assert "make sweep" in text and "make test" in text
    assert re.search(r"^\| part \| figure \| value \| target \|$", text, re.M), "the benchmark table stays"


def test_readme_links_every_docs_page():
    linked = {str((README.parent / target).resolve().relative_to(REPO)) for target in links(README)}
    top = {str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md")}
    assert top - linked == set(), "a docs/ page the README does not point to"
    assert PENDING <= linked


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page):
    broken = []
    for target in links(page):
        resolved = (page.parent / target).resolve()
        rel = str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else str(resolved)
        if not resolved.exists() and rel not in PENDING:
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: broken links {broken}"
