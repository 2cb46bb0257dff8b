"""Re-capture the fortio access-log fixtures in this directory (needs root and fortio v1.66.5 from `make setup`).

Two network namespaces (ht-cap-c, ht-cap-s) joined by a veth pair; `fortio server` (http.server_cmd) in one,
`fortio load` with the driver's own command line (http.load_cmd) in the other. Each case writes <name>.jsonl (the
access log: fortio's stdout) and <name>.log (fortio's report on stderr). The namespaces and the server are removed
at the end, also on failure.

    sudo .venv/bin/python tests/data/http/capture.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "containers" / "runner" / "src"))

from edgebench.drivers import http  # noqa: E402

C, S = "ht-cap-c", "ht-cap-s"
C_IP, S_IP, PORT = "10.197.0.1", "10.197.0.2", 18080
VERSION = "1.66.5"
# (file name, target address, service, payload bytes, requests, path override)
CASES = [
    ("echo-60B", S_IP, "payload-echo", 60, 40, None),
    ("echo-1MiB", S_IP, "payload-echo", 1048576, 40, None),
    ("recv-100KiB", S_IP, "payload-recv", 102400, 40, None),
    ("static-1000B", S_IP, "static-reply", 0, 40, None),
    ("conn-refused", C_IP, "payload-echo", 60, 3, None),  # nothing listens on the client's own address
    ("status-503", S_IP, "static-reply", 0, 3, "/echo?status=503"),
]


def ns(name: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", name, *argv]


def delete() -> None:
    for name in (C, S):
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def main() -> None:
    delete()
    srv = None
    try:
        for argv in (["ip", "netns", "add", C], ["ip", "netns", "add", S],
                     ["ip", "link", "add", "htcap-c", "netns", C, "type", "veth", "peer", "name", "htcap-s",
                      "netns", S],
                     ["ip", "-n", C, "addr", "add", f"{C_IP}/24", "dev", "htcap-c"],
                     ["ip", "-n", S, "addr", "add", f"{S_IP}/24", "dev", "htcap-s"],
                     ["ip", "-n", C, "link", "set", "htcap-c", "up"], ["ip", "-n", S, "link", "set", "htcap-s", "up"],
                     ["ip", "-n", C, "link", "set", "lo", "up"], ["ip", "-n", S, "link", "set", "lo", "up"]):
            subprocess.run(argv, check=True, capture_output=True)
        work = Path(tempfile.mkdtemp(prefix="ht-cap-"))
        srv = subprocess.Popen(ns(S, *http.server_cmd(PORT)), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                               cwd=work)
        for _ in range(200):
            if subprocess.run(ns(S, "ss", "-Hltn", f"sport = :{PORT}"), capture_output=True, text=True).stdout:
                break
            time.sleep(0.05)
        for name, target, service, size, requests, path_override in CASES:
            method, path, body = http.request_plan(service, size)
            body_file = None
            if method != "GET":
                body_file = work / f"{name}.bin"
                body_file.write_bytes(os.urandom(body))
            url = f"http://{target}:{PORT}{path_override or path}"
            argv = http.load_cmd(url, method, body_file and str(body_file), requests, http.reply_bytes(service, size))
            out = subprocess.run(ns(C, *argv), capture_output=True, timeout=120)
            if out.returncode != 0:
                raise SystemExit(f"{name}: fortio load exited {out.returncode}: {out.stderr.decode()[-500:]}")
            (HERE / f"fortio-{VERSION}-{name}.jsonl").write_bytes(out.stdout)
            (HERE / f"fortio-{VERSION}-{name}.log").write_bytes(out.stderr)
            print(name, len(out.stdout.splitlines()), "lines")
    finally:
        if srv is not None:
            srv.terminate()
            srv.wait(timeout=10)
        delete()


if __name__ == "__main__":
    main()
