"""`edgebench warehouse` and `edgebench summary`: the warehouse's comparisons as tables in the terminal."""

from __future__ import annotations

import typer
from rich.table import Table

from edgebench.console import out
from edgebench.results.warehouse import follow as follow_mod
from edgebench.results.report.marts import summaries
from edgebench.results.report.verdict import CPU_HEADROOM_FLOOR_PCT, describe
from edgebench.results import warehouse as wh
from edgebench.results.report.labels import intercluster_label


def register(app: typer.Typer) -> None:
    app.command()(warehouse)
    app.command()(summary)


def warehouse(summary: bool = typer.Option(True, "--summary/--no-summary", help="Print the throughput summary."),
              follow: bool = typer.Option(False, "--follow", help="Keep the warehouse in step with running sweeps: "
                                          "rebuild it (incrementally) whenever runs are stored, and write "
                                          "<warehouse>.live.json, the progress the portal shows; until Ctrl-C. "
                                          "`make portal` runs it beside the portal."),
              interval: float = typer.Option(2.0, "--interval", min=0.5, help="With --follow: seconds between looks "
                                             "at the raw store.")):
    """Build the DuckDB warehouse (dbt) from the raw results in MinIO, then print a summary."""

    if follow:
        try:
            n = follow_mod.follow(interval=interval, log=lambda m: out.print(m, highlight=False))
        except KeyboardInterrupt:
            n = None
        out.print("stopped following" + (f" after {n} build(s)" if n is not None else ""))
        return
    wh.build()
    if summary:
        _print_summary(summaries.iperf3_summary())
        _print_latency_summaries(summaries.dds_summary(), summaries.http_summary())
        _print_intercluster_summary(summaries.intercluster_summary(), quiet_if_empty=True)


VERDICT_NOTE = ("verdict: the one rule of edgebench (docs/verdicts.md): equivalent when the whole 95% interval of the "
                "difference lies within the margin (±5 % of the baseline by default), better / worse by x % [95% CI] "
                "when it excludes 0 and reaches beyond the margin, else inconclusive with about how many more runs "
                "per side would decide; n = runs of the configuration / of the baseline; k low CPU = runs during "
                f"which, in some second, less than {CPU_HEADROOM_FLOOR_PCT:g} % of the machine's CPU was idle (kept "
                "in, counted: the machine, not the datapath, may have set their pace).")


def verdict_text(r: dict, diff_pct: float | None, ci_pct: float | None, n_a: int | None, n_b: int | None) -> str:
    """A summary row's verdict as one phrase (results.report.verdict.describe); baseline / no baseline as they are."""
    v = r.get("verdict")
    if v in (None, "baseline", "no baseline"):
        return v or "-"
    return describe(v, diff_pct, ci_pct, n_a, n_b, r.get("verdict_margin_pct"), r.get("runs_to_decide"))


def low_headroom(r: dict) -> str:
    """' (k low CPU)' when k of the row's runs had less idle CPU than the floor in some second (docs/verdicts.md,
    CPU headroom), else ''."""
    return f" ({r['n_low_headroom']} low CPU)" if r.get("n_low_headroom") else ""


def _print_summary(rows: list[dict]) -> None:
    if not rows:
        out.print("the warehouse has no iperf3 runs yet")
        return

    def num(v, fmt="{:.0f}"):
        return "-" if v is None else fmt.format(v)

    groups: dict[tuple, list[dict]] = {}
    # one table per configuration of the summary's grain (the mart's) without the network: a CNI mode has one row
    keys = tuple(k for k in summaries.SUMMARY_KEYS if k not in ("cni", "cni_mode", "datapath"))
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    for key, group in groups.items():
        c = dict(zip(keys, key))
        extra = "".join(f", {label}={c[k]}" for k, label in (("lab", "lab"), ("cpu_class", "cpu-class"),
                                                             ("iperf3_bitrate", "bitrate"))
                        if c.get(k) not in (None, "none", "testbed"))
        t = Table(title=f"iperf3 {c['protocol']} {c['path']} {c['placement']}, {c['length_bytes']} B, "
                        f"{c['duration_s']} s runs (substrate={c['substrate']}, distribution={c['distribution']}, "
                        f"netem={c['netem_scenario']}, tuning={c['tuning_profile']}{extra})",
                  title_justify="left")
        for col, right in (("CNI:mode", False), ("runs", True), ("Mbit/s", True), ("±95% CI", True),
                           ("overhead vs host %", True), ("verdict", False), ("note", False)):
            t.add_column(col, justify="right" if right else "left", no_wrap=col not in ("note", "verdict"))
        for r in group:
            runs = f"{r['n_ok']}" + (f" (+{r['n_failed']} failed)" if r["n_failed"] else "") + (
                f" (+{r['n_invalid']} invalid)" if r.get("n_invalid") else "") + low_headroom(r)
            note = (r["error"] or "").split(" (")[0] if not r["n_ok"] else ""
            diff = None if r["overhead_pct"] is None else -r["overhead_pct"]
            t.add_row(f"{r['cni']}:{r['cni_mode']}", runs, num(r["throughput_mbps"]),
                      num(r["throughput_ci95_mbps"]), num(r["overhead_pct"], "{:+.1f}"),
                      verdict_text(r, diff, r.get("overhead_ci95_pct"), r["n_ok"], r.get("host_n_runs"))
                      if r["n_ok"] else "-", note)
        out.print(t)
    out.print("overhead vs host = (host - CNI) / host; positive = slower than the host network. " + VERDICT_NOTE
              + " substrate=local measures the kernel datapath each CNI configures, not the CNI itself.")


