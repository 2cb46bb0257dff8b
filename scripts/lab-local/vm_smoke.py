"""The stock kernel's modes checked between two running VM nodes (vm.py smoke A B): modprobe, then a geneve,
wireguard, ipip and ESP tunnel and netem delay, each checked by a ping; a JSON report."""
from __future__ import annotations

import json
import re
import shlex
import subprocess

from vm_common import lab_dir, log, node_of, ssh_argv

# ---- the stock kernel's modes, checked between two VM nodes --------------------------------------------------------

def smoke_steps(a: str, b: str) -> list[tuple[str, list[tuple[str, str]], str, list[tuple[str, str]]]]:
    """(mode, setup commands as (node, shell), the check on node A, teardown) of each mode between the nodes with
    addresses a and b ("A"/"B" name the node). Every setup command runs with sudo on its node."""
    xfrm_key = "0x" + "11" * 20  # rfc4106(gcm(aes)): 16-byte key + 4-byte salt
    def esp(src: str, dst: str, spi: str) -> str:
        return (f"ip xfrm state add src {src} dst {dst} proto esp spi {spi} mode transport "
                f"aead 'rfc4106(gcm(aes))' {xfrm_key} 128")
    return [
        ("geneve", [("A", f"ip link add ebgnv0 type geneve id 77 remote {b} && ip addr add 192.168.77.1/24 dev ebgnv0 "
                          "&& ip link set ebgnv0 up"),
                    ("B", f"ip link add ebgnv0 type geneve id 77 remote {a} && ip addr add 192.168.77.2/24 dev ebgnv0 "
                          "&& ip link set ebgnv0 up")],
         "ping -c 3 -W 3 192.168.77.2",
         [("A", "ip link del ebgnv0"), ("B", "ip link del ebgnv0")]),
        ("wireguard", [("A", "umask 077 && wg genkey > /run/eb-wg.key && wg pubkey < /run/eb-wg.key > /run/eb-wg.pub"),
                       ("B", "umask 077 && wg genkey > /run/eb-wg.key && wg pubkey < /run/eb-wg.key > /run/eb-wg.pub"),
                       ("A", "ip link add ebwg0 type wireguard && ip addr add 192.168.78.1/24 dev ebwg0 && "
                             "wg set ebwg0 listen-port 51820 private-key /run/eb-wg.key && ip link set ebwg0 up"),
                       ("B", "ip link add ebwg0 type wireguard && ip addr add 192.168.78.2/24 dev ebwg0 && "
                             "wg set ebwg0 listen-port 51820 private-key /run/eb-wg.key && ip link set ebwg0 up"),
                       ("A", f"wg set ebwg0 peer PUB_B allowed-ips 192.168.78.2/32 endpoint {b}:51820"),
                       ("B", f"wg set ebwg0 peer PUB_A allowed-ips 192.168.78.1/32 endpoint {a}:51820")],
         "ping -c 3 -W 3 192.168.78.2 && wg show ebwg0 latest-handshakes",
         [("A", "ip link del ebwg0; rm -f /run/eb-wg.*"), ("B", "ip link del ebwg0; rm -f /run/eb-wg.*")]),
        ("ipip", [("A", f"ip link add ebipip0 type ipip local {a} remote {b} && "
                        "ip addr add 192.168.79.1/24 dev ebipip0 && ip link set ebipip0 up"),
                  ("B", f"ip link add ebipip0 type ipip local {b} remote {a} && "
                        "ip addr add 192.168.79.2/24 dev ebipip0 && ip link set ebipip0 up")],
         "ping -c 3 -W 3 192.168.79.2",
         [("A", "ip link del ebipip0"), ("B", "ip link del ebipip0")]),
        ("esp", [(n, f"{esp(a, b, '0x1001')} && {esp(b, a, '0x1002')} && "
                     f"ip xfrm policy add src {a}/32 dst {b}/32 dir {d1} tmpl src {a} dst {b} proto esp mode transport "
                     f"&& ip xfrm policy add src {b}/32 dst {a}/32 dir {d2} tmpl src {b} dst {a} proto esp mode "
                     "transport") for n, d1, d2 in (("A", "out", "in"), ("B", "in", "out"))],
         f"ping -c 3 -W 3 {b} && ip -s xfrm state get src {a} dst {b} proto esp spi 0x1001",
         [(n, f"ip xfrm policy delete src {a}/32 dst {b}/32 dir {d1}; ip xfrm policy delete src {b}/32 dst {a}/32 "
              f"dir {d2}; ip xfrm state delete src {a} dst {b} proto esp spi 0x1001; "
              f"ip xfrm state delete src {b} dst {a} proto esp spi 0x1002")
          for n, d1, d2 in (("A", "out", "in"), ("B", "in", "out"))]),
        ("netem", [("A", "tc qdisc add dev eth0 root netem delay 10ms")],
         f"ping -c 10 -i 0.3 -W 3 {b} && tc qdisc show dev eth0",
         [("A", "tc qdisc del dev eth0 root")]),
    ]


