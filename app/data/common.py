"""What the pages' query modules share: the warehouse connection, banners, filters, colours. Plain Python (no
Streamlit): every query takes a DuckDB connection (opened read-only by connect()) and returns pandas DataFrames or
plain values; the selections (a page's substrate and conditions) are edgebench.results.report.marts.Choices."""
from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

import altair as alt
import duckdb
import pandas as pd

from edgebench.plan.dimensions import DIMENSIONS
from edgebench.results import follow
from edgebench.results.report.marts import where_in
from edgebench.sweep.progress import duration

REPO = Path(__file__).resolve().parents[2]

LOCAL_BANNER = ("substrate = local: network-namespace testbed measuring the kernel datapath each CNI configures, "
                "not the CNI's control plane")
MISSING_WAREHOUSE = "No warehouse yet at `{path}`: no results exist yet. Run `make sweep` to measure and build it."

LAB_BANNER = ("This lab's nodes share one kernel and this machine's cores (the local lab of `make lab-local`): real CNI "
              "agents, kubelets and kube-proxy, but every node a set of namespaces of one machine, linked by veth pairs, "
              "not wires. Read it as this machine, never as a Pi lab; the two are never pooled.")
# The lab a run was measured on (staging: the testbed, kind, or a real cluster's inventory target), the first filter
# of every page after the substrate: two labs of one substrate (a Pi lab, the local lab) are never pooled
LAB_FILTER = {"lab": "Lab"}
# The cell dimensions the pages filter on (edgebench/plan/dimensions.py, `filter_label`): column -> label
DIMENSION_FILTERS = {d.warehouse_column: d.filter_label for d in DIMENSIONS if d.filter_label}
# Conditions a comparison holds fixed (besides substrate), in display order: column -> label
FILTERS = {
    **LAB_FILTER,
    "protocol": "Protocol",
    "path": "Path",
    "placement": "Placement",
    "length_bytes": "Length (bytes)",
    "distribution": "Distribution",
    **DIMENSION_FILTERS,
}


# How a comparison's baseline looks on every page (the host network against CNIs, the one-cluster `none` against
# inter-cluster tools): grey marks, listed first.
BASELINE_COLOR = "#7f7f7f"
# Vega's default categorical palette (tableau10) without its grey (the baseline's) and its red (limits and KPI
# boundaries are drawn in red), for the series compared against the baseline
SERIES_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#72b7b2", "#eeca3b", "#9d755d", "#ff9da6"]


def baseline_color(flag_field: str, other: str) -> alt.condition:
    """Color encoding for marks of one series: the baseline's (datum[flag_field] true) in BASELINE_COLOR."""
    return alt.condition(f"datum.{flag_field}", alt.value(BASELINE_COLOR), alt.value(other))


def baseline_scale(labels: list[str], baseline_label: str) -> alt.Scale:
    """Color scale for several series: the baseline's label in BASELINE_COLOR, the others in palette order."""
    others = iter(SERIES_COLORS * (len(labels) // len(SERIES_COLORS) + 1))
    return alt.Scale(domain=labels, range=[BASELINE_COLOR if label == baseline_label else next(others)
                                           for label in labels])


def live_status(path: Path, now: float | None = None) -> dict | None:
    """What `edgebench warehouse --follow` last wrote next to the warehouse (results/follow.py: when it looked and
    built, the sweeps in progress), if it is following now (written within three intervals, at least 10 s, and not
    its last word on dying)."""
    live = follow.live_path(path)
    try:
        doc = json.loads(live.read_text())
        updated = dt.datetime.fromisoformat(doc["updated_at"]).timestamp()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    now = time.time() if now is None else now
    if doc.get("stopped"):  # the follower died (its last word): not following
        return None
    return doc if now - updated <= max(10.0, 3 * float(doc.get("interval_s") or 2)) else None


def follower_gone(path: Path, now: float | None = None) -> str | None:
    """Why the portal is not following the store when a follower was (its live file is there but stale, or says it
    stopped on an error): one sentence for the sidebar; None if it follows, or none was started."""
    if live_status(path, now) is not None:
        return None
    try:
        doc = json.loads(follow.live_path(path).read_text())
        updated = dt.datetime.fromisoformat(doc["updated_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    why = doc.get("stopped") or "its follower stopped answering"
    return (f"Not following the store since {updated:%H:%M:%S} UTC ({why}): new runs are not shown. "
            "`make portal` starts the follower again (or `edgebench warehouse --follow`).")


def eta_text(seconds: float | None) -> str:
    return "ETA unknown" if seconds is None else f"ETA {duration(seconds)}"  # the CLI's progress line's format


def warehouse_path() -> Path:
    return Path(os.environ.get("EDGEBENCH_WAREHOUSE") or REPO / ".edgebench" / "warehouse.duckdb")


def connect(path: str | Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(path), read_only=True)


def shared_kernel_labs(con) -> list[str]:
    """The labs whose nodes share one kernel (environment.cluster.shared_kernel: the local lab)."""
    return [r[0] for r in con.execute("select distinct lab from fct_runs where lab_shared_kernel "
                                      "order by lab").fetchall()]


def invalid_runs(con, substrate: str, **filters) -> pd.DataFrame:
    """Runs whose readback did not match what was requested (is_valid = false), any workload, with the reason.
    They stay in the fct_* marts but are kept out of every comparison. filters: distribution, netem_scenario,
    tuning_profile, lab (None = any)."""
    where, params = where_in(substrate, filters, {**LAB_FILTER, "distribution": "", "netem_scenario": "",
                                                   "tuning_profile": ""})
    return con.execute(f"""
        select workload, cni, cni_mode, netem_scenario, tuning_profile, protocol, path, placement, length_bytes,
               repetition, status, invalid_reason, sweep_id, run_id, started_at
        from fct_runs where not is_valid and {where}
        order by workload, cni, cni_mode, netem_scenario, tuning_profile, repetition""", params).df()
