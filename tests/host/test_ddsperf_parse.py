"""ddsperf driver, the parsers: parse() and summarize() on real captures (tests/data/ddsperf-*.log, Cyclone DDS
0.10.2 between two network namespaces joined by a veth pair, or one namespace for ddsperf-loopback-*;
tests/data/ddsperf/*.log, 0.10.2-2 on 127.0.0.1, made by tests/data/ddsperf/capture.sh), malformed output, and
measure() on faked processes (a parse failure is a failed run with the parser's reason)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgebench.drivers import ddsperf as d
from edgebench.drivers import ddsperf as dp
from edgebench.drivers.ddsperf import run as d_run
from edgebench.substrates.local.testbed import Endpoint

DATA = Path(__file__).parents[1] / "data"


def read(name: str) -> str:
    return (DATA / name).read_text()


# --- parse ------------------------------------------------------------------------------------------

def test_parse_latency_ping_exact():
    s = dp.parse_samples(read("ddsperf-lat64-besteffort-ping.log"), "ping", 1)
    assert [x["t_s"] for x in s] == [2.0, 3.0]
    assert set(s[0]) == set(dp.SAMPLE_KEYS)
    assert s[0] == {
        "t_s": 2.0, "role": "ping", "subscriber": 1, "peer": "vm:27587",
        "latency_mean_us": 24.965, "latency_min_us": 7.631, "latency_p50_us": 28.482, "latency_p90_us": 30.625,
        "latency_p99_us": 36.544, "latency_max_us": 714.555, "latency_count": 19970,
        "samples_per_s": None, "throughput_mbps": None, "lost_samples": None}
    assert s[1]["latency_count"] == 17172 and s[1]["latency_max_us"] == 1177.345


def test_parse_latency_16k_and_pong_has_no_samples():
    s = dp.parse_samples(read("ddsperf-lat16k-reliable-ping.log"), "ping")
    assert s and all(x["latency_p50_us"] > 0 and x["subscriber"] is None for x in s)
    assert dp.parse_samples(read("ddsperf-lat64-reliable-pong.log"), "pong") == []
    assert dp.parse_samples(read("ddsperf-tp1k-reliable-1sub-pub.log"), "pub") == []


def test_parse_sub_exact():
    s = dp.parse_samples(read("ddsperf-tp1k-besteffort-1sub-sub-1.log"), "sub", 1)
    assert [(x["t_s"], x["samples_per_s"], x["throughput_mbps"], x["lost_samples"]) for x in s] == [
        (1.0, 254340.0, 2083.59, 2392), (2.0, 431490.0, 3534.73, 1092),
        (3.001, 426050.0, 3490.23, 624), (4.0, 181340.0, 1485.55, 0)]
    assert all(x["role"] == "sub" and x["subscriber"] == 1 and x["peer"] is None for x in s)
    assert all(x["latency_mean_us"] is None for x in s)


def test_parse_stats_own_and_peers():
    st = dp.parse_stats(read("ddsperf-tp1k-besteffort-1sub-sub-1.log"))
    # own lines: recvUC 20+6, 34+11, 31+15, 13+6
    assert st["lines"] == 4 and st["pid"] == 27761
    assert st["cpu_pct"] == pytest.approx((26 + 45 + 46 + 19) / 4)
    assert st["rss_mb"] == pytest.approx(23.7) and st["cpu_max_pct"] == 46
    assert st["peers"]["vm:27770"]["lines"] == 3
    assert st["peers"]["vm:27770"]["cpu_pct"] == pytest.approx((96 + 99 + 100) / 3)


def test_parse_stats_skips_stale_and_kb():
    text = ("[1] 1.000  rss:900kB vcsw:1 ivcsw:2 recvUC:1%+2% tev:0%+1%\n"
            "[1] 1.000  (stale) @h:2 rss:7.0MB vcsw:1 ivcsw:2 recvUC:50%+50%\n"
            "[1] 2.000  rss:1.0MB vcsw:1 ivcsw:2\n")
    st = dp.parse_stats(text)
    assert st["lines"] == 2 and st["cpu_pct"] == pytest.approx(2.0)
    assert st["rss_mb"] == pytest.approx((900 / 1024 + 1.0) / 2)
    assert st["peers"] == {}


# --- summarize --------------------------------------------------------------------------------------

def _lat(t, mean, mn, p50, p90, p99, mx, cnt):
    s = dict.fromkeys(dp.SAMPLE_KEYS)
    s.update(t_s=t, role="ping", subscriber=1, peer="h:1", latency_mean_us=mean, latency_min_us=mn,
             latency_p50_us=p50, latency_p90_us=p90, latency_p99_us=p99, latency_max_us=mx, latency_count=cnt)
    return s


def _tp(sub, t, sps, mbps, lost=0):
    s = dict.fromkeys(dp.SAMPLE_KEYS)
    s.update(t_s=t, role="sub", subscriber=sub, samples_per_s=sps, throughput_mbps=mbps, lost_samples=lost)
    return s


def test_summarize_latency_count_weighted():
    samples = [_lat(1, 10, 5, 9, 12, 20, 100, 100), _lat(2, 40, 3, 30, 50, 80, 90, 300)]
    m = dp.summarize("latency", samples, {"ping": {"cpu_pct": 40.0, "rss_mb": 8.0},
                                         "pong": {"cpu_pct": 30.0, "rss_mb": 7.0}})
    assert m["latency_count"] == 400
    assert m["latency_mean_us"] == pytest.approx((10 * 100 + 40 * 300) / 400)
    assert m["latency_p50_us"] == pytest.approx((9 * 100 + 30 * 300) / 400)
    assert m["latency_p90_us"] == pytest.approx((12 * 100 + 50 * 300) / 400)
    assert m["latency_p99_us"] == pytest.approx((20 * 100 + 80 * 300) / 400)
    assert m["latency_min_us"] == 3 and m["latency_max_us"] == 100
    assert (m["cpu_pub_pct"], m["rss_pub_mb"], m["cpu_sub_pct"], m["rss_sub_mb"]) == (40.0, 8.0, 30.0, 7.0)
    assert m["throughput_mbps"] is None and m["lost_samples"] is None


def test_summarize_throughput_sum_over_subscribers():
    samples = [
        # sub 1: idle, partial, 2 full seconds, partial, idle
        _tp(1, 1, 0, 0), _tp(1, 2, 50, 5, 1), _tp(1, 3, 100, 10, 2), _tp(1, 4, 120, 12), _tp(1, 5, 30, 3),
        _tp(1, 6, 0, 0),
        # sub 2: only two data seconds -> nothing trimmed
        _tp(2, 1, 200, 20), _tp(2, 2, 100, 10, 4)]
    m = dp.summarize("throughput", samples, {"pub": {"cpu_pct": 90.0, "rss_mb": 11.0},
                                            "sub": [{"cpu_pct": 10.0, "rss_mb": 7.0},
                                                    {"cpu_pct": 20.0, "rss_mb": 8.0}]})
    assert m["samples_per_s"] == pytest.approx(110 + 150)
    assert m["throughput_mbps"] == pytest.approx(11 + 15)
    assert m["per_subscriber_mbps"] == pytest.approx(13)
    assert m["lost_samples"] == 7
    assert m["cpu_sub_pct"] == pytest.approx(15.0) and m["rss_sub_mb"] == pytest.approx(7.5)
    assert m["cpu_pub_pct"] == 90.0 and m["latency_p50_us"] is None


def test_summarize_real_captures():
    samples = dp.parse_samples(read("ddsperf-tp1k-besteffort-1sub-sub-1.log"), "sub", 1)
    m = dp.summarize("throughput", samples, {})
    assert m["samples_per_s"] == pytest.approx((431490 + 426050) / 2)
    assert m["throughput_mbps"] == pytest.approx((3534.73 + 3490.23) / 2)
    assert m["lost_samples"] == 4108
    four = [x for i in range(1, 5) for x in dp.parse_samples(read(f"ddsperf-tp1k-reliable-4sub-sub-{i}.log"), "sub", i)]
    m4 = dp.summarize("throughput", four, {})
    assert m4["lost_samples"] == 0
    assert m4["throughput_mbps"] == pytest.approx(4 * m4["per_subscriber_mbps"])
    lat = dp.parse_samples(read("ddsperf-lat64-besteffort-ping.log"), "ping", 1)
    ml = dp.summarize("latency", lat, {})
    assert ml["latency_count"] == 19970 + 17172
    assert ml["latency_p50_us"] == pytest.approx((28.482 * 19970 + 29.143 * 17172) / 37142)
    assert ml["latency_min_us"] == 7.631 and ml["latency_max_us"] == 1177.345


def test_loopback_capture():
    s = dp.parse_samples(read("ddsperf-loopback-tp1k-sub-1.log"), "sub", 1)
    assert s and max(x["throughput_mbps"] for x in s) > 0
    assert dp.parse_stats(read("ddsperf-loopback-tp1k-pub.log"))["cpu_pct"] > 0


# --- captures made with tests/data/ddsperf/capture.sh: expected values read with str.split() ---------------

CAP = DATA / "ddsperf"


def cap(name: str) -> str:
    return (CAP / name).read_text()


def tok(line: str, label: str) -> str:
    t = line.split()
    return t[t.index(label) + 1]


def lat_lines(text: str, sublat: bool = False) -> list[dict]:
    out = []
    for ln in text.splitlines():
        t = ln.split()
        if " mean " in ln and (("sublat" in t) == sublat):
            out.append({"t": float(t[1]), "peer": t[3] if sublat else t[2], "cnt": int(tok(ln, "cnt")),
                        **{k: float(tok(ln, k).removesuffix("us")) for k in ("mean", "min", "50%", "90%", "99%",
                                                                            "max")}})
    return out


def own_cpu(text: str) -> list[tuple[float, float]]:
    """(cpu %, rss MB) of the process's own stats lines."""
    out = []
    for ln in text.splitlines():
        if " vcsw:" in ln and " @" not in ln:
            cpu = sum(float(u) + float(s) for part in ln.split() if part.count("%") == 2
                      for u, s in [part.split(":")[-1].rstrip("%").split("%+")])
            rss = next(x for x in ln.split() if x.startswith("rss:"))[len("rss:"):]
            out.append((cpu, float(rss.removesuffix("MB"))))
    return out


