#!/usr/bin/env python3
"""systemctl for a lab node of `make lab-local`: the local lab's nodes are namespaces of one kernel whose PID 1 is
not systemd, yet the provider's steps (the same ones a Pi lab runs) enable and restart containerd and the kubelet
with systemctl. This answers the verbs those steps and kubeadm use, from the same unit files systemd would read:
ExecStartPre/ExecStart, Environment/EnvironmentFile, drop-ins (<unit>.d/*.conf; an empty ExecStart= resets),
Restart/RestartSec. Each started unit gets a supervisor process that restarts it as the unit says.

It is a minimal service supervisor, not systemd: no dependencies, sockets, targets or journal. Logs of a unit go
to /var/log/edgebench-svc/<unit>.log; state to /run/edgebench-svc."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

UNIT_DIRS = [Path(p) for p in ("/etc/systemd/system", "/run/systemd/system", "/lib/systemd/system",
                               "/usr/lib/systemd/system", "/usr/local/lib/systemd/system")]
STATE = Path("/run/edgebench-svc")
LOGS = Path("/var/log/edgebench-svc")
WANTS = Path("/etc/systemd/system/multi-user.target.wants")
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def unit_name(name: str) -> str:
    return name if "." in name else name + ".service"


def unit_files(unit: str) -> list[Path]:
    """The unit file (first found) and its drop-ins, in the order systemd applies them."""
    main = next((d / unit for d in UNIT_DIRS if (d / unit).is_file()), None)
    if main is None:
        return []
    drops: dict[str, Path] = {}
    for d in reversed(UNIT_DIRS):  # a drop-in of the same name in an earlier directory wins
        dd = d / (unit + ".d")
        if dd.is_dir():
            for f in dd.glob("*.conf"):
                drops[f.name] = f
    return [main] + [drops[k] for k in sorted(drops)]


def parse(unit: str) -> dict:
    files = unit_files(unit)
    if not files:
        raise SystemExit(f"Unit {unit} not found.")
    svc: dict = {"ExecStart": [], "ExecStartPre": [], "Environment": {}, "EnvironmentFile": [],
                 "Restart": "no", "RestartSec": "0.1"}
    for f in files:
        section, lines, buf = "", [], ""
        for raw in f.read_text().splitlines():
            if raw.rstrip().endswith("\\"):
                buf += raw.rstrip()[:-1] + " "
                continue
            lines.append(buf + raw)
            buf = ""
        for line in lines:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line
                continue
            if section != "[Service]" or "=" not in line:
                continue
            key, value = (s.strip() for s in line.split("=", 1))
            if key in ("ExecStart", "ExecStartPre"):
                if value == "":
                    svc[key] = []
                else:
                    svc[key].append(value)
            elif key == "Environment":
                for item in shlex.split(value):
                    k, _, v = item.partition("=")
                    svc["Environment"][k] = v
            elif key == "EnvironmentFile":
                svc["EnvironmentFile"].append(value)
            elif key in ("Restart", "RestartSec"):
                svc[key] = value
    return svc


def environment(svc: dict) -> dict[str, str]:
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
    env.update(svc["Environment"])
    for spec in svc["EnvironmentFile"]:
        optional = spec.startswith("-")
        path = Path(spec.lstrip("-"))
        if not path.is_file():
            if optional:
                continue
            raise SystemExit(f"EnvironmentFile {path} is missing")
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            k, _, v = line.partition("=")
            v = v.strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            env[k.strip()] = v
    return env


def command(line: str, env: dict[str, str]) -> tuple[list[str], bool]:
    """argv of an Exec line: $VAR splits into words, ${VAR} stays one word (as systemd does); '-' = may fail."""
    ignore = False
    while line and line[0] in "-@+!:":
        ignore |= line[0] == "-"
        line = line[1:]
    argv: list[str] = []
    for word in shlex.split(line):
        m = re.fullmatch(r"\$(\w+)", word)
        if m:
            argv += env.get(m.group(1), "").split()
        else:  # "$$" is a literal "$", as in systemd
            word = _VAR.sub(lambda mm: env.get(mm.group(1) or mm.group(2), ""), word.replace("$$", "\0"))
            argv.append(word.replace("\0", "$"))
    return argv, ignore


def pid_of(unit: str, kind: str = "sup") -> int | None:
    try:
        pid = int((STATE / f"{unit}.{kind}").read_text())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def supervise(unit: str) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    child: subprocess.Popen | None = None
    stopping = False

    def on_term(_sig, _frm):  # stop the service; the loop below sees `stopping` when it has exited
        nonlocal stopping
        stopping = True
        if child and child.poll() is None:
            child.terminate()
            killer = threading.Timer(10, lambda: child.poll() is None and child.kill())
            killer.daemon = True
            killer.start()

    signal.signal(signal.SIGTERM, on_term)
    with open(LOGS / f"{unit}.log", "ab", buffering=0) as log:
        while not stopping:
            svc = parse(unit)  # re-read on every (re)start, so a changed drop-in applies
            env = environment(svc)
            for pre in svc["ExecStartPre"]:
                argv, ignore = command(pre, env)
                rc = subprocess.call(argv, env=env, stdout=log, stderr=log)
                if rc and not ignore:
                    log.write(f"edgebench-svc: ExecStartPre {argv} failed ({rc})\n".encode())
            if not svc["ExecStart"]:
                log.write(b"edgebench-svc: no ExecStart\n")
                break
            argv, _ = command(svc["ExecStart"][-1], env)
            log.write(f"edgebench-svc: start {' '.join(argv)}\n".encode())
            child = subprocess.Popen(argv, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
            if stopping:  # the stop arrived while this start was under way: on_term saw the previous child
                child.terminate()
            (STATE / f"{unit}.pid").write_text(str(child.pid))
            rc = child.wait()
            if stopping:
                break
            log.write(f"edgebench-svc: {unit} exited ({rc})\n".encode())
            policy = svc["Restart"]
            if policy in ("always",) or (policy in ("on-failure", "on-abnormal") and rc != 0):
                time.sleep(float(re.sub(r"[^0-9.]", "", svc["RestartSec"]) or 0.1))
                continue  # a stop during the pause: the loop condition ends it
            break
    (STATE / f"{unit}.pid").unlink(missing_ok=True)
    (STATE / f"{unit}.sup").unlink(missing_ok=True)


def start(unit: str) -> None:
    if pid_of(unit):
        return
    parse(unit)  # a missing unit fails here, in the caller
    STATE.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "__supervise", unit],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    (STATE / f"{unit}.sup").write_text(str(proc.pid))
    time.sleep(0.3)


def stop(unit: str) -> None:
    pid = pid_of(unit)
    if not pid:
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(150):
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def main(args: list[str]) -> int:
    flags = {a for a in args if a.startswith("-")}
    words = [a for a in args if not a.startswith("-")]
    if not words:
        print("usage: systemctl VERB [UNIT...]  (edgebench lab: a minimal service supervisor, not systemd)",
              file=sys.stderr)
        return 1
    verb, units = words[0], [unit_name(u) for u in words[1:]]
    if verb == "__supervise":
        supervise(units[0])
        return 0
    if verb in ("daemon-reload", "reset-failed", "mask", "unmask", "daemon-reexec"):
        return 0
    if verb == "enable":
        WANTS.mkdir(parents=True, exist_ok=True)
        for u in units:
            parse(u)
            (WANTS / u).touch()
            if "--now" in flags:
                start(u)
        return 0
    if verb == "disable":
        for u in units:
            (WANTS / u).unlink(missing_ok=True)
            if "--now" in flags:
                stop(u)
        return 0
    if verb == "start":
        for u in units:
            start(u)
        return 0
    if verb == "stop":
        for u in units:
            stop(u)
        return 0
    if verb in ("restart", "try-restart", "reload-or-restart"):
        for u in units:
            stop(u)
            start(u)
        return 0
    if verb == "is-active":
        active = all(pid_of(u) for u in units)
        if "--quiet" not in flags and "-q" not in flags:
            print("active" if active else "inactive")
        return 0 if active else 3
    if verb == "is-enabled":
        enabled = all((WANTS / u).exists() for u in units)
        if "--quiet" not in flags and "-q" not in flags:
            print("enabled" if enabled else "disabled")
        return 0 if enabled else 1
    if verb == "status":
        rc = 0
        for u in units:
            pid = pid_of(u, "pid")
            print(f"* {u} - {'active (running), main PID ' + str(pid) if pid_of(u) else 'inactive (dead)'}")
            rc = rc or (0 if pid_of(u) else 3)
        return rc
    print(f"systemctl: {verb!r} is not supported on an edgebench lab node (a minimal service supervisor)",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
