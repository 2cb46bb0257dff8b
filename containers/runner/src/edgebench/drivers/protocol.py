"""What every driver's parser gives and what a tool format declares (pure data, no tool imported here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypedDict


class Record(TypedDict):
    """One tool output, read: `metrics` is the run manifest's `metrics` object and `samples` the per-sample rows of
    the workload's raw JSON file (dds-samples.json, http-requests.json; [] when it has none), in the warehouse's
    field names and units (docs/results-layout.md)."""

    tool: str
    metrics: dict[str, Any]
    samples: list[dict[str, Any]]


@dataclass(frozen=True)
class ToolFormat:
    """An output format `edgebench parse` and `edgebench import` read. `parse` raises the driver's own
    EdgebenchError for anything it cannot read."""

    tool: str
    parse: Callable[..., Record]
    raw_name: str  # the raw file name an imported output is stored under
    samples_name: str | None  # the raw JSON file of per-sample rows, if the workload has one
    what: str  # one line for --help
