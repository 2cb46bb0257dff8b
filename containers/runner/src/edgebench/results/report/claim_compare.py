"""A published claim's parts (results/report/papers.py): its subjects and threshold, the values it names, the substrates
that can never measure it, and one comparison of its two sides (two means with their 95% half-widths) judged by the
project's one verdict rule (results/report/verdict.py)."""
from __future__ import annotations

import json
import math

from edgebench.results.report import verdict


def compare(left: float, left_ci: float | None, right: float, right_ci: float | None, comparator: str,
            tolerance_pct: float | None = None, n_left: int | None = None, n_right: int | None = None,
            family: str = "throughput") -> str:
    """One comparison of two means with their 95% half-widths, judged by the project's one rule
    (results.report.verdict.decide) on left - right against right: 'agrees', 'disagrees' or 'cannot tell'.

    The interval of the difference: Welch's, from each side's run count and the standard deviation behind its
    half-width, when both counts are known; else the two half-widths combined (root sum of squares). The margin:
    tolerance_pct for `~`, the family's margin for `<` / `>`. `>` agrees when left is better (higher) beyond the
    margin, disagrees when it is lower or the two are equivalent (the claimed difference is not there at a
    practical size); `~` agrees when equivalent, disagrees when better or worse; inconclusive cannot tell."""
    if comparator not in (">", "<", "~"):
        raise ValueError(f"comparator {comparator!r} is not <, > or ~")
    if left is None or right is None or (isinstance(left, float) and math.isnan(left)):
        return "cannot tell"
    if left_ci is None or right_ci is None:
        return "cannot tell"
    if n_left and n_right and n_left >= 2 and n_right >= 2:
        ci = verdict.welch_ci95(n_left, sd_of_ci95(left_ci, n_left), n_right, sd_of_ci95(right_ci, n_right))
        na, nb = n_left, n_right
    else:
        ci, na, nb = math.sqrt(left_ci ** 2 + right_ci ** 2), 2, 2
    pct = (tolerance_pct or 0.0) if comparator == "~" else verdict.margin_pct(family)
    v = verdict.decide(left - right, ci, na, nb, right, True, pct)
    if comparator == "~":
        return {"equivalent": "agrees", "better": "disagrees", "worse": "disagrees"}.get(v, "cannot tell")
    wanted = "better" if comparator == ">" else "worse"
    if v == wanted:
        return "agrees"
    return "disagrees" if v in verdict.DECISIVE else "cannot tell"


def sd_of_ci95(ci95: float, n: int) -> float:
    """The standard deviation behind a Student-t 95% half-width over n runs (the marts' *_ci95_* columns)."""
    return ci95 * math.sqrt(n) / verdict.t95(n - 1)


def metric_family(metric: str) -> str:
    """A mart metric's verdict family by its name: *_mbps / samples -> throughput, *_us / *_ms -> latency, cpu_* ->
    cpu, rss_* / *_mb -> memory."""
    if metric.startswith("cpu") or "_cpu" in metric:
        return "cpu"
    if metric.startswith("rss") or metric.endswith("_mb"):
        return "memory"
    if metric.endswith(("_us", "_ms")):
        return "latency"
    return "throughput"


def norm(v) -> str:
    """A mart value as the seeds spell it: true/false, 1024 for 1024.0, else str()."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def parse_subject(text: str) -> dict[str, set[str]]:
    """'cni=flannel;cni_mode=vxlan|fastdp' -> {'cni': {'flannel'}, 'cni_mode': {'vxlan', 'fastdp'}}."""
    out: dict[str, set[str]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        col, sep, values = part.partition("=")
        if not sep:
            raise ValueError(f"subject part {part!r} is not column=value")
        out[col.strip()] = {v.strip() for v in values.split("|")}
    return out


def threshold(text: str) -> float | None:
    """A claim's right side as a number (a threshold), or None when it is a subject."""
    try:
        return float(text)
    except ValueError:
        return None


def named_values(claim: dict, column: str) -> set[str]:
    """The values a claim names for one column, in its subjects or its filters."""
    out: set[str] = set()
    for k in ("left_subject", "right_subject"):
        text = str(claim.get(k) or "")
        if threshold(text) is None:
            out |= parse_subject(text).get(column, set())
    want = json.loads(claim.get("filters") or "{}").get(column)
    if want is not None:
        out |= {norm(w) for w in (want if isinstance(want, list) else [want])}
    return out


def substrate_limit(claim: dict, substrate: str | None) -> str | None:
    """Why a substrate can never measure a claim, whatever is run on it (None: it can). The testbed runs no
    Kubernetes distribution and no CNI agents, so claims about distributions or the CNI's own processes are not
    testable there; they are on clusters."""
    if substrate != "local":
        return None
    if named_values(claim, "distribution") - {"none"}:
        return ("not testable on the testbed: it runs no Kubernetes distribution (the part of one it models, the "
                "service proxy, is compared in cmp_service_proxies); a cluster preset measures it")
    if claim.get("mart") == "cmp_resources_vs_host" and "cni" in named_values(claim, "component"):
        return ("not testable on the testbed: it runs no CNI agents, so there is no component cni to measure; a "
                "cluster preset measures it")
    return None