@pytest.mark.parametrize("name", ["ddsperf-0.10.2-lo-lat64-reliable-ping.log",
                                  "ddsperf-0.10.2-lo-lat1k-besteffort-200hz-ping.log"])
def test_capture_ping(name):
    text = cap(name)
    lines = lat_lines(text)
    rec = dp.parse(text)  # role detected: latency lines
    m, rows = rec["metrics"], rec["samples"]
    n = sum(x["cnt"] for x in lines)
    assert m["latency_count"] == n
    assert m["latency_mean_us"] == pytest.approx(sum(x["mean"] * x["cnt"] for x in lines) / n)
    assert m["latency_p99_us"] == pytest.approx(sum(x["99%"] * x["cnt"] for x in lines) / n)
    assert m["latency_min_us"] == min(x["min"] for x in lines) and m["latency_max_us"] == max(x["max"] for x in lines)
    cpu = own_cpu(text)
    assert m["cpu_pub_pct"] == pytest.approx(sum(c for c, _ in cpu) / len(cpu))
    assert m["rss_pub_mb"] == pytest.approx(sum(r for _, r in cpu) / len(cpu))
    assert m["throughput_mbps"] is None and m["cpu_sub_pct"] is None
    assert [(r["t_s"], r["peer"], r["latency_p50_us"]) for r in rows] == [(x["t"], x["peer"], x["50%"]) for x in lines]
    assert all(r["role"] == "ping" and r["subscriber"] == 1 and list(r) == list(dp.SAMPLE_KEYS) for r in rows)


