"""`edgebench warehouse` and `edgebench summary`: the warehouse's comparisons as tables in the terminal."""

from __future__ import annotations

import typer
from rich.table import Table

from edgebench.console import out


def register(app: typer.Typer) -> None:
    app.command()(warehouse)
    app.command()(summary)


def warehouse(summary: bool = typer.Option(True, "--summary/--no-summary", help="Print the throughput summary.")):
    """Build the DuckDB warehouse (dbt) from the raw results in MinIO, then print a summary."""
    from edgebench.results import warehouse as wh

    wh.build()
    if summary:
        _print_summary(wh.iperf3_summary())
        _print_latency_summaries(wh.dds_summary(), wh.http_summary())


def _print_summary(rows: list[dict]) -> None:
    if not rows:
        out.print("the warehouse has no iperf3 runs yet")
        return

    def num(v, fmt="{:.0f}"):
        return "-" if v is None else fmt.format(v)

    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        key = (r["substrate"], r["distribution"], r["netem_scenario"], r["tuning_profile"], r["protocol"], r["path"],
               r["placement"], r["length_bytes"])
        groups.setdefault(key, []).append(r)
    for (substrate, dist, netem, tuning, proto, path, placement, length), group in groups.items():
        t = Table(title=f"iperf3 {proto} {path} {placement}, {length} B "
                        f"(substrate={substrate}, distribution={dist}, netem={netem}, tuning={tuning})",
                  title_justify="left")
        for col, right in (("CNI:mode", False), ("runs", True), ("Mbit/s", True), ("±95% CI", True),
                           ("overhead vs host %", True), ("verdict", False), ("note", False)):
            t.add_column(col, justify="right" if right else "left", no_wrap=col != "note")
        for r in group:
            runs = f"{r['n_ok']}" + (f" (+{r['n_failed']} failed)" if r["n_failed"] else "")
            note = (r["error"] or "").split(" (")[0] if not r["n_ok"] else ""
            t.add_row(f"{r['cni']}:{r['cni_mode']}", runs, num(r["throughput_mbps"]),
                      num(r["throughput_ci95_mbps"]), num(r["overhead_pct"], "{:+.1f}"),
                      r["verdict"] if r["n_ok"] else "-", note)
        out.print(t)
    out.print("overhead vs host = (host - CNI) / host; positive = slower than the host network. verdict: better / "
              "worse when the 95% intervals of CNI and host do not overlap, else indistinguishable. substrate=local "
              "measures the kernel datapath each CNI configures, not the CNI itself.")


def summary():
    """Print the throughput summary from the warehouse (no rebuild)."""
    from edgebench.results import warehouse as wh

    _print_summary(wh.iperf3_summary())
    _print_latency_summaries(wh.dds_summary(), wh.http_summary())


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

    common = ["substrate", "distribution", "netem_scenario", "tuning_profile"]
    tables(dds, common + ["reliability", "transport", "placement", "security", "length_bytes"],
           lambda k: (f"DDS latency (RTT/2), {k['length_bytes']} B {k['reliability']} {k['transport']} {k['placement']}"
                      f" security={k['security']} (substrate={k['substrate']}, netem={k['netem_scenario']}, "
                      f"tuning={k['tuning_profile']})"),
           [("runs", "n_runs", "{}"), ("p50 us", "latency_p50_us", "{:.1f}"), ("p90 us", "latency_p90_us", "{:.1f}"),
            ("±95% CI", "latency_p90_ci95_us", "{:.1f}"), ("p99 us", "latency_p99_us", "{:.1f}"),
            ("p90 overhead vs host %", "latency_p90_overhead_pct", "{:+.1f}"), ("verdict", "verdict", "{}")])
    tables(http, common + ["service", "path", "placement", "length_bytes"],
           lambda k: (f"HTTP {k['service']}, {k['length_bytes']} B {k['path']} {k['placement']} (substrate="
                      f"{k['substrate']}, netem={k['netem_scenario']}, tuning={k['tuning_profile']})"),
           [("runs", "n_runs", "{}"), ("requests", "n_requests", "{}"), ("errors", "n_errors", "{}"),
            ("p50 ms", "response_p50_ms", "{:.3f}"), ("±95% CI", "response_p50_ci95_ms", "{:.3f}"),
            ("p90 ms", "response_p90_ms", "{:.3f}"), ("p50 overhead vs host %", "response_p50_overhead_pct", "{:+.1f}"),
            ("verdict (p50)", "verdict", "{}")])
