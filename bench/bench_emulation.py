"""Benchmark part "emulation" (opt-in: `make bench ONLY=emulation`): does the testbed's answer hold on real CNIs?

It measures nothing itself. It reads the warehouse (`$EDGEBENCH_WAREHOUSE` or .edgebench/warehouse.duckdb) after a
real lab and the testbed ran the same cells side by side (`make lab-local`: the testbed sweep runs right after the
lab's, on the same machine), and reports issue 43's bar per real lab and metric, as `edgebench report --emulation`
and the portal's Emulation page say it (results/report/emulation.py, over cmp_emulation_overhead: each substrate's
CNI mode against its OWN host, both verdicts by the one rule):

  decided on both substrates, of the comparisons        share   >= 0.60
  the same verdict, of those decided on both            share   >= 0.90
  overhead gap testbed - real, median |points|          pts     <= 10
  CNI order, Kendall's tau-b (mean over configurations) tau     >= 0.8 (with its 95% interval in the detail)

and the same four over all metrics of a lab. Without a lab's runs in the warehouse each row says so (value none).
`python bench/bench_emulation.py [--warehouse PATH]` runs it alone.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row  # noqa: E402

from edgebench.results.report import emulation as emu  # noqa: E402


def _rows_of(f: dict, label: str) -> list[Row]:
    """The four rows of one `emulation.fare` (a lab's metric, or all its metrics)."""
    n, decided, agree, gap, tau = (f["comparisons"], f["decided_both"], f["agree"], f["median_gap_pts"],
                                   f["kendall_tau"])
    ci = f", 95% half-width {f['kendall_tau_ci95']:.2f}" if f.get("kendall_tau_ci95") is not None else ""
    return [
        Row("emulation", f"{label}: decided on both substrates", decided / n if n else None, "share",
            f">= {emu.DECIDED_GOAL:.2f}", (decided / n >= emu.DECIDED_GOAL) if n else None,
            f"{decided} of {n} comparisons (each substrate's CNI mode against its own host)"),
        Row("emulation", f"{label}: the same verdict where both decide", agree / decided if decided else None, "share",
            f">= {emu.AGREE_GOAL:.2f}", (agree / decided >= emu.AGREE_GOAL) if decided else None,
            f"{agree} of {decided}"),
        Row("emulation", f"{label}: overhead gap testbed - real, median", gap, "pts",
            f"<= {emu.GAP_GOAL_PTS:.0f}", (gap <= emu.GAP_GOAL_PTS) if gap is not None else None,
            f"|points| over {n} comparisons" + (f", largest {f['max_gap_pts']:.1f}" if gap is not None else "")),
        Row("emulation", f"{label}: CNI order, Kendall's tau", tau, "tau", f">= {emu.TAU_GOAL}",
            (tau >= emu.TAU_GOAL) if tau is not None else None, f"over {f['configs_ranked']} configuration(s){ci}"),
    ]


def run(quick: bool = False, warehouse: str | None = None) -> list[Row]:
    from edgebench.results.report import marts
    from edgebench.results.report.marts import reports

    try:
        rows = reports.emulation_overhead(marts.path_fetcher(warehouse))
    except Exception as exc:  # no warehouse built yet
        return [Row("emulation", "testbed against a real lab", None, "share", "-", None,
                    f"not measured: the warehouse cannot be read ({str(exc).splitlines()[0]})")]
    if not rows:
        return [Row("emulation", "testbed against a real lab", None, "share", "-", None,
                    "not measured: no CNI mode in the warehouse was measured on the testbed and on a real lab under "
                    "the same conditions (make lab-local runs both)")]
    out: list[Row] = []
    for lab in sorted({r["real_lab"] for r in rows}):
        out += [row for f in emu.fared([r for r in rows if r["real_lab"] == lab])
                for row in _rows_of(f, f"{lab}, {f['workload']} {f['metric']}")]
        out += _rows_of(emu.fare([r for r in rows if r["real_lab"] == lab]), f"{lab}, all metrics")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", help="warehouse file (default $EDGEBENCH_WAREHOUSE or .edgebench/warehouse.duckdb)")
    a = ap.parse_args()
    for r in run(warehouse=a.warehouse):
        v = "-" if r.value is None else f"{r.value:.3f}"
        ok = {True: "meets", False: "MISSES", None: ""}[r.ok]
        print(f"{r.name}: {v} {r.unit} (target {r.target}) {ok}  {r.detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
