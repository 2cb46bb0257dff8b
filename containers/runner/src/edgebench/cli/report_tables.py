"""The tables of `edgebench report --emulation`, `--efficiency`, `--paper` and `--support` (cli/report.py runs
the command)."""

from __future__ import annotations

import math

from rich.markup import escape
from rich.table import Table

from edgebench.console import out
from edgebench.results.report import emulation as emu
from edgebench.results.report import papers, scorecard
from edgebench.results.report.marts.support import support_table
from edgebench.results.report.verdict import describe


def num(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.4g}" if abs(v) < 1000 else f"{v:.0f}"


def print_emulation(rows: list[dict]) -> None:
    if not rows:
        out.print("No CNI mode has been measured both on the testbed and on a real cluster under the same conditions "
                  "yet: `make lab-local` measures both.")
        return
    t = Table(title="Emulation vs real: testbed / real cluster (ratio of means, 95% CI; model holds within +-10%)")
    for c in ("real lab", "CNI", "workload", "metric", "path", "size", "n tb/real", "testbed", "real", "ratio [95% CI]",
              "verdict"):
        t.add_column(c)
    for r in rows:
        verdict = r["verdict"]
        if verdict == "model differs":
            verdict = f"model differs by {r['difference_pct']:+.1f}%"
        elif verdict == "inconclusive" and r.get("runs_to_decide"):
            verdict = f"inconclusive (about {r['runs_to_decide']} more runs per side would decide)"
        t.add_row(r.get("real_lab") or "", f"{r['cni']}:{r['cni_mode']}", r["workload"] + ("" if r["protocol"] in (None, "http") else f" {r['protocol']}"),
                  r["metric"], f"{r['path']} {r['placement']}", num(r["length_bytes"]),
                  f"{r['testbed_n']}/{r['real_n']}", f"{r['testbed_mean']:.4g}", f"{r['real_mean']:.4g}",
                  f"{r['ratio']:.3f} [{num(r['ratio_ci_low'])}-{num(r['ratio_ci_high'])}]", verdict)
    out.print(t)


def print_normalized(rows: list[dict]) -> None:
    """cmp_emulation_overhead: each substrate's CNI against its own host, side by side, and how the testbed fared."""
    if not rows:
        return
    t = Table(title="Emulation vs real, each against its own host: overhead % [95% CI] and verdict (the vs-host marts)")
    for c in ("real lab", "CNI", "workload", "configuration", "n tb/real", "testbed", "real", "gap (pts)", "agree",
              "host, mode - host (tb / real)"):
        t.add_column(c)
    for r in rows:
        side = lambda p: (f"{r[p + '_overhead_pct']:+.1f}% [+-{num(r[p + '_overhead_ci95_pct'])}] "  # noqa: E731
                          f"{r[p + '_verdict']}")
        t.add_row(r["real_lab"], f"{r['cni']}:{r['cni_mode']}", f"{r['workload']} {r['metric']}", r["config"],
                  f"{r['testbed_n']}/{r['real_n']}", side("testbed"), side("real"), f"{r['overhead_gap_pts']:+.1f}",
                  {True: "yes", False: "NO"}.get(r["verdicts_agree"], "not both decided"), emu.added(r))
    out.print(t)
    for f in emu.fared(rows):
        out.print("  " + emu.sentence(f), highlight=False)


def print_efficiency(rows: list[dict]) -> None:
    if not rows:
        out.print("No run with a rate (iperf3, DDS throughput) and resource samples yet: `make sweep` or "
                  "`make lab-local` measures both.")
        return
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["substrate"], r["distribution"], r["netem_scenario"], r["tuning_profile"],
                           r["component"]), []).append(r)
    for (substrate, dist, netem, tuning, comp), part in groups.items():
        cond = ", ".join(str(v) for v in (dist, netem, tuning) if v not in (None, "none", "default"))
        t = Table(title=f"CPU efficiency, {comp} component: substrate {substrate}" + (f" ({cond})" if cond else "")
                  + " - % of one CPU per unit of rate, mean of per-run ratios [95% CI]")
        for c in ("workload", "path", "size", "CNI", "n", "rate", "CPU / unit", "host (n)", "CNI / host", "verdict"):
            t.add_column(c)
        for r in part:
            ci = r["cpu_per_unit_ci95_pct"]
            host = r["host_cpu_per_unit_pct"]
            ratio = r["cpu_per_unit_vs_host"]
            t.add_row(r["workload"] + ("" if r["protocol"] is None else f" {r['protocol']}"),
                      f"{r['path']} {r['placement']}", num(r["length_bytes"]), f"{r['cni']}:{r['cni_mode']}",
                      str(r["n_runs"]), f"{r['rate']:.3g} {r['rate_unit']}",
                      f"{r['cpu_per_unit_pct']:.3g}" + (f" +-{ci:.2g}" if ci is not None else ""),
                      "-" if host is None else f"{host:.3g} ({r['host_n_runs']})",
                      "-" if ratio is None or r["cni"] == "host" else f"{ratio:.2f}",
                      "-" if r["verdict"] in (None, "baseline") else describe(
                          r["verdict"], None if ratio is None else (ratio - 1) * 100, None, r["n_runs"],
                          r["host_n_runs"], r["verdict_margin_pct"], r["runs_to_decide"]))
        out.print(t)
    out.print("CPU / unit: the component's CPU during the run (sum over its processes; system = the whole machine) "
              "divided by the run's rate, per run, then averaged. verdict: CPU per unit against the host, less is better, by "
              "the one rule (docs/verdicts.md). On the "
              "local lab the nodes share this machine's cores: the system component includes everything else running.",
              highlight=False)