@pytest.mark.parametrize("name", ["ddsperf-0.10.2-lo-lat64-reliable-pong.log",
                                  "ddsperf-0.10.2-lo-lat1k-besteffort-200hz-pong.log"])
def test_capture_pong_needs_its_role(name):
    text = cap(name)
    with pytest.raises(dp.DdsperfError, match="cannot tell the ddsperf role"):
        dp.parse(text)
    rec = dp.parse(text, role="pong")
    cpu = own_cpu(text.split(": gone\n")[0])  # measure() counts a responder up to the first peer leaving
    assert rec["samples"] == []
    assert rec["metrics"]["cpu_sub_pct"] == pytest.approx(sum(c for c, _ in cpu) / len(cpu))
    assert rec["metrics"]["rss_sub_mb"] == pytest.approx(sum(r for _, r in cpu) / len(cpu))
    assert rec["metrics"]["latency_count"] is None and rec["metrics"]["cpu_pub_pct"] is None
    assert dp.parse_samples(text, "pong") == []


@pytest.mark.parametrize("name", ["ddsperf-0.10.2-lo-tp1k-reliable-2sub-pub.log",
                                  "ddsperf-0.10.2-lo-tp16k-besteffort-2000hz-sublat-pub.log"])
def test_capture_pub(name):
    text = cap(name)
    assert dp.detect_role(text) == "pub"  # rate histogram lines ("190k/s ... |@--_...|")
    rec = dp.parse(text)
    cpu = own_cpu(text)
    assert rec["samples"] == [] and rec["metrics"]["samples_per_s"] is None
    assert rec["metrics"]["cpu_pub_pct"] == pytest.approx(sum(c for c, _ in cpu) / len(cpu))
    assert rec["metrics"]["rss_pub_mb"] == pytest.approx(sum(r for _, r in cpu) / len(cpu))


