"""Cyclone DDS `ddsperf` driver (workload "dds", see docs/results-layout.md "DDS runs").

The command builders and `cyclone_config` (command.py) and the parsers (scan.py, parser.py) are pure; `measure` runs
the processes in the endpoints' network namespaces. Output formats are those of ddsperf 0.10
(src/tools/ddsperf/ddsperf.c, cputime.c):

  latency (ping side, one line per pong peer, RTT/2):
    [pid] 2.000  host:pid size 64 mean 8.034us min 7.420us 50% 7.701us 90% 8.172us 99% 19.669us max 2140.788us cnt 61859
  throughput (sub side, one line per subscriber process, all publishers summed):
    [pid] 2.001  size 1024 total 254839 lost 0 delta 182491 lost 0 rate 182.48 kS/s 1494.90 Mb/s (25.48 kS/s 208.75 Mb/s)
  own CPU/RSS (threads below 0.5% are left out; rss is the process's *peak* RSS, getrusage maxrss):
    [pid] 2.000  rss:7.6MB vcsw:31640 ivcsw:30251 recvUC:7%+42% ddsperf:0%+1%
  a peer's CPU/RSS (only with -c): same with "(stale)" and/or "@host:pid" before rss.
These formats are unchanged from 0.8 to master (docs/tool-formats/ddsperf.md has the source lines). The parsers
never return a number ddsperf cannot have printed: malformed lines, NaN/negative/absurd values and a ping or sub
that measured nothing raise DdsperfError, which measure() records as the run's error; parser.parse gives the
`edgebench parse`/`import` Record of one process's output.

DDS Security (security="auth-encrypt"): see security.py's "DDS Security material" section; throwaway certificates and
signed governance/permissions are made with openssl per run, and the run's raw files gain dds-security.json.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import threading
from time import monotonic
from typing import Any, Sequence

from edgebench import sh
from edgebench.drivers.ddsperf.command import INIT_WAIT, cyclone_config, ping_cmd, pong_cmd, pub_cmd, sub_cmd
from edgebench.drivers.ddsperf.parser import (BATCHINGS, DISCOVERIES, MODES, RELIABILITIES, SECURITIES, TRANSPORTS,
                                             responder_text, summarize)
from edgebench.drivers.ddsperf.scan import DdsperfError, parse_samples, parse_stats
from edgebench.drivers.ddsperf.security import (DOMAIN_ID_MAX, find_security_libs, make_security_material,
                                               security_config, security_record, security_support)

# --- running --------------------------------------------------------------------------------------

def popen(ep, argv: list[str], xml: str) -> subprocess.Popen:
    return sh.popen(ep.cmd(["env", f"CYCLONEDDS_URI={xml}", *argv]), stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen, grace: float = 5.0) -> bytes:
    """SIGINT (ddsperf then prints its final checks and exits), SIGKILL after `grace` s; returns the output."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
    try:
        out, _ = proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
    return out or b""


# longest wait for the responders to see the initiator leave (their output is cut there: responder_text); the
# wait ends as soon as every responder printed the initiator's "gone" line, usually within ms of its exit
LINGER_MAX = 1.2


