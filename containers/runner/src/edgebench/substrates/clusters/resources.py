"""Resource sampling on a real cluster's nodes, over SSH: the CPU and RSS of the CNI agents (flanneld,
kube-router, cilium-agent, ...), of the workload tools running in pods, and each node's whole-system CPU and
memory, in the `resources.json` sample format of the local testbed (substrates/local/resources.py; cpu_pct is
percent of one CPU).

One `sh` loop per node reads /proc every interval (no agent is installed on the node) and prints a block; the
runner turns consecutive blocks into deltas. Nodes that share one kernel (the same /proc/sys/kernel/random/boot_id,
as the local lab's do) also share /proc/stat: their system row is sampled once, named `system@<first node>`, so
the machine is not counted once per node."""

from __future__ import annotations

import subprocess
import threading
import time
from typing import Any

from edgebench import sh
from edgebench.substrates.clusters.inventory import Inventory, Node

# comm (as /proc/<pid>/comm spells it, at most 15 characters) -> component
PROCESSES = {"flanneld": "cni", "kube-router": "cni", "cilium-agent": "cni", "calico-node": "cni",
             "antrea-agent": "cni", "weaver": "cni", "iperf3": "workload", "ddsperf": "workload", "sockperf": "workload",
             "fortio": "workload", "edgebench-ddsrr": "workload"}

SCRIPT = r"""
echo "B $(cat /proc/sys/kernel/random/boot_id) $(getconf CLK_TCK) $(nproc)"
while :; do
  read -r up _ < /proc/uptime
  echo "T $up"
  head -1 /proc/stat
  awk '/^MemTotal:/ {t = $2} /^MemAvailable:/ {a = $2} END {print "M", t, a}' /proc/meminfo
  for d in /proc/[0-9]*; do
    read -r c < "$d/comm" 2>/dev/null || continue
    case " @NAMES@ " in *" $c "*) ;; *) continue ;; esac
    s=$(sed 's/^.*) //' "$d/stat" 2>/dev/null) || continue
    set -- $s
    [ $# -gt 20 ] || continue
    r=$(awk '/^VmRSS:/ {print $2}' "$d/status" 2>/dev/null)
    echo "P $c ${d#/proc/} $(( ${12} + ${13} )) ${r:-0}"
  done
  echo E
  sleep @INTERVAL@
done
"""


def script(interval_s: float) -> str:
    return SCRIPT.replace("@NAMES@", " ".join(PROCESSES)).replace("@INTERVAL@", str(interval_s))


def parse_block(lines: list[str]) -> dict[str, Any]:
    """One block of the node loop: {'up': s, 'busy': j, 'total': j, 'mem_used_mb': x, 'procs': {(comm, pid): (ticks, rss_kb)}}."""
    out: dict[str, Any] = {"procs": {}}
    for line in lines:
        f = line.split()
        if not f:
            continue
        if f[0] == "T":
            out["up"] = float(f[1])
        elif f[0] == "cpu":
            vals = [int(x) for x in f[1:9]]
            idle = vals[3] + vals[4]
            out["total"] = sum(vals)
            out["busy"] = out["total"] - idle
        elif f[0] == "M" and len(f) == 3:
            out["mem_used_mb"] = (int(f[1]) - int(f[2])) / 1024
        elif f[0] == "P" and len(f) == 5:
            out["procs"][(f[1], int(f[2]))] = (int(f[3]), int(f[4]))
    return out


def deltas(prev: dict[str, Any], cur: dict[str, Any], clk: int, ncpu: int, node: str, with_system: bool
           ) -> list[dict[str, Any]]:
    """The samples between two blocks of one node (without t_s / phase)."""
    rows = []
    dt = cur.get("up", 0) - prev.get("up", 0)
    if with_system and "total" in cur and "total" in prev:
        dtot = cur["total"] - prev["total"]
        cpu = 100.0 * ncpu * (cur["busy"] - prev["busy"]) / dtot if dtot > 0 else 0.0
        rows.append({"component": "system", "name": f"system@{node}", "cpu_pct": round(cpu, 2),
                     "rss_mb": round(cur.get("mem_used_mb", 0.0), 2), "cpus": ncpu})
    for (comm, pid), (ticks, rss_kb) in cur["procs"].items():
        if (comm, pid) not in prev["procs"] or dt <= 0:
            continue
        cpu = 100.0 * (ticks - prev["procs"][(comm, pid)][0]) / clk / dt
        rows.append({"component": PROCESSES.get(comm, "workload"), "name": f"{comm}@{node}",
                     "cpu_pct": round(max(cpu, 0.0), 2), "rss_mb": round(rss_kb / 1024, 2)})
    return rows


class NodeSampler:
    """The Sampler interface (start / mark_run / stop) over every node of an inventory."""

    def __init__(self, inventory: Inventory, ssh_argv, interval_s: float = 1.0, idle: list[dict] | None = None):
        self.inventory, self.ssh_argv, self.interval_s = inventory, ssh_argv, interval_s
        self._phase = "idle" if idle is None else "run"
        self._samples = [dict(s) for s in idle or ()]
        self._t_offset = max((s["t_s"] for s in self._samples), default=0.0)
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen] = []
        self._threads: list[threading.Thread] = []
        self._boots: dict[str, str] = {}
        self._t0 = 0.0

    def start(self) -> "NodeSampler":
        self._t0 = time.monotonic()
        for node in self.inventory.nodes:
            argv, stdin = self.ssh_argv(node, script(self.interval_s))
            p = sh.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                     text=True)
            p.stdin.write(stdin or "")
            p.stdin.close()
            self._procs.append(p)
            t = threading.Thread(target=self._read, args=(node, p), daemon=True, name=f"sampler-{node.name}")
            t.start()
            self._threads.append(t)
        return self

    def mark_run(self) -> None:
        with self._lock:
            self._phase = "run"

    def _system_here(self, node: Node, boot: str) -> bool:
        """Whether this node reports the system row: the first node (inventory order) of its kernel. Undecided (no
        row) while a node before it in inventory order has not yet said its boot id: otherwise a node whose first
        block comes before the first node's would report the shared machine too (the lab's runs had system@lab-w1
        and system@lab-w2 rows beside system@lab-cp, summed into the system component)."""
        with self._lock:
            self._boots.setdefault(node.name, boot)
            for n in self.inventory.nodes:
                if n.name == node.name:
                    return True
                known = self._boots.get(n.name)
                if known is None or known == boot:
                    return False
        return True

    def _read(self, node: Node, p: subprocess.Popen) -> None:
        clk, ncpu, boot, prev, block = 100, 1, "", None, []
        for line in p.stdout:
            line = line.strip()
            if line.startswith("B "):
                f = line.split()
                boot, clk, ncpu = f[1], int(f[2]), int(f[3])
                continue
            if line != "E":
                block.append(line)
                continue
            cur, block = parse_block(block), []
            if prev is not None:
                t_s = round(self._t_offset + time.monotonic() - self._t0, 3)
                rows = deltas(prev, cur, clk, ncpu, node.name, self._system_here(node, boot))
                with self._lock:
                    self._samples += [{"t_s": t_s, "phase": self._phase, **r} for r in rows]
            prev = cur

    def stop(self) -> list[dict]:
        for p in self._procs:
            p.terminate()
        for p in self._procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        for t in self._threads:
            t.join(timeout=5)
        with self._lock:
            return sorted(self._samples, key=lambda s: s["t_s"])