METRIC_WORDS = {"throughput_mbps": "throughput", "latency_p90_us": "p90 latency", "latency_p50_us": "p50 latency",
                "response_time_ms": "response time", "response_p50_ms": "p50 response time",
                "throughput_efficiency_pct": "efficiency", "memory_used_mb": "memory", "cpu_pct": "CPU"}


def _digits(r: dict) -> int:
    """Decimals of a counterpart: two for a ratio, one for a percentage."""
    return 2 if r.get("unit") == "ratio" else 1


def print_scorecard(rows: list[dict]) -> None:
    """The reproduction scorecard: one row per paper and substrate, then what would decide each claim we cannot
    tell."""
    t = Table(title="Reproduction scorecard (claims judged by the one verdict rule, per substrate; never pooled)",
              title_justify="left")
    for col in ("paper", "substrate", "agrees", "disagrees", "cannot tell", "not testable", "decided",
                "numbers: printed / comparable / measured"):
        t.add_column(col, justify="left" if col in ("paper", "substrate") else "right")
    for r in rows:
        share = "-" if r["decided_share"] is None else f"{r['decided']}/{r['testable']} ({r['decided_share']:.0%})"
        t.add_row(f"seed {r['paper']}", r["substrate"] or "nothing measured", str(r["agrees"]), str(r["disagrees"]),
                  str(r["cannot tell"]), str(r["not testable"]), share,
                  f"{r['numbers_printed']} / {r['numbers_comparable']} / {r['numbers_measured']}")
    out.print(t)
    for tot in scorecard.totals(rows):
        share = "-" if tot["decided_share"] is None else f"{tot['decided_share']:.0%}"
        out.print(f"  all papers on {tot['substrate']}: {tot['decided']} of {tot['testable']} testable claims decided "
                  f"({share})", highlight=False)
    out.print("  decided: agrees or disagrees, of the claims edgebench can test. numbers: what the paper prints / how "
              "many edgebench measures in the same unit and normalization / how many of those this substrate has "
              "measured. `edgebench report --paper ID` shows one paper's numbers and claims.", highlight=False)
    for r in {r["paper"]: r for r in rows}.values():  # the same on every substrate: one line per paper
        out.print(f"  seed {r['paper']} numbers explained: {_explained(r)}", highlight=False)
    for r in rows:
        for u in r["cannot_tell"]:
            out.print(f"  seed {r['paper']} {r['substrate'] or '-'} {u['claim_id']}: {u['to_decide']}", highlight=False)


def _explained(r: dict) -> str:
    """'18 of 18 (100%): 10 with a counterpart, 8 with a reason stated for the number' (a scorecard row)."""
    share = "" if r["numbers_explained_share"] is None else f" ({r['numbers_explained_share']:.0%})"
    return (f"{r['numbers_explained']} of {r['numbers_printed']}{share}: {r['numbers_comparable']} with a counterpart, "
            f"{r['numbers_explained'] - r['numbers_comparable']} with a reason stated for the number")


OUTCOME_STYLE = {"agrees": "green", "disagrees": "bold red", "cannot tell": "yellow", "not testable": "dim"}