def active_mean(rows: list[tuple[float, float]]) -> float:
    """Mean over a subscriber's active seconds (docs/results-layout.md): from the first to the last second with data,
    without the first and last of those when at least 3 remain."""
    rows = sorted(rows)
    nz = [i for i, (_, v) in enumerate(rows) if v]
    act = rows[nz[0]:nz[-1] + 1]
    act = act[1:-1] if len(act) >= 3 else act
    return sum(v for _, v in act) / len(act)


@pytest.mark.parametrize("name", ["ddsperf-0.10.2-lo-tp1k-reliable-2sub-sub-1.log",
                                  "ddsperf-0.10.2-lo-tp1k-reliable-2sub-sub-2.log",
                                  "ddsperf-0.10.2-lo-tp16k-besteffort-2000hz-sublat-sub-1.log"])
def test_capture_sub(name):
    text = cap(name)
    tp = [ln for ln in text.splitlines() if " total " in ln]
    rec = dp.parse(text, subscriber=2)
    m = rec["metrics"]
    sps = [(float(ln.split()[1]), float(tok(ln, "rate")) * 1000) for ln in tp]
    mbps = [(float(ln.split()[1]), float(ln.split()[ln.split().index("kS/s") + 1])) for ln in tp]
    assert m["samples_per_s"] == pytest.approx(active_mean(sps))
    assert m["throughput_mbps"] == pytest.approx(active_mean(mbps)) == m["per_subscriber_mbps"]
    assert m["lost_samples"] == sum(int(ln.split()[ln.split().index("delta") + 3]) for ln in tp)
    cpu = own_cpu(text.split(": gone\n")[0])
    assert m["cpu_sub_pct"] == pytest.approx(sum(c for c, _ in cpu) / len(cpu))
    rows = [r for r in rec["samples"] if r["samples_per_s"] is not None]
    assert [(r["t_s"], r["samples_per_s"]) for r in rows] == pytest.approx(sps)
    assert all(r["role"] == "sub" and r["subscriber"] == 2 for r in rec["samples"])
    sub_lat = lat_lines(text, sublat=True)
    lrows = [r for r in rec["samples"] if r["latency_count"] is not None]
    assert [(r["peer"], r["latency_count"], r["latency_mean_us"]) for r in lrows] == [
        (x["peer"], x["cnt"], x["mean"]) for x in sub_lat]
    if "sublat" in name:  # after the publisher left, the peer is its publication handle in hex
        assert lrows[-1]["peer"] == "a226971971f7d1ad"


def test_capture_two_subscribers_summarized_like_measure():
    subs = [dp.parse_samples(cap(f"ddsperf-0.10.2-lo-tp1k-reliable-2sub-sub-{i}.log"), "sub", i) for i in (1, 2)]
    m = dp.summarize("throughput", subs[0] + subs[1], {})
    one = [dp.parse(cap(f"ddsperf-0.10.2-lo-tp1k-reliable-2sub-sub-{i}.log"), subscriber=i)["metrics"]
           for i in (1, 2)]
    assert m["throughput_mbps"] == pytest.approx(one[0]["throughput_mbps"] + one[1]["throughput_mbps"])
    assert m["per_subscriber_mbps"] == pytest.approx(m["throughput_mbps"] / 2)


# --- nothing measured, malformed output: DdsperfError with the reason -----------------------------------------------

@pytest.mark.parametrize("text", ["", "garbage\x00 lines\nmore garbage\n",
                                  "[27467] participant vm:27467: new (self)\n"])
def test_ping_without_latency_lines_is_an_error_with_the_output(text):
    with pytest.raises(dp.DdsperfError) as e:
        dp.parse_samples(text, "ping")
    msg = str(e.value)
    assert msg.startswith("ddsperf printed no latency samples (role ping): ")
    assert (json.dumps(text[:200]) if text else "(empty output)") in msg
    with pytest.raises(dp.DdsperfError, match="no throughput samples \\(role sub, subscriber 3\\)"):
        dp.parse_samples(text, "sub", 3)
    with pytest.raises(dp.DdsperfError):
        dp.parse(text)


