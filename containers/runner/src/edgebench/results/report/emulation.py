"""The testbed's answer checked against a real lab, each substrate against its own host (mart
cmp_emulation_overhead, read by marts.reports.emulation_overhead): per real lab and metric how it fared (what the
CLI's `report --emulation`, the portal's Emulation page and the Overview say). The verdicts are the vs-host marts' (the one rule); what this
adds is their agreement, the overhead gap and the rank agreement (Kendall's tau-b) of the CNI modes."""

from __future__ import annotations

import statistics
from typing import Any

from edgebench.plan import catalog
from edgebench.results.report.verdict import t95

DECIDED = ("equivalent", "better", "worse")
AGREE_GOAL, DECIDED_GOAL, GAP_GOAL_PTS, TAU_GOAL = 0.90, 0.60, 10.0, 0.8  # issue 43's bar for "the testbed holds"


def explained(row: dict[str, Any]) -> dict[str, str] | None:
    """The traced cause of this row's disagreement (catalog.disagreement), when its verdicts were decided on both
    substrates and differ; None otherwise."""
    if not row.get("decided_both") or row.get("verdicts_agree"):
        return None
    return catalog.disagreement(row["workload"], row["config"])


def traced(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The traced causes behind these rows' disagreements, each once: its cause, explanation and the comparisons it
    explains ("real lab, CNI mode, configuration"), in the catalog's order of first appearance."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        entry = explained(r)
        if entry:
            what = f"{r['real_lab']}, {r['cni']}:{r.get('cni_mode') or ''}".rstrip(":") + f", {r['config']}"
            out.setdefault(entry["config"], {"cause": entry["cause"], "explanation": entry["explanation"],
                                             "rows": []})["rows"].append(what)
    return list(out.values())


def fared(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per real lab and metric: comparisons, decided on both substrates, verdicts that agree (and of those that
    do not, how many have a traced cause: `explained`), the median and the largest overhead gap (points), the rank
    agreement (mean tau over configurations with 2+ modes that has one, with its 95% interval over those
    configurations: t on k - 1 df, none for one configuration; a configuration where every pair of modes is tied on a
    side, the one rule telling none apart there, has none and is counted in `configs_all_tied`: nothing to compare,
    so it neither meets nor misses the bar) and a one-word outcome: `holds` (agreement, decided
    share, gap and tau all meet the bar), `differs` (some decided verdicts disagree or the order flips) or `not
    yet` (too few decided to say). An explained disagreement still counts as one: it is what a user must know."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["real_lab"], r["workload"], r["metric"]), []).append(r)
    out = [{"real_lab": lab, "workload": workload, "metric": metric, **fare(rs)}
           for (lab, workload, metric), rs in sorted(groups.items())]
    for f in out:  # a metric short of a bar with its cause known (catalog.shortfall) says it
        entry = catalog.shortfall(f["workload"], f["metric"]) if f["outcome"] != "holds" else None
        f["shortfall"] = {"bar": entry["bar"], "cause": entry["cause"]} if entry else None
    return out


def fare(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How the testbed fared over these comparisons (one lab and metric for `fared`; a lab's every metric for the
    bench's overall row): the counts, gaps, rank agreement and outcome `fared` describes. The rank agreement is the
    mean over configurations (a metric's own: workload, metric and configuration) with 2+ modes."""
    decided = [r for r in rows if r["decided_both"]]
    agree = [r for r in decided if r["verdicts_agree"]]
    gaps = [abs(r["overhead_gap_pts"]) for r in rows if r["overhead_gap_pts"] is not None]
    taus = {(r["workload"], r["metric"], r["config"]): r["kendall_tau"] for r in rows
            if r.get("kendall_tau") is not None and r["n_modes"] >= 2}
    ranked = {(r["workload"], r["metric"], r["config"]) for r in rows if r["n_modes"] >= 2}
    tau = statistics.fmean(taus.values()) if taus else None
    tau_ci = (t95(len(taus) - 1) * statistics.stdev(taus.values()) / len(taus) ** 0.5) if len(taus) >= 2 else None
    share = len(decided) / len(rows)
    if decided and (len(agree) < len(decided) or (tau is not None and tau < 0)):
        outcome = "differs"
    elif (share >= DECIDED_GOAL and len(agree) >= AGREE_GOAL * len(decided) and gaps
          and statistics.median(gaps) <= GAP_GOAL_PTS and (tau is None or tau >= TAU_GOAL)):
        outcome = "holds"
    else:
        outcome = "not yet"
    return {"comparisons": len(rows), "decided_both": len(decided), "agree": len(agree),
            "explained": sum(1 for r in decided if explained(r)),
            "median_gap_pts": statistics.median(gaps) if gaps else None,
            "max_gap_pts": max(gaps) if gaps else None, "kendall_tau": tau, "kendall_tau_ci95": tau_ci,
            "configs_ranked": len(taus), "configs_all_tied": len(ranked) - len(taus), "outcome": outcome}


def sentence(f: dict[str, Any]) -> str:
    """One line of how the testbed fared for a metric against a lab."""
    ci = f" [{max(-1.0, f['kendall_tau'] - f['kendall_tau_ci95']):+.2f}, " \
         f"{min(1.0, f['kendall_tau'] + f['kendall_tau_ci95']):+.2f}]" if f.get("kendall_tau_ci95") is not None else ""
    tau = f"; CNI order tau {f['kendall_tau']:+.2f}{ci} over {f['configs_ranked']} configuration(s)" \
        if f["kendall_tau"] is not None else ""
    if f.get("configs_all_tied"):
        tau += (f"; {f['configs_all_tied']} configuration(s) with no two modes told apart on both substrates (no "
                "order to compare)")
    why = f" ({f['explained']} of the {f['decided_both'] - f['agree']} that differ traced: see the Emulation page)" \
        if f.get("explained") else ""
    gap = f"; overhead gap median {f['median_gap_pts']:.1f} points (largest {f['max_gap_pts']:.1f})" \
        if f["median_gap_pts"] is not None else ""
    short = f". Short of the bar on {f['shortfall']['bar']}: {f['shortfall']['cause']} (see the Emulation page)" \
        if f.get("shortfall") else ""
    return (f"{f['workload']} {f['metric']} against {f['real_lab']}: {f['outcome']} - decided on both substrates in "
            f"{f['decided_both']} of {f['comparisons']}, the same verdict in {f['agree']} of {f['decided_both']}"
            f"{why}{gap}{tau}{short}")


UNITS = {"throughput_mbps": ("Mbps", 1.0), "latency_p90_us": ("us", 1.0), "response_p50_ms": ("us", 1000.0)}


def added(row: dict[str, Any]) -> str:
    """Each side's host baseline and what the mode adds to it, in the metric's unit ("host 67.6 / 107.5 us, mode
    +27.9 / +26.0 us", testbed / real): a lab's load adds time to its host and its modes alike, so the same added
    time is a smaller share of a slower host; '' where the mart has no figures (warehouses built before them)."""
    unit, scale = UNITS.get(row.get("metric"), ("", 1.0))
    vals = [row.get(k) for k in ("testbed_host_value", "real_host_value", "testbed_diff", "real_diff")]
    if any(v is None for v in vals):
        return ""
    th, rh, td, rd = (v * scale for v in vals)
    fig = lambda v, sign="": f"{v:{sign}.0f}" if abs(v) >= 1000 else f"{v:{sign}.1f}"  # noqa: E731
    return f"host {fig(th)} / {fig(rh)} {unit}, mode {fig(td, '+')} / {fig(rd, '+')} {unit}"