def print_paper(rep: dict) -> None:
    """The paper report as terminal tables: the paper, what each substrate is, the numbers, the claims."""
    out.print(f"[bold]seed {rep['paper']}[/]: {rep['authors']}, \"{rep['title']}\"", highlight=False)
    out.print(f"  {rep['about']}", highlight=False)
    if not rep["substrates"]:
        out.print(f"  nothing measured for this paper yet. {papers.run_hint(rep['paper'])}", highlight=False)
    for sub, note in rep["substrate_notes"].items():
        out.print(f"  substrate {sub}: {note}", highlight=False)
    if rep["numbers"]:
        t = Table(title="Published numbers beside ours (same unit and normalization)", title_justify="left")
        for col, right in (("source", False), ("subject", False), ("payload", True), ("published", True),
                           ("substrate", False), ("ours [95% CI]", True), ("n / baseline n", True),
                           ("verdict", False), ("ours are", False), ("conditions", False)):
            t.add_column(col, justify="right" if right else "left")
        for r in rep["numbers"]:
            ours = "-" if r["ours"] is None else f"{r['ours']:.{_digits(r)}f}" + (
                f" [{r['ours'] - r['ours_ci95']:.{_digits(r)}f}, {r['ours'] + r['ours_ci95']:.{_digits(r)}f}]"
                if r["ours_ci95"] is not None else " (n < 2)")
            mode = ":".join(x for x in (r["cni"], r["cni_mode"]) if x)
            t.add_row(f"{r['source']} ({METRIC_WORDS.get(r['metric'], r['metric'])})",
                      r["label"] + (f" ({mode})" if mode else ""),
                      "-" if r["payload_bytes"] is None else f"{r['payload_bytes']} B", r["published"],
                      r["substrate"] or "-", ours if r["ours"] is None else f"{ours} {r['unit']}",
                      f"{r['n_runs'] or 0}/{r['host_n_runs'] or 0}", r["verdict"] or "-",
                      r["ours_are"] + (f" ({r['against']})" if r.get("against") else ""), r["conditions"])
        out.print(t)
        out.print("  ours are: what our figure is (overhead % vs host: throughput (host - cni) / host, latency (cni - "
                  "host) / host, positive = worse than host; a pair: left against the baseline named). CI: Welch's "
                  "95% interval of the difference over the baseline mean. verdict: the one rule on that comparison "
                  "(the CNI against the host, multicast against unicast, one tool against the other).",
                  highlight=False)
    if rep["published_only"]:
        out.print(f"  {len(rep['published_only'])} other published number(s) have no counterpart measured the same way "
                  "(absolute values on the paper's hardware, statements over several subjects); --json lists them "
                  "with the reason.", highlight=False)
    t = Table(title="Claims", title_justify="left")
    for col in ("claim", "substrate", "outcome", "statement", "evidence"):
        t.add_column(col, no_wrap=col in ("claim", "outcome"))
    for c in rep["claims"]:
        style = OUTCOME_STYLE.get(c["outcome"])
        t.add_row(c["claim_id"], c["substrate"] or "-", f"[{style}]{c['outcome']}[/]" if style else c["outcome"],
                  c["claim"], c["detail"])
    out.print(t)
    tally = rep["claim_outcomes"]
    out.print(f"  {len(rep['claims'])} claim row(s): " + ", ".join(f"{v} {k}" for k, v in tally.items()) + ". "
              "Each comparison is judged by the one verdict rule on left - right (Welch's 95% interval, the margin): "
              "agrees when left is better or worse beyond the margin as claimed (within the tolerance for ~), "
              "disagrees when the other way or equivalent, cannot tell when inconclusive or a side has fewer than 2 "
              "runs.", highlight=False)


def print_support(matrix: dict) -> None:
    """`report --support`: the functional matrix, CNI mode x node kind (results/report/marts/support.py)."""
    rows = support_table(matrix)
    t = Table(title="Functional support: CNI mode x node kind (works / fails / unsupported / never tried)",
              title_justify="left", show_lines=True)
    for col in rows[0] if rows else ["CNI mode"]:
        t.add_column(col, no_wrap=col == "CNI mode", overflow="fold")
    style = {"works": "green", "fails": "red", "unsupported": "yellow"}
    for r in rows:
        cells = [r["CNI mode"]]
        for col, text in r.items():
            if col != "CNI mode":
                word = text.split(" ")[0].rstrip(":")
                cells.append(f"[{style[word]}]{escape(text)}[/]" if word in style else escape(text))
        t.add_row(*cells)
    out.print(t)
    c = matrix["counts"]
    out.print(f"{len(rows)} CNI modes x {len(matrix['columns'])} node kinds: {c['works']} works, {c['fails']} fails, "
              f"{c['unsupported']} unsupported, {c['never tried']} never tried. Works = an ok run (n ok of all runs, "
              "the sweeps); fails / unsupported = the latest run's error. Runs on emulated CPUs (VM nodes) count "
              "here only, never in a performance comparison.", highlight=False)