def rtt(ping_out: str) -> tuple[float, float] | None:
    """ping's summary line 'rtt min/avg/max/mdev = 0.4/0.5/0.7/0.1 ms' -> (0.4, 0.5): min and mean"""
    m = re.search(r"= ([\d.]+)/([\d.]+)/[\d.]+/[\d.]+ ms", ping_out)
    return (float(m.group(1)), float(m.group(2))) if m else None


def smoke(name_a: str, name_b: str) -> dict:
    """modprobe of the modules this machine's kernel lacks, then each mode between two VM nodes: works (with the
    ping's mean RTT) or the exact error."""
    lab = lab_dir()
    na, nb = node_of(name_a), node_of(name_b)
    addr = {"A": na.address, "B": nb.address}

    def sh(who: str, cmd: str, timeout: int = 120) -> subprocess.CompletedProcess:
        return subprocess.run(ssh_argv(lab, addr[who], "sudo", "-n", "sh", "-c", shlex.quote(cmd), timeout=10),
                              capture_output=True, text=True, timeout=timeout)

    report: dict = {"a": name_a, "b": name_b, "kernel": sh("A", "uname -r").stdout.strip(), "modules": {},
                    "modes": {}}
    for m in ("wireguard", "geneve", "ipip", "esp4", "xfrm_user", "sch_netem"):
        r = sh("A", f"modprobe {m}")
        report["modules"][m] = "ok" if r.returncode == 0 else (r.stderr.strip() or f"exit {r.returncode}")
    base = rtt(sh("A", f"ping -c 10 -i 0.3 -W 3 {addr['B']}").stdout)
    report["baseline_rtt_ms"] = {"min": base[0], "mean": base[1]} if base else None
    pubs = {}
    for mode, setup, check, teardown in smoke_steps(addr["A"], addr["B"]):
        entry: dict = {}
        for who, cmd in setup:
            cmd = cmd.replace("PUB_A", pubs.get("A", "")).replace("PUB_B", pubs.get("B", ""))
            r = sh(who, cmd)
            if r.returncode:
                entry = {"result": "fails", "step": f"{who}: {cmd}", "error": (r.stderr or r.stdout).strip()}
                break
            if mode == "wireguard" and "wg pubkey" in cmd:
                pubs[who] = sh(who, "cat /run/eb-wg.pub").stdout.strip()
        if not entry:
            r = sh("A", check)
            if r.returncode:
                entry = {"result": "fails", "step": f"A: {check}", "error": (r.stderr or r.stdout).strip()[-300:]}
            else:
                got = rtt(r.stdout)
                entry = {"result": "works", "rtt_ms": {"min": got[0], "mean": got[1]} if got else None}
                # every packet A sends waits 10 ms in netem: the fastest round trip is at least that (the emulated
                # CPUs' jitter makes the means of a few pings incomparable)
                if mode == "netem" and (got is None or got[0] < 10.0):
                    entry = {"result": "fails", "error": f"with netem delay 10ms the fastest ping took {got and got[0]} "
                                                         f"ms (< 10): {r.stdout.strip()[-200:]}"}
                elif mode == "netem":
                    entry["qdisc"] = r.stdout.strip().splitlines()[-1]
                if mode == "esp" and not re.search(r"\d+\(bytes\), [1-9]\d*\(packets\)", r.stdout):
                    entry = {"result": "fails", "error": "the ping answered but the ESP state counted no packets: "
                                                         + r.stdout.strip()[-200:]}
        for who, cmd in teardown:
            sh(who, cmd)
        report["modes"][mode] = entry
        log(f"smoke {mode}: {json.dumps(entry)}")
    return report


