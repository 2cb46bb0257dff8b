"""The answer edgebench exists for, on one screen: per substrate and headline metric, the CNI modes ranked against
the host network, each with its verdict by the one rule (results.report.verdict), the difference in % with its 95% CI and
n, and one sentence ("on the local testbed, for DDS latency p90 at 64 B: flannel:host-gw is equivalent to the host;
flannel:vxlan is 31.2 % worse ..."). The portal's Overview and `edgebench summary answer` (`make summary`) show the
same rows.

Each headline reads one vs-host mart and its verdict column (no second computation). The configuration shown per
substrate and headline is the one measured under the neutral conditions (every cell dimension at its default: no
link condition, default tuning, the machine's own cores, ...) with the most CNI modes judged; ties go to the
smaller payload, then the one with more runs. A configuration is the mart's whole grain (runs of another duration
or bitrate are another one), so a CNI mode appears once in a ranking. Pure functions over `fetch(sql, params) ->
list[dict]`, as results.report.papers; the headlines and their rows are the read API's (marts.answer).
"""
from __future__ import annotations

from typing import Callable

from edgebench.plan.dimensions import DIMENSIONS
from edgebench.results.report.marts.answer import HEADLINES, Headline, headline_rows
from edgebench.results.report.verdict import describe

Fetch = Callable[[str, list], list[dict]]

SUBSTRATE_TEXT = {"local": "the local testbed (an emulation of the CNIs' datapaths)", "kind": "kind clusters",
                  "ssh": "real CNIs on clusters reached over SSH (substrate ssh)", "imported": "imported results"}


# the order of a ranking: decided and better first, then equivalent, then worse by size, then undecided
_RANK = {"better": 0, "equivalent": 1, "worse": 2, "inconclusive": 3, "n < 2": 4}


def _neutral() -> dict[str, str]:
    return {d.warehouse_column: d.base for d in DIMENSIONS if d.in_grain and d.warehouse_column != "substrate"}


def _rows(fetch: Fetch, h: Headline) -> list[dict]:
    return headline_rows(fetch, h, tuple(_neutral()))


def _config_key(r: dict, h: Headline) -> tuple:
    return (r["distribution"], *(str(r[c]) for c in _neutral()), *(str(r[c]) for c in h.config))


def headline(fetch: Fetch, h: Headline) -> list[dict]:
    """One entry per substrate and lab (two labs are never pooled): the configuration shown, its ranked rows and the
    sentence."""
    neutral = _neutral()
    by_sub: dict[tuple, dict[tuple, list[dict]]] = {}
    for r in _rows(fetch, h):
        by_sub.setdefault((r["substrate"], r["lab"]), {}).setdefault(_config_key(r, h), []).append(r)
    out = []
    for (sub, lab), groups in sorted(by_sub.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        def score(item):
            rows = item[1]
            off = sum(1 for c, v in neutral.items() if str(rows[0][c]) != str(v))
            judged = sum(1 for r in rows if r["verdict"] != "n < 2")
            size = rows[0].get("length_bytes")
            runs = sum(r["n_runs"] or 0 for r in rows)
            return (off, -judged, size if size is not None else 0, -runs, item[0])
        _, rows = min(groups.items(), key=score)
        # better: the largest gain first; worse: the smallest loss first
        rows = sorted(rows, key=lambda r: (_RANK.get(r["verdict"], 9),
                                          abs(r["diff_pct"] or 0) * {"better": -1, "worse": 1}.get(r["verdict"], 0),
                                          r["cni"], r["cni_mode"]))
        for r in rows:
            r["mode"] = f"{r['cni']}:{r['cni_mode']}"
            r["text"] = describe(r["verdict"], r["diff_pct"], r["ci_pct"], r["n_runs"], r["host_n_runs"],
                                 r["verdict_margin_pct"], r["runs_to_decide"])
        config = {c: rows[0][c] for c in h.config}
        conditions = {c: rows[0][c] for c, v in neutral.items() if str(rows[0][c]) != str(v)}
        out.append({"substrate": sub, "lab": lab, "headline": h.key, "label": h.label, "unit": h.unit, "config": config,
                    "conditions": conditions, "distribution": rows[0]["distribution"], "rows": rows,
                    "sentence": sentence(sub, h.label, config, conditions, rows, lab)})
    return out


def answer(fetch: Fetch) -> list[dict]:
    """Every headline on every substrate (results.report.ranking.headline)."""
    return [entry for h in HEADLINES for entry in headline(fetch, h)]


def _config_text(config: dict, conditions: dict) -> str:
    parts = []
    if config.get("length_bytes") is not None:
        parts.append(f"{config['length_bytes']} B")
    for c in ("service", "path", "placement", "reliability"):
        if config.get(c) is not None:
            parts.append(str(config[c]))
    if config.get("duration_s") is not None:
        parts.append(f"{config['duration_s']} s runs")
    if config.get("iperf3_bitrate") is not None:
        parts.append(f"at {config['iperf3_bitrate']}")
    parts += [f"{k}={v}" for k, v in conditions.items()]
    return " ".join(parts)


def _span(rows: list[dict]) -> str:
    sizes = sorted(abs(r["diff_pct"]) for r in rows if r["diff_pct"] is not None)
    if not sizes:
        return ""
    lo, hi = sizes[0], sizes[-1]
    return f"{lo:.0f} % " if round(lo) == round(hi) else f"{lo:.0f}–{hi:.0f} % "


def _names(rows: list[dict]) -> str:
    names = [r["mode"] for r in rows]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def sentence(substrate: str, label: str, config: dict, conditions: dict, rows: list[dict], lab: str | None = None
             ) -> str:
    """'On the local testbed (...), for DDS latency p90 (64 B cross-node): flannel:host-gw is equivalent to the
    host; flannel:vxlan and calico:vxlan are 25–40 % worse; cilium:vxlan is inconclusive.'"""
    where = SUBSTRATE_TEXT.get(substrate, substrate)
    if substrate == "ssh" and lab:
        where += f", lab {lab}"
    parts = []
    for verdict, phrase in (("equivalent", "equivalent to the host"), ("better", "better than the host"),
                            ("worse", "worse than the host"), ("inconclusive", "inconclusive so far"),
                            ("n < 2", "not yet judged (fewer than 2 runs a side)")):
        group = [r for r in rows if r["verdict"] == verdict]
        if not group:
            continue
        verb = "is" if len(group) == 1 else "are"
        size = _span(group) if verdict in ("better", "worse") else ""
        if verdict in ("better", "worse"):
            phrase = f"{size}{verdict} than the host"
        parts.append(f"{_names(group)} {verb} {phrase}")
    margin = rows[0]["verdict_margin_pct"] if rows else None
    tail = f" (95% CIs, margin ±{margin:g} %)" if margin is not None else ""
    return f"On {where}, for {label} ({_config_text(config, conditions)}): " + "; ".join(parts) + tail + "."
