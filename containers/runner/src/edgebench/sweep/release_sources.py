"""Reading a CNI's release source over the network (`edgebench versions check`, `edgebench watch`, the Argo version
probe): the fetch function plan/versions.py's pure readers take. http, https and file URLs; a plain path is read as
a file. A source that is down raises SourceError, one that answers too much SourceFormatError: one message each."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from edgebench.plan.versions import SourceError, SourceFormatError

MAX_BYTES = 64 * 1024 * 1024  # cilium's chart index is a few MB; anything near this is not an index
TIMEOUT_S = 20.0


def http_fetch(url: str, timeout: float = TIMEOUT_S, limit: int = MAX_BYTES) -> bytes:
    """GET `url` (http, https, file; a plain path is read as a file). SourceError with the reason on failure."""
    target = url if "://" in url else Path(url).resolve().as_uri()
    if not target.startswith(("http://", "https://", "file://")):
        raise SourceError(f"cannot read {url}: only http, https and file URLs are release sources")
    req = urllib.request.Request(target, headers={"User-Agent": "edgebench-versions",
                                                  "Accept": "application/json, application/yaml, text/plain, */*"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (scheme checked above)
            data = resp.read(limit + 1)
    except urllib.error.HTTPError as exc:
        raise SourceError(f"cannot read {url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise SourceError(f"cannot read {url}: {getattr(exc, 'reason', exc)}") from None
    except (OSError, ValueError) as exc:  # timeouts, resets, malformed URLs
        raise SourceError(f"cannot read {url}: {exc}") from None
    if len(data) > limit:
        raise SourceFormatError(f"{url} is larger than {limit // (1024 * 1024)} MB: not a release list")
    return data