def test_summarize_refuses_nothing():
    with pytest.raises(dp.DdsperfError, match="no latency samples"):
        dp.summarize("latency", [], {})
    with pytest.raises(dp.DdsperfError, match="no subscriber throughput samples"):
        dp.summarize("throughput", [], {})
    with pytest.raises(dp.DdsperfError, match="no subscriber received any data"):
        dp.summarize("throughput", [_tp(1, 1, 0, 0), _tp(1, 2, 0, 0)], {})
    with pytest.raises(dp.DdsperfError, match="latency_p50_us is None"):
        dp.summarize("latency", [_lat(1, 10, 5, None, 12, 20, 100, 100)], {})
    with pytest.raises(dp.DdsperfError, match="NaN"):
        dp.summarize("latency", [_lat(1, float("nan"), 5, 9, 12, 20, 100, 100)], {})
    with pytest.raises(dp.DdsperfError, match="negative"):
        dp.summarize("throughput", [_tp(1, 1, -5.0, 1.0)], {})


PING = cap("ddsperf-0.10.2-lo-lat64-reliable-ping.log")
LAT_LINE = next(ln for ln in PING.splitlines() if " mean " in ln)


@pytest.mark.parametrize("old, new, words", [
    ("mean 21.618us", "mean nanus", "mean latency (us) is NaN"),
    ("mean 21.618us", "mean fastus", "mean latency (us) is 'fast', not a number"),
    ("cnt 22983", "cnt -4", "latency count is negative (-4)"),
    ("max 2228.002us", "max 1e30us", "max latency (us) 1e+30 is outside"),
    ("min 11.967us", "min 99.000us", "min latency (us) 99 is above 50% latency"),
    ("cnt 22983", "cnt 2.5", "not a whole number"),
    ("cnt 22983", "cnt 0", "latency count 0 is outside 1..1e+10"),
    (" 50% 20.343us", "", "malformed ddsperf latency line"),
])
def test_malformed_latency_lines_name_the_field(old, new, words):
    assert old in LAT_LINE
    with pytest.raises(dp.DdsperfError) as e:
        dp.parse_samples(PING.replace(LAT_LINE, LAT_LINE.replace(old, new)), "ping")
    assert words in str(e.value) and "line 3" in str(e.value)


def test_malformed_stats_and_throughput_lines():
    sub = cap("ddsperf-0.10.2-lo-tp1k-reliable-2sub-sub-1.log")
    with pytest.raises(dp.DdsperfError, match="rss \\(MB\\) is 'x7.4'"):
        dp.parse_stats(sub.replace("rss:7.4MB vcsw:2766", "rss:x7.4MB vcsw:2766"))
    with pytest.raises(dp.DdsperfError, match="malformed thread CPU"):
        dp.parse_stats(sub.replace("recvUC:11%+1%", "recvUC:11%"))
    with pytest.raises(dp.DdsperfError, match="exceed the run's totals"):
        dp.parse_samples(sub.replace("delta 202243", "delta 9202243"), "sub", 1)
    with pytest.raises(dp.DdsperfError, match="rate \\(Mb/s\\) is NaN"):
        dp.parse_samples(sub.replace("1653.87 Mb/s", "NaN Mb/s"), "sub", 1)


def test_two_outputs_in_one_are_rejected():
    sub1, sub2 = (cap(f"ddsperf-0.10.2-lo-tp1k-reliable-2sub-sub-{i}.log") for i in (1, 2))
    with pytest.raises(dp.DdsperfError, match="more than one ddsperf process"):
        dp.parse_samples(sub1 + sub2, "sub", 1)
    line = next(ln for ln in sub1.splitlines() if " total " in ln) + "\n"
    with pytest.raises(dp.DdsperfError, match="same second reported twice"):
        dp.parse_samples(sub1 + line, "sub", 1)


def test_cut_off_last_line_is_ignored():
    cut = PING[: PING.index("cnt 33857") + len("cnt 33")]  # the last latency line, cut inside its count
    rows = dp.parse_samples(cut, "ping", 1)
    assert [r["latency_count"] for r in rows] == [22983, 34257]  # not 33
    with pytest.raises(dp.DdsperfError, match="no newline"):
        dp.parse_samples(LAT_LINE, "ping")


