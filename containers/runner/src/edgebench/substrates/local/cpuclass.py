"""CPU classes on the local testbed (catalog/cpu_classes.yaml): every process of a node and its pods runs in one
cgroup per node, pinned to one core of this machine (cpuset) with a CPU bandwidth quota calibrated so that the core
delivers the class's published single-thread benchmark score.

    edgebench-<prefix>-n<i>   node i's cgroup (i = 1 .. nodes, as the testbed's namespaces): cgroup v2 `cpu.max` + `cpuset.cpus` in the unified hierarchy, or
                              on cgroup v1 the same name in the `cpu` (cpu.cfs_quota_us / cpu.cfs_period_us) and
                              `cpuset` (cpuset.cpus, cpuset.mems) hierarchies
    edgebench-<prefix>-cal    the calibration cgroup (the same core, no quota), removed after calibrating

A process enters a node's cgroup through `wrap(argv)`: a shell writes its own PID into the cgroups' cgroup.procs
and execs argv (`ip netns exec ...`), so the tools and everything they start are inside from their first
instruction. Nothing is assumed: a machine without a cpu and cpuset controller, without sysbench, or whose core is
not faster than the class raises Unsupported with the reason. `remove(prefix)` deletes every cgroup with the prefix
(moving stragglers to the parent first), so it also cleans up after a killed run.
"""
from __future__ import annotations

import os
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebench import sh
from edgebench.plan import catalog as _catalog
from edgebench.substrates.base import Unsupported

CGROUP_ROOT = Path(os.environ.get("EDGEBENCH_CGROUP_ROOT", "/sys/fs/cgroup"))
CALIBRATION_RUNS = 3
CALIBRATION_SECONDS = 1
REFINE_ABOVE = 0.03  # a first quota missing the target by more than 3 % is corrected once
NAME = "edgebench-{prefix}-{node}"
FIELD = "cpu_class"  # the cell dimension (plan/dimensions.py) whose value install() applies, and the state's key
NONE = "none"  # its neutral value: the machine's own cores, no cgroup


def catalog() -> dict:
    """{"benchmark": {...}, "period_us": int, "classes": {name: {label, board_cores, score, source}}}."""
    return _catalog.load("cpu_classes.yaml")


def class_names() -> list[str]:
    return list(catalog()["classes"])


@dataclass(frozen=True)
class Hierarchy:
    """Where the cpu and cpuset controllers live: v2 = one unified directory, v1 = two hierarchies."""

    version: int
    cpu: Path      # directory under which a node's cpu cgroup is created
    cpuset: Path   # same for cpuset (== cpu on v2)

    def dirs(self, name: str) -> list[Path]:
        return [self.cpu / name] if self.version == 2 else [self.cpu / name, self.cpuset / name]


def detect(root: Path = CGROUP_ROOT) -> Hierarchy:
    """The cgroup hierarchy with the cpu and cpuset controllers; Unsupported (with what was found) otherwise."""
    controllers = root / "cgroup.controllers"
    if controllers.is_file():  # cgroup v2 mounted at the root
        have = set(controllers.read_text().split())
        if {"cpu", "cpuset"} <= have:
            return Hierarchy(2, root, root)
        raise Unsupported(f"cgroup v2 at {root} lacks the {' and '.join(sorted({'cpu', 'cpuset'} - have))} "
                          "controller: CPU classes need cpu.max and cpuset.cpus")
    cpu, cpuset = root / "cpu", root / "cpuset"
    if (cpu / "cpu.cfs_quota_us").is_file() and (cpuset / "cpuset.cpus").is_file():
        return Hierarchy(1, cpu, cpuset)
    raise Unsupported(f"no cgroup cpu and cpuset controllers under {root} (neither cgroup v2 with cpu and cpuset "
                      "nor cgroup v1 cpu/ and cpuset/ hierarchies): CPU classes cannot be enforced")


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise Unsupported(f"cannot write {value!r} to {path}: {exc.strerror or exc}") from exc


