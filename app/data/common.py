"""What the pages' data modules share: the warehouse connection, banners, colours, the follower's status. Plain Python
(no Streamlit). The queries are edgebench.results.report.marts (every one takes the DuckDB connection opened
read-only by connect() and returns pandas DataFrames or plain values); app/data/ shapes their rows into tables and
charts."""
from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

import altair as alt
import duckdb

from edgebench.results.warehouse import follow
from edgebench.sweep.progress import duration

REPO = Path(__file__).resolve().parents[2]

LOCAL_BANNER = ("substrate = local: network-namespace testbed measuring the kernel datapath each CNI configures, "
                "not the CNI's control plane")
MISSING_WAREHOUSE = "No warehouse yet at `{path}`: no results exist yet. Run `make sweep` to measure and build it."

LAB_BANNER = ("This lab's nodes share one kernel and this machine's cores (the local lab of `make lab-local`): real CNI "
              "agents, kubelets and kube-proxy, but every node a set of namespaces of one machine, linked by veth pairs, "
              "not wires. Read it as this machine, never as a Pi lab; the two are never pooled.")

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
    """What `edgebench warehouse --follow` last wrote next to the warehouse (results/warehouse/follow.py: when it looked and
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