SECTIONS = ("all", "answer", "iperf3", "dds", "http", "intercluster")


def summary(section: str = typer.Argument(
        "all", help=f"What to print: {' | '.join(SECTIONS)} (answer: the CNI modes ranked against the host per headline "
                    "metric, with verdicts; intercluster: HTTP across each inter-cluster tool against the same runs "
                    "in one cluster)")):
    """Print the warehouse's comparisons (no rebuild): iperf3 throughput, DDS and HTTP latency vs host, HTTP across
    inter-cluster tools vs none."""

    if section not in SECTIONS:
        raise typer.BadParameter(f"unknown section {section!r}; choices: {', '.join(SECTIONS)}")
    if section == "answer":
        print_answer(summaries.answer())
        return
    if section in ("all", "iperf3"):
        _print_summary(summaries.iperf3_summary())
    if section in ("all", "dds", "http"):
        _print_latency_summaries(summaries.dds_summary() if section != "http" else [],
                                 summaries.http_summary() if section != "dds" else [])
    if section in ("all", "intercluster"):
        _print_intercluster_summary(summaries.intercluster_summary(), quiet_if_empty=section == "all")
    if section == "all":
        print_answer(summaries.answer())


def print_answer(entries: list[dict]) -> None:
    """The answer (results.report.ranking): per substrate and headline metric, the CNI modes ranked against the host with
    the verdict, the difference in % [95% CI] and n, then the sentence."""
    if not entries:
        out.print("no CNI mode has been compared with the host yet")
        return
    for e in entries:
        lab = f", lab={e['lab']}" if e["substrate"] == "ssh" and e.get("lab") else ""
        t = Table(title=f"{e['label']} against the host network, substrate={e['substrate']}{lab}", title_justify="left")
        for col in ("rank", "CNI:mode", f"mean {e['unit']}", "verdict vs host"):
            t.add_column(col, justify="right" if col in ("rank", f"mean {e['unit']}") else "left")
        for i, r in enumerate(e["rows"], 1):
            value = "-" if r["value"] is None else f"{r['value']:,.0f}" if abs(r["value"]) >= 100 else f"{r['value']:.3g}"
            t.add_row(str(i), r["mode"], value, r["text"])
        out.print(t)
        out.print(e["sentence"], highlight=False)


def _print_intercluster_summary(rows: list[dict], quiet_if_empty: bool = False) -> None:
    """One table per HTTP configuration measured across inter-cluster tools: rows per netem scenario and tool, the
    none baseline first; n, mean of per-run medians with its 95% CI, the difference to none with its 95% CI, the
    verdict, and the share of requests beyond the two limits. Emulated tools are labelled as such."""

    if not rows:
        if not quiet_if_empty:
            out.print("the warehouse has no HTTP runs across an inter-cluster tool yet")
        return

    def fmt(v, f="{:.3f}"):
        return "-" if v is None else f.format(v)

    def pct(share):
        return "-" if share is None else f"{share * 100:.1f} %"

    keys = ("substrate", "distribution", "cni", "cni_mode", "tuning_profile", "service", "path", "placement",
            "length_bytes")
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    models: dict[str, str] = {}
    for k, group in groups.items():
        c = dict(zip(keys, k))
        t = Table(title=f"HTTP {c['service']} across clusters, {c['length_bytes']} B {c['path']} {c['placement']} "
                        f"({c['cni']}:{c['cni_mode']}, substrate={c['substrate']}, distribution={c['distribution']}, "
                        f"tuning={c['tuning_profile']})", title_justify="left")
        for col, right in (("netem", False), ("inter-cluster", False), ("runs", True), ("run medians ms", True),
                           ("±95% CI", True), ("p95 ms", True), ("vs none ms", True), ("±95% CI", True),
                           ("vs none %", True), ("verdict", False),
                           (f"> {group[0]['vehicle_assist_limit_ms']:g} ms", True),
                           (f"> {group[0]['remote_maintenance_limit_ms']:g} ms", True)):
            t.add_column(col, justify="right" if right else "left",
                         no_wrap=(not right or col.startswith("vs")) and col != "verdict")
        for r in group:
            label = intercluster_label(r["intercluster"], r["intercluster_implementation"])
            if r["is_emulated"] and r["intercluster_model"]:
                models[label] = r["intercluster_model"]
            t.add_row(r["netem_scenario"], label, str(r["n_runs"]), fmt(r["response_p50_ms"]),
                      fmt(r["response_p50_ci95_ms"]), fmt(r["request_p95_ms"]),
                      fmt(r["response_p50_diff_ms"], "{:+.3f}"), fmt(r["response_p50_diff_ci95_ms"]),
                      fmt(r["response_p50_diff_pct"], "{:+.1f}"),
                      verdict_text(r, r["response_p50_diff_pct"], r["response_p50_diff_ci95_pct"], r["n_runs"],
                                   r["none_n_runs"]),
                      pct(r["share_requests_over_vehicle_assist"]), pct(r["share_requests_over_remote_maintenance"]))
        out.print(t)
    out.print("run medians: mean over runs of each run's median; p95: over every request of the runs, pooled; "
              "vs none = tool - none (positive = slower across the tool) with the 95% CI "
              "of the difference (Welch). " + VERDICT_NOTE + " 'no baseline' without none runs under the same "
              "conditions. > limit: share of requests beyond the vehicle-assist / "
              "remote-maintenance limit (errors count as beyond).")
    for label, model in models.items():
        out.print(f"{label}: a model of the tool's data plane, not the tool. {model}")