def create(h: Hierarchy, name: str, cpu: int, quota_us: int | None, period_us: int) -> list[Path]:
    """The cgroup `name` pinned to `cpu` with the quota (None = no limit); returns its directories."""
    if h.version == 2:
        for ctl in ("+cpu", "+cpuset"):
            sub = (h.cpu / "cgroup.subtree_control")
            if ctl[1:] not in sub.read_text().split():
                _write(sub, ctl)
    dirs = h.dirs(name)
    for d in dirs:
        d.mkdir(exist_ok=True)
    if h.version == 2:
        _write(dirs[0] / "cpuset.cpus", str(cpu))
        _write(dirs[0] / "cpu.max", f"{quota_us if quota_us else 'max'} {period_us}")
    else:
        _write(dirs[1] / "cpuset.cpus", str(cpu))
        _write(dirs[1] / "cpuset.mems", (h.cpuset / "cpuset.mems").read_text().strip() or "0")
        _write(dirs[0] / "cpu.cfs_period_us", str(period_us))
        _write(dirs[0] / "cpu.cfs_quota_us", str(quota_us if quota_us else -1))
    return dirs


def wrap(dirs: list[Path], argv: list[str]) -> list[str]:
    """argv, started inside the cgroups: the shell moves itself in, then execs argv (children inherit)."""
    if not dirs:
        return list(argv)
    script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
    return ["sh", "-c", script, "cgroup-enter", *(str(d / "cgroup.procs") for d in dirs), "--", *sh.resolved(argv)]


def remove(prefix: str, root: Path = CGROUP_ROOT) -> list[str]:
    """Delete every edgebench-<prefix>-* cgroup (processes still inside are moved to the parent first); the names
    removed. Nothing to do without the controllers."""
    try:
        h = detect(root)
    except Unsupported:
        return []
    pattern = NAME.format(prefix=prefix, node="*")
    removed = [name for base in {h.cpu, h.cpuset} for name in remove_matching(base, pattern)]
    return sorted(set(removed))


def remove_matching(base: Path, pattern: str) -> list[str]:
    """Delete every cgroup directly under `base` whose name matches the glob `pattern`, its processes moved to
    `base` first; the names removed (one still busy stays, unnamed)."""
    removed = []
    for d in sorted(base.glob(pattern)):
        if not d.is_dir():
            continue
        for pid in (d / "cgroup.procs").read_text().split():
            try:
                (base / "cgroup.procs").write_text(pid)
            except OSError:
                pass  # already gone
        try:
            d.rmdir()
            removed.append(d.name)
        except OSError:
            pass
    return removed


def benchmark_argv(seconds: int) -> list[str]:
    return [a.replace("{seconds}", str(seconds)) for a in catalog()["benchmark"]["argv"]]


def run_benchmark(dirs: list[Path], seconds: int = CALIBRATION_SECONDS, runs: int = CALIBRATION_RUNS) -> float:
    """Median events/s of `runs` benchmark runs inside the cgroups."""
    scores = []
    for _ in range(runs):
        proc = sh.call(wrap(dirs, benchmark_argv(seconds)), capture_output=True, text=True)
        m = re.search(r"events per second:\s*([0-9.]+)", proc.stdout)
        if proc.returncode != 0 or not m:
            raise Unsupported(f"the CPU benchmark failed (exit {proc.returncode}): "
                              f"{(proc.stderr or proc.stdout).strip()[-300:]}")
        scores.append(float(m.group(1)))
    return statistics.median(scores)


def benchmark_available() -> str | None:
    """None when the benchmark tool is there, else why not."""
    b = catalog()["benchmark"]
    if sh.which(b["tool"]) is None:
        return f"{b['tool']} is not installed (the CPU classes are calibrated with it; `make setup` installs it)"
    out = sh.call([b["tool"], "--version"], capture_output=True, text=True).stdout
    if b["version"] not in out:
        return f"{b['tool']} {out.strip()} is not {b['version']}, the version the published figures were measured with"
    return None