class _Responder:
    """A responder process (pong/sub) whose output is read as it comes, so the driver can stop it as soon as it
    reported the initiator leaving instead of after a fixed pause. Output is identical to what `stop` returns."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.gone = threading.Event()
        self._buf = bytearray()
        self._thread = None
        if getattr(proc, "stdout", None) is not None and hasattr(proc.stdout, "read1"):
            self._thread = threading.Thread(target=self._read, daemon=True)
            self._thread.start()
        else:  # nothing to follow (a test double): behave as the fixed pause did
            self.gone.set()

    def _read(self) -> None:
        try:
            while chunk := self.proc.stdout.read1(65536):
                self._buf += chunk
                if b": gone\n" in self._buf:
                    self.gone.set()
        except (OSError, ValueError):
            pass
        finally:
            self.gone.set()  # EOF: the process ended

    def stop(self, grace: float = 5.0) -> bytes:
        if self._thread is None:
            return stop(self.proc, grace)
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self._thread.join(timeout=grace)
        return bytes(self._buf)


def _diagnose(rc: int, text: str, what: str, init_wait: float) -> str | None:
    """Error text for a ddsperf exit code, or None when the run counts as a measurement.

    Exit 1 caused only by "N samples lost" is a measurement, not a failure: ddsperf 0.10 raises it only for
    reliable keep-all data (never in best-effort mode, where loss is expected and reported in lost_samples);
    the loss is reported through lost_samples either way. Exit 1 for matching/peer problems is an error."""
    if rc == 0:
        return None
    errs = [ln.split("error:", 1)[1].strip() for ln in text.splitlines() if "error:" in ln]
    if rc == 3:
        return f"{what}: ddsperf rejected its arguments: {text.strip()[-300:]}"
    if rc == 2:
        return f"{what}: DDS operation failed: {text.strip()[-300:]}"
    if rc == 1:
        real = [e for e in errs if not re.fullmatch(r"\d+ samples lost", e)]
        if not real and errs:
            return None
        if any("too few matching participants" in e for e in real):
            return (f"{what}: DDS peers did not match within {init_wait:g}s ({'; '.join(real)}): "
                    "check discovery (multicast reachability or static peer addresses)")
        return f"{what}: ddsperf failed: {'; '.join(real) or text.strip()[-300:]}"
    if rc < 0:
        return f"{what}: ddsperf killed by signal {-rc}"
    return f"{what}: ddsperf exited with {rc}: {text.strip()[-300:]}"


def measure(pub, subs, *, mode: str, payload: int, duration: float, reliability: str, transport: str,
            discovery: str, peers: Sequence[str] | None, security: str = "none", domain: int = 0,
            timeout_extra: float = 60, rate: str | float | None = None, init_wait: float = INIT_WAIT,
            responder_security: str | None = None, batching: str = "on"
            ) -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
    """One DDS run. latency: ping on `pub`, pong on `subs[0]`; throughput: pub on `pub`, one sub per entry of
    `subs` (several may share a namespace). `peers` (static-peers): addresses every participant is told
    about; None = the endpoints' IPs. Returns (raw files, metrics or None, error or None); raw output is
    returned even when the run failed.

    security="auth-encrypt": throwaway material (make_security_material) in a temp dir that is deleted after the
    run; every participant gets the same Domain/Security block (plugins by absolute path, no LD_LIBRARY_PATH) and
    raw gains dds-security.json (security_record: protection kinds, subjects, validity; no keys). The temp dir is
    on this host's filesystem, so all endpoints must be namespaces of this host (as Endpoint.cmd implies).
    `responder_security` (default: = security) gives the pong/subs a different setting; only meant to check that
    secure and non-secure participants do not match (the run then fails with a "did not match" error).

    batching="off": every participant's configuration stops Cyclone packing several samples into one RTPS message
    (cyclone_config); "on" is ddsperf's own behaviour, which batches."""
    raw: dict[str, bytes] = {}
    try:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, not {transport!r}")
        if discovery not in DISCOVERIES:
            raise ValueError(f"discovery must be one of {DISCOVERIES}, not {discovery!r}")
        if reliability not in RELIABILITIES:
            raise ValueError(f"reliability must be one of {RELIABILITIES}, not {reliability!r}")
        if security not in SECURITIES:
            raise ValueError(f"security must be one of {SECURITIES}, not {security!r}")
        if batching not in BATCHINGS:
            raise ValueError(f"batching must be one of {BATCHINGS}, not {batching!r}")
        if responder_security not in (None, *SECURITIES):
            raise ValueError(f"responder_security must be one of {SECURITIES}, not {responder_security!r}")
        if not subs:
            raise ValueError("need at least one subscriber endpoint")
        if "auth-encrypt" in (security, responder_security) and not 0 <= int(domain) <= DOMAIN_ID_MAX:
            raise ValueError(f"DDS Security runs need a domain id in 0..{DOMAIN_ID_MAX}, not {domain!r}")
    except ValueError as exc:
        return raw, None, str(exc)
    resp_security = responder_security or security
    if "auth-encrypt" not in (security, resp_security):
        return _run(pub, subs, raw, mode, payload, duration, reliability, transport, discovery, peers, domain,
                    timeout_extra, rate, init_wait, None, None, batching)
    reason = security_support()
    if reason:
        return raw, None, f"unsupported: {reason}"
    with tempfile.TemporaryDirectory(prefix="edgebench-ddssec-") as tmp:
        try:
            libs = find_security_libs()
            material = make_security_material(tmp)
            sec = security_config(material, libs)
        except DdsperfError as exc:
            return raw, None, f"DDS Security material: {exc}"
        record = security_record(material, libs)
        if resp_security != security:
            record.update(initiator_security=security, responder_security=resp_security)
        raw["dds-security.json"] = json.dumps(record, indent=1).encode()
        raw, metrics, error = _run(pub, subs, raw, mode, payload, duration, reliability, transport, discovery, peers,
                                   domain, timeout_extra, rate, init_wait,
                                   sec if security == "auth-encrypt" else None,
                                   sec if resp_security == "auth-encrypt" else None, batching)
    if error and "did not match" in error:
        if resp_security != security:
            error = error.replace(": check discovery (multicast reachability or static peer addresses)", "")
            error += (f" (the {'ping' if mode == 'latency' else 'pub'} runs with security={security}, the "
                      f"{'pong' if mode == 'latency' else 'subs'} with security={resp_security}: participants "
                      "with and without DDS Security never match)")
        else:
            error += " (with DDS Security on, also check the handshake and permissions errors in the logs)"
    return raw, metrics, error