def _print_latency_summaries(dds: list[dict], http: list[dict]) -> None:
    """One table per DDS latency and HTTP configuration: CNI mode rows, percentiles, overhead vs host."""
    def fmt(v, f="{:.0f}"):
        return "-" if v is None else f.format(v)

    def tables(rows, keys, title, cols):
        groups: dict[tuple, list[dict]] = {}
        for r in rows:
            groups.setdefault(tuple(r[k] for k in keys), []).append(r)
        for key, group in groups.items():
            t = Table(title=title(dict(zip(keys, key))), title_justify="left")
            t.add_column("CNI:mode")
            for name, _, _ in cols:
                t.add_column(name, justify="right")
            for r in sorted(group, key=lambda r: (r["cni"] != "host", r["cni"], r["cni_mode"])):
                t.add_row(f"{r['cni']}:{r['cni_mode']}", *[fmt(r[c], f) for _, c, f in cols])
            out.print(t)

    dds = [{**r, "runs_text": f"{r['n_runs']}{low_headroom(r)}", "verdict_text": verdict_text(r, r["latency_p90_overhead_pct"], r["latency_p90_overhead_ci95_pct"],
                                              r["n_runs"], r["host_n_runs"])} for r in dds]
    http = [{**r, "runs_text": f"{r['n_runs']}{low_headroom(r)}", "verdict_text": verdict_text(r, r["response_p50_overhead_pct"], r["response_p50_overhead_ci95_pct"],
                                               r["n_runs"], r["host_n_runs"])} for r in http]
    # every column of the marts' grain that varies is in the group key, and in the title unless at its default
    common = ["substrate", "lab", "distribution", "netem_scenario", "tuning_profile", "cpu_class"]

    def conditions(k: dict) -> str:
        extra = "".join(f", {label}={k[c]}" for c, label in (("lab", "lab"), ("cpu_class", "cpu-class"),
                                                             ("rate", "rate"))
                        if k.get(c) not in (None, "none", "testbed", "inf", 0))
        return f"(substrate={k['substrate']}, netem={k['netem_scenario']}, tuning={k['tuning_profile']}{extra})"

    tables(dds, common + ["reliability", "transport", "placement", "security", "batching", "rate", "length_bytes"],
           lambda k: (f"DDS latency (RTT/2), {k['length_bytes']} B {k['reliability']} {k['transport']} {k['placement']}"
                      f" security={k['security']}" + (" batching=off" if k["batching"] == "off" else "") +
                      f" {conditions(k)}"),
           [("runs", "runs_text", "{}"), ("p50 us", "latency_p50_us", "{:.1f}"), ("p90 us", "latency_p90_us", "{:.1f}"),
            ("±95% CI", "latency_p90_ci95_us", "{:.1f}"), ("p99 us", "latency_p99_us", "{:.1f}"),
            ("p90 overhead vs host %", "latency_p90_overhead_pct", "{:+.1f}"), ("verdict (p90)", "verdict_text", "{}")])
    tables(http, common + ["service", "path", "placement", "length_bytes"],
           lambda k: f"HTTP {k['service']}, {k['length_bytes']} B {k['path']} {k['placement']} {conditions(k)}",
           [("runs", "runs_text", "{}"), ("requests", "n_requests", "{}"), ("errors", "n_errors", "{}"),
            ("p50 ms", "response_p50_ms", "{:.3f}"), ("±95% CI", "response_p50_ci95_ms", "{:.3f}"),
            ("p90 ms", "response_p90_ms", "{:.3f}"), ("p50 overhead vs host %", "response_p50_overhead_pct", "{:+.1f}"),
            ("verdict (p50)", "verdict_text", "{}")])
    if dds or http:
        out.print(VERDICT_NOTE)