def test_normalize_options_and_shape():
    rec = dp.parse(PING)
    assert set(rec) == {"tool", "metrics", "samples"} and rec["tool"] == "ddsperf"
    assert list(rec["metrics"]) == list(dp.METRIC_KEYS)
    with pytest.raises(dp.DdsperfError, match="role must be"):
        dp.parse(PING, role="observer")
    with pytest.raises(dp.DdsperfError, match="unknown option"):
        dp.parse(PING, mode="latency")
    with pytest.raises(dp.DdsperfError, match="no throughput samples"):
        dp.parse(PING, role="sub")


# --- measure(): a parse failure is a failed run with the parser's reason -------------------------------------------

class FakeProc:
    """Stands in for a ddsperf process that has already exited, having printed `out`: exit code 1 if it printed an
    "error:" line (as ddsperf does), else 0. Never a real pid: poll() is not None, so nothing is ever signalled."""

    def __init__(self, out: str):
        self.out, self.pid = out.encode(), -1
        self.returncode = 1 if "] error:" in out else 0

    def poll(self):
        return self.returncode

    def communicate(self, timeout=None):
        return self.out, None

    def wait(self, timeout=None):
        return self.returncode


def fake_run(monkeypatch, outputs: dict[str, str], **kw):
    """measure() with ddsperf replaced: outputs maps the mode word of the command (ping, pong, pub, sub) to what the
    process printed (subs in order: "sub" may be a list)."""
    subs = iter(outputs["sub"]) if isinstance(outputs.get("sub"), list) else None

    def popen(ep, argv, xml):
        mode = next(a for a in argv if a in ("ping", "pong", "pub", "sub"))
        return FakeProc(next(subs) if mode == "sub" and subs else outputs[mode])

    monkeypatch.setattr(d_run, "popen", popen)
    ep = Endpoint("nowhere", "10.0.0.1", 0)
    args = dict(payload=64, duration=3, reliability="reliable", transport="unicast", discovery="multicast",
                peers=None)
    args.update(kw)
    nsubs = args.pop("nsubs", 1)
    return d.measure(ep, [ep] * nsubs, **args)


def test_measure_ping_without_latency_lines_fails_with_the_reason(monkeypatch):
    quiet = "[4242] participant vm:4242: new (self)\n[4242] 1.000  rss:7.5MB vcsw:1 ivcsw:2 recvUC:1%+1%\n"
    raw, metrics, err = fake_run(monkeypatch, {"ping": quiet, "pong": cap("ddsperf-0.10.2-lo-lat64-reliable-pong.log")},
                                 mode="latency")
    assert metrics is None
    assert err.startswith("ddsperf printed no latency samples (role ping): ") and "[4242] participant" in err
    assert raw["ddsperf-ping.log"] == quiet.encode() and json.loads(raw["dds-samples.json"]) == []


def test_measure_silent_subscriber_fails_the_run(monkeypatch):
    subs = [cap("ddsperf-0.10.2-lo-tp1k-reliable-2sub-sub-1.log"), ""]
    raw, metrics, err = fake_run(monkeypatch, {"pub": cap("ddsperf-0.10.2-lo-tp1k-reliable-2sub-pub.log"),
                                               "sub": subs}, mode="throughput", nsubs=2)
    assert metrics is None and err == "ddsperf printed no throughput samples (role sub, subscriber 2): (empty output)"
    assert {s["subscriber"] for s in json.loads(raw["dds-samples.json"])} == {1}


def test_measure_process_error_wins_over_the_parser(monkeypatch):
    failed = "[7] participant vm:7: new (self)\n[7] error: too few matching participants (0)\n"
    raw, metrics, err = fake_run(monkeypatch, {"ping": failed, "pong": ""}, mode="latency", init_wait=2)
    assert metrics is None and "did not match" in err and "no latency samples" not in err


def test_measure_good_fake_run(monkeypatch):
    ping, pong = cap("ddsperf-0.10.2-lo-lat64-reliable-ping.log"), cap("ddsperf-0.10.2-lo-lat64-reliable-pong.log")
    raw, metrics, err = fake_run(monkeypatch, {"ping": ping, "pong": pong}, mode="latency")
    assert err is None
    assert metrics["latency_count"] == sum(x["cnt"] for x in lat_lines(ping))
    assert metrics == {**dp.parse(ping)["metrics"], "cpu_sub_pct": dp.parse(pong, role="pong")["metrics"][
        "cpu_sub_pct"], "rss_sub_mb": dp.parse(pong, role="pong")["metrics"]["rss_sub_mb"]}
    assert json.loads(raw["dds-samples.json"]) == dp.parse(ping)["samples"]
