"""One CNI cell on lab nodes that include VM nodes (vm.py): the ssh substrate's own provider (kubeadm over SSH from
the lab's artifact mirror, the CNI from its mirrored manifest, the workload pods on every node), then a pod-to-pod
smoke between a pod on NODE_A and a pod on NODE_B (iperf3 TCP for 5 seconds), then the cell's teardown. It
proves that the path works on emulated CPUs, never how fast (TCG is 10-50x slower than the host).

    python scripts/lab-local/vm_cell.py --nodes lab-cp,lab-vx1 --cni flannel:wireguard [--a lab-cp --b lab-vx1]

--nodes picks the nodes of $EDGEBENCH_LAB/inventory.yaml, the first the server (kubeadm init); the mirror must be
served (mirror.sh serve 10.77.0.1). Prints a JSON report: each stage ok with its seconds, or the exact error of the
stage that failed (the later stages are skipped, the teardown always runs); appends it to
~/.local/share/edgebench/lab/vm/cells.jsonl. Exit 1 if a stage failed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from types import SimpleNamespace

import yaml

HERE = Path(__file__).resolve().parent
E2E = Path(os.environ.get("EDGEBENCH_E2E", Path.home() / ".local/share/edgebench/e2e-argo"))
LABC = Path(os.environ.get("EDGEBENCH_LAB_CACHE", Path.home() / ".local/share/edgebench/lab"))


def sub_inventory(text: str, names: list[str]) -> str:
    """The lab's inventory with only `names`, in that order, the first the server and the rest agents."""
    doc = yaml.safe_load(text)
    by_name = {n["name"]: n for n in doc["nodes"]}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise SystemExit(f"vm_cell: error: {', '.join(missing)} not in the lab's inventory (lab.sh up / vm.py up)")
    doc["nodes"] = [dict(by_name[n], role="server" if i == 0 else "agent") for i, n in enumerate(names)]
    return yaml.safe_dump(doc, sort_keys=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="vm_cell.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", required=True, help="comma-separated node names, the first the server")
    ap.add_argument("--cni", required=True, help="CNI:MODE, e.g. flannel:wireguard, flannel:vxlan")
    ap.add_argument("--a", help="the smoke's client node (default: the first agent)")
    ap.add_argument("--b", help="the smoke's server node (default: the server)")
    ap.add_argument("--keep", action="store_true", help="leave the cluster up (no teardown)")
    args = ap.parse_args(argv)
    os.environ["PATH"] = f"{E2E / 'bin'}:{os.environ['PATH']}"  # kubectl of the Kubernetes build
    from edgebench.substrates.clusters.factory import from_cell

    lab = Path(os.environ.get("EDGEBENCH_LAB", "/srv/edgebench-lab"))
    names = args.nodes.split(",")
    cni, _, mode = args.cni.partition(":")
    work = lab / "vm-cell"
    work.mkdir(parents=True, exist_ok=True)
    inv = work / "inventory.yaml"
    inv.write_text(sub_inventory((lab / "inventory.yaml").read_text(), names))
    cell = SimpleNamespace(substrate="ssh", distribution="kubeadm", cni=cni, cni_mode=mode,
                           cell_id=f"vm-{cni}-{mode}", intercluster="none")
    report: dict = {"nodes": names, "cni": args.cni, "stages": {},
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    p = from_cell(cell, work / "cell", inventory_path=str(inv), ssh_key=str(lab / "id_ed25519"),
                  known_hosts=str(lab / "known_hosts"))
    a, b = args.a or (names[1] if len(names) > 1 else names[0]), args.b or names[0]

    def stage(name: str, fn) -> bool:
        t0 = time.monotonic()
        print(f"vm_cell: {name} ...", file=sys.stderr, flush=True)
        try:
            out = fn()
            report["stages"][name] = {"result": "ok", "s": round(time.monotonic() - t0, 1), **(out or {})}
            print(f"vm_cell: {name} ok ({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
            return True
        except BaseException as exc:  # noqa: BLE001 - recorded with its exact text
            err = str(exc).strip() or traceback.format_exc(limit=2)
            report["stages"][name] = {"result": "fails", "s": round(time.monotonic() - t0, 1), "error": err[-1500:]}
            print(f"vm_cell: {name} FAILS: {err[-600:]}", file=sys.stderr, flush=True)
            return False

    def pods() -> dict[str, tuple[str, str]]:
        out = subprocess.run(["kubectl", "--kubeconfig", p.kubeconfig, "get", "pods", "-A", "-l",
                              "edgebench.io/workload=true", "-o", "json"], capture_output=True, text=True, check=True)
        found = {}
        for item in json.loads(out.stdout)["items"]:
            node = item["spec"].get("nodeName", "")
            if node not in found and item["status"].get("podIP"):
                found[node] = (item["metadata"]["namespace"] + "/" + item["metadata"]["name"], item["status"]["podIP"])
        return found

    def smoke() -> dict:
        got = pods()
        if a not in got or b not in got:
            raise RuntimeError(f"no running workload pod on {a if a not in got else b} (pods on: {sorted(got)})")
        (pa, _), (pb, ib) = got[a], got[b]

        def ex(pod: str, *cmd: str, timeout: int = 300) -> str:
            ns, name = pod.split("/")
            r = subprocess.run(["kubectl", "--kubeconfig", p.kubeconfig, "exec", "-n", ns, name, "--", *cmd],
                               capture_output=True, text=True, timeout=timeout)
            if r.returncode:
                raise RuntimeError(f"{pod}: {' '.join(cmd)}: {(r.stderr or r.stdout).strip()[-400:]}")
            return r.stdout
        # (no ping: the runner's pods run as uid 10001 without CAP_NET_RAW, `ping` says "operation not permitted")
        ex(pb, "sh", "-c", "iperf3 -s -D -1 -p 5399")
        time.sleep(2)
        ip = json.loads(ex(pa, "iperf3", "-c", ib, "-p", "5399", "-t", "5", "-J"))
        bps = ip["end"]["sum_received"]["bits_per_second"]
        return {"from": f"{pa} on {a}", "to": f"{pb} on {b} ({ib})", "iperf3_tcp_s": ip["end"]["sum_received"]["seconds"],
                "iperf3_mbit_s": round(bps / 1e6, 1), "note": "emulated CPUs: proves the path, not its speed"}

    ok = stage("provision", p.provision) and stage("install_cni", lambda: {"state": p.install_cni()}) and \
        stage("smoke", smoke)
    if not args.keep:
        stage("teardown", lambda: {"removed": p.teardown()})
    if p.log:
        report["provider_log"] = p.log[-10:]
    print(json.dumps(report, indent=1, default=str))
    (LABC / "vm").mkdir(parents=True, exist_ok=True)
    with open(LABC / "vm" / "cells.jsonl", "a") as f:
        f.write(json.dumps(report, default=str) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
