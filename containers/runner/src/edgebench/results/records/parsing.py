"""Tool outputs -> records, for `edgebench parse` and `edgebench import`.

Every tool format (workloads.TOOLS) has a driver's pure `parse(text) -> {"tool", "metrics", "samples"}`
(drivers/protocol.py Record): `metrics` is the run manifest's `metrics` object and `samples` the per-sample rows of
the workload's raw JSON file (dds-samples.json, http-requests.json), in the warehouse's field names and units
(docs/results-layout.md). A driver raises its own EdgebenchError for anything it cannot read; this module turns that
into one line naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench import workloads
from edgebench.errors import EdgebenchError, SpecError

MAX_BYTES = 256 * 1024 * 1024  # a tool output bigger than this is not one run's output

# the one tool registry, workloads.TOOLS (each workload declares the tool formats it reads), as `edgebench parse
# --help` lists it
TOOLS = workloads.TOOLS


class ParseFailure(SpecError):
    """One input file could not be read as the tool's output (exit 2; the message names the file)."""


def read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ParseFailure(f"{path}: {size} bytes is not one run's tool output (limit {MAX_BYTES})")
        data = path.read_bytes()
    except FileNotFoundError:
        raise ParseFailure(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ParseFailure(f"{path}: is a directory, not a tool output") from None
    except OSError as exc:
        raise ParseFailure(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseFailure(f"{path}: not text (invalid UTF-8 at byte {exc.start})") from None


def parse_text(tool: str, text: str, source: str, **options: Any) -> dict[str, Any]:
    """{"file", "tool", "workload", "metrics", "samples"} or ParseFailure naming `source`."""
    fmt = workloads.tool_format(tool)
    try:
        record = fmt.parse(text, **options)
    except EdgebenchError as exc:
        raise ParseFailure(f"{source}: not a valid {tool} output: {_one_line(exc)}") from None
    except RecursionError:
        raise ParseFailure(f"{source}: not a valid {tool} output: nested too deeply") from None
    return {"file": source, "tool": record.get("tool", tool), "workload": workloads.for_tool(tool).name,
            "metrics": record["metrics"], "samples": record.get("samples") or []}


def parse_file(tool: str, path: Path, **options: Any) -> dict[str, Any]:
    return parse_text(tool, read_text(path), str(path), **options)


def parse_files(tool: str, paths: list[Path], **options: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """(records of the files that parsed, one message per file that did not)."""
    workloads.tool_format(tool)
    records, problems = [], []
    for path in paths:
        try:
            records.append(parse_file(tool, path, **options))
        except ParseFailure as exc:
            problems.append(str(exc))
    return records, problems


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."