def node_cpu(node: int) -> int:
    """The core node `node` (1-based) is pinned to: nodes take the allowed cores in turn."""
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[(node - 1) % len(allowed)]


def setup(prefix: str, nodes: int, name: str, root: Path = CGROUP_ROOT) -> dict:
    """Create and calibrate the cgroups of `nodes` nodes for class `name`; returns the record every run's manifest
    carries (per node: core, this machine's score on it, quota, the score achieved inside). Unsupported, with
    nothing left behind, when the class cannot be emulated here."""
    cls = catalog()["classes"].get(name)
    if cls is None:
        raise Unsupported(f"unknown CPU class {name!r}: one of {', '.join(class_names())}")
    h = detect(root)
    if why := benchmark_available():
        raise Unsupported(why)
    period = int(catalog()["period_us"])
    target = float(cls["score"])
    record = {"class": name, "label": cls["label"], "benchmark": catalog()["benchmark"]["id"],
              "published_score": target, "source": cls["source"], "cgroup_version": h.version,
              "period_us": period, "nodes": []}
    try:
        for node in range(1, nodes + 1):
            cpu = node_cpu(node)
            cal = create(h, NAME.format(prefix=prefix, node="cal"), cpu, None, period)
            host_score = run_benchmark(cal)
            for d in cal:
                d.rmdir()
            fraction = target / host_score
            if fraction >= 1:
                raise Unsupported(f"CPU class {name} ({cls['label']}, {target:g} {catalog()['benchmark']['unit']}) is "
                                  f"not slower than core {cpu} of this machine ({host_score:.0f}): a quota can only "
                                  "slow a core down")
            quota = max(1000, round(period * fraction))  # the kernel's minimum quota is 1 ms
            name_n = NAME.format(prefix=prefix, node=f"n{node}")
            dirs = create(h, name_n, cpu, quota, period)
            achieved = run_benchmark(dirs)
            if abs(achieved - target) / target > REFINE_ABOVE:  # one correction: the quota's effect is not linear
                quota = min(period, max(1000, round(quota * target / achieved)))
                dirs = create(h, name_n, cpu, quota, period)
                achieved = run_benchmark(dirs)
            record["nodes"].append({"node": node, "cpu": cpu, "host_score": round(host_score, 2),
                                    "quota_us": quota, "fraction": round(quota / period, 4),
                                    "achieved_score": round(achieved, 2),
                                    "error_pct": round((achieved - target) / target * 100, 1),
                                    "cgroups": [str(d) for d in dirs]})
    except BaseException:
        remove(prefix, root)
        raise
    return record


def install(testbed: Any, name: str) -> dict | None:
    """Put every node of `testbed` under CPU class `name`: cgroups created and calibrated (setup), the record every
    run's manifest carries; None for none. Unsupported, with the testbed torn down, when the class cannot be emulated
    here. testbed.cpu_limit says which class its endpoints start in (node_cgroups)."""
    testbed.cpu_limit = name
    if name == NONE:
        return None
    try:
        return setup(testbed.prefix, testbed.nodes, name)
    except BaseException:
        testbed.down()
        raise


def node_cgroups(prefix: str, node: int) -> tuple[str, ...]:
    """The cgroup directories node `node` of testbed `prefix` runs in (found by name: later phase processes, e.g.
    Argo's, did not create them)."""
    return tuple(str(d) for d in detect().dirs(NAME.format(prefix=prefix, node=f"n{node}")))


def node_dirs(record: dict | None, node: int) -> list[Path]:
    """The cgroup directories of `node` in a setup() record (none without a class)."""
    if not record:
        return []
    return [Path(p) for n in record["nodes"] if n["node"] == node for p in n["cgroups"]]
