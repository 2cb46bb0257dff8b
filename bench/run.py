"""`make bench`: every benchmark part in one run, printed as one table and written as JSON under .edgebench/bench/.

Each figure is a ratio (or a time) measured side by side in this run: this machine is noisy and absolute times mean
little. A row that misses its target says so; the exit code is 0 whatever the rows say (2 for bad arguments).

    python bench/run.py [--only fidelity,overhead,ebpf,warehouse,portal] [--quick]
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the parts import bench/common.py as `common`

from common import Row  # noqa: E402

PARTS = ("fidelity", "overhead", "ebpf", "warehouse", "portal", "verdicts", "httpduet", "engine", "emulation")
# opt-in: verdicts (two sweeps, ~10 min), engine (the e2e cluster up: make e2e-argo KEEP=1), emulation (reads a lab's
# runs from the warehouse: make lab-local first)
DEFAULT = ("fidelity", "overhead", "ebpf", "warehouse", "portal")
REPO = Path(__file__).resolve().parents[1]


def machine() -> dict:
    model = ""
    try:
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    except OSError:
        pass
    mem_kb = 0
    try:
        mem_kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                          if line.startswith("MemTotal")))
    except (OSError, StopIteration, ValueError):
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "memory_gib": round(mem_kb / 2 ** 20, 1),
            "kernel": platform.release(), "python": platform.python_version(), "load_avg": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(DEFAULT),
                    help=f"comma-separated parts to run, in this order: {', '.join(PARTS)} (default: "
                         f"{', '.join(DEFAULT)}; verdicts, engine and emulation are opt-in)")
    ap.add_argument("--quick", action="store_true", help="the smallest sizes (development; figures are rough)")
    ap.add_argument("--out", type=Path, default=REPO / ".edgebench" / "bench",
                    help="directory for the JSON report (default .edgebench/bench/)")
    a = ap.parse_args(argv)
    parts = [p.strip() for p in a.only.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        print(f"bench: unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}", file=sys.stderr)
        return 2

    rows: list[Row] = []
    started = time.time()
    for part in parts:
        print(f"== {part} ==", flush=True)
        t0 = time.time()
        try:
            rows += importlib.import_module(f"bench_{part}").run(quick=a.quick)
        except Exception as exc:  # a part that breaks is reported as a row, the others still run
            traceback.print_exc()
            rows.append(Row(part, f"{part}: the benchmark itself failed", None, "", "", False,
                            f"{type(exc).__name__}: {exc}"))
        print(f"   ({time.time() - t0:.0f} s)", flush=True)

    report = {"started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
              "seconds": round(time.time() - started, 1), "quick": a.quick, "machine": machine(),
              "rows": [r.as_dict() for r in rows]}
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / f"bench-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(started))}.json"
    path.write_text(json.dumps(report, indent=2, default=str))
    print_table(rows)
    m = report["machine"]
    print(f"machine: {m['cpus']} x {m['cpu_model'] or '?'}, {m['memory_gib']} GiB, kernel {m['kernel']}; "
          f"load average at the end {m['load_avg'][0]:.2f}")
    print(f"report: {path}")
    return 0


def print_table(rows: list[Row]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="edgebench benchmarks (ratios measured side by side in this run)", title_justify="left")
    for col, right in (("part", False), ("benchmark", False), ("value", True), ("target", False), ("", False),
                       ("measured", False)):
        t.add_column(col, justify="right" if right else "left", overflow="fold")
    for r in rows:
        value = "-" if r.value is None else (f"{r.value:.3f}" if r.unit == "ratio" else f"{r.value:.2f} {r.unit}")
        verdict = ("[yellow]" + r.verdict + "[/]") if r.verdict else \
            {True: "[green]meets[/]", False: "[bold red]MISSES[/]", None: "-"}[r.ok]
        t.add_row(r.part, r.name, value, r.target, verdict, r.detail)
    Console(width=max(160, Console().width)).print(t)


if __name__ == "__main__":
    sys.exit(main())