def _run(pub, subs, raw: dict[str, bytes], mode: str, payload: int, duration: float, reliability: str,
         transport: str, discovery: str, peers: Sequence[str] | None, domain: int, timeout_extra: float,
         rate: str | float | None, init_wait: float, init_sec: dict[str, str] | None,
         resp_sec: dict[str, str] | None, batching: str = "on"
         ) -> tuple[dict[str, bytes], dict[str, Any] | None, str | None]:
    if discovery == "static-peers" and not peers:
        peers = list(dict.fromkeys([pub.ip, *(s.ip for s in subs)]))

    def xml(ep, sec: dict[str, str] | None) -> str:
        return cyclone_config(discovery, peers, transport == "multicast", sec, interface=ep.ip, batching=batching)

    # initiator (ping/pub) waits up to init_wait for its peers, then runs `duration` s; the responders
    # (pong/subs) get a generous -D as a safety net and are stopped with SIGINT once the initiator is done.
    responder_d = init_wait + duration + timeout_extra
    if mode == "latency":
        responders = [("ddsperf-pong.log", "pong", None, subs[0],
                       pong_cmd(responder_d, reliability, domain, minmatch=1, init_wait=init_wait))]
        init = ("ddsperf-ping.log", "ping", None, pub,
                ping_cmd(payload, duration, reliability, rate, domain, minmatch=1, init_wait=init_wait))
    else:
        responders = [(f"ddsperf-sub-{i}.log", "sub", i, ep, sub_cmd(responder_d, reliability, domain))
                      for i, ep in enumerate(subs, 1)]
        init = ("ddsperf-pub.log", "pub", None, pub,
                pub_cmd(payload, duration, reliability, rate if rate is not None else "inf", domain,
                        minmatch=len(subs), init_wait=init_wait))

    procs: list[tuple[str, str, int | None, subprocess.Popen]] = []
    followed: dict[str, _Responder] = {}
    outputs: dict[str, tuple[str, int | None, str, int | None]] = {}
    error = None
    try:
        for name, role, n, ep, argv in responders:
            procs.append((name, role, n, popen(ep, argv, xml(ep, resp_sec))))
            followed[name] = _Responder(procs[-1][3])
        name, role, n, ep, argv = init
        iproc = popen(ep, argv, xml(ep, init_sec))
        procs.append((name, role, n, iproc))
        try:
            iout, _ = iproc.communicate(timeout=init_wait + duration + timeout_extra)
            irc = iproc.returncode
        except subprocess.TimeoutExpired:
            iout, irc = stop(iproc), None
            error = f"{role}: ddsperf did not finish within {init_wait + duration + timeout_extra:g}s"
        outputs[name] = (role, n, iout.decode(errors="replace"), irc)
        # let the responders print everything up to the initiator leaving (what responder_text keeps)
        deadline = monotonic() + LINGER_MAX
        for r in followed.values():
            r.gone.wait(max(0.0, deadline - monotonic()))
        for pname, prole, pn, proc in procs[:-1]:
            out = followed[pname].stop()
            outputs[pname] = (prole, pn, out.decode(errors="replace"), proc.returncode)
    finally:
        for *_, proc in procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()

    samples: list[dict[str, Any]] = []
    stats: dict[str, Any] = {}
    for name in [init[0]] + [r[0] for r in responders]:
        role, n, text, rc = outputs.get(name, ("?", None, "", None))
        raw[name] = text.encode()
        if error is None and rc is not None:
            # responders are SIGINTed: only their own ddsperf error verdicts count, not the signal
            err = _diagnose(rc, text, name.removesuffix(".log"), init_wait)
            if err and (name == init[0] or "error:" in text):
                error = err
        # a ping without latency lines, a sub without throughput lines or malformed output: a failed run whose
        # error is the parser's reason (unless the process itself already failed, which explains it better)
        try:
            samples += parse_samples(text, role, n if role == "sub" else (1 if role == "ping" else None))
            if name != init[0]:
                # responders outlive the initiator: their idle seconds after it left are not part of the run
                text = responder_text(text)
            st = parse_stats(text)
        except DdsperfError as exc:
            error = error or str(exc)
            continue
        if role == "sub":
            stats.setdefault("sub", []).append(st)
        else:
            stats[role] = st
    samples.sort(key=lambda s: (s["role"], s["subscriber"] or 0, s["t_s"]))
    raw["dds-samples.json"] = json.dumps(samples, indent=1).encode()
    if error:
        return raw, None, error
    try:
        metrics = summarize(mode, samples, stats)
    except DdsperfError as exc:
        return raw, None, f"{'ping' if mode == 'latency' else 'sub'}: {exc}"
    return raw, metrics, None


def version() -> str:
    try:
        out = sh.call(["dpkg-query", "-W", "-f=${Version}", "cyclonedds-tools"], capture_output=True,
                             text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return f"cyclonedds-tools {out.stdout.strip()}"
    except (FileNotFoundError, subprocess.TimeoutExpired):
        pass
    return "ddsperf (version unknown)" if sh.which("ddsperf") else "missing"
