"""Property tests of the DDS tool parsers (drivers/ddsperf/, drivers/perftest/): the fixture outputs, mutated
(lines deleted, duplicated, swapped; numbers replaced by nan/-1/1e30/garbage; truncated; whitespace changed; garbage
lines; JSON reshaped), either parse to finite, in-range, consistent values or raise the module's own error
(DdsperfError / PerftestParseError): never another exception, never an empty success."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgebench.drivers import ddsperf as dp
from edgebench.drivers import perftest as p

DATA = Path(__file__).parents[1] / "data"

DDS_FIXTURES = sorted([*DATA.glob("ddsperf-*.log"), *(DATA / "ddsperf").glob("*.log")])
PERFTEST_FIXTURES = sorted([*DATA.glob("perftest-*.txt"), *(DATA / "perftest").glob("*.txt")])


def dds_role(path: Path) -> str:
    m = re.search(r"-(ping|pong|pub|sub)(-\d+)?\.log$", path.name)
    assert m, path.name
    return m.group(1)


DDS = [(f.name, f.read_text(), dds_role(f)) for f in DDS_FIXTURES]
PERFTEST = [(f.name, f.read_text(encoding="utf-8")) for f in PERFTEST_FIXTURES]

# plausible upper bounds, independent of the modules' LIMITS
BOUNDS = {"t_s": 1e7, "latency_mean_us": 1e9, "latency_min_us": 1e9, "latency_p50_us": 1e9, "latency_p90_us": 1e9,
          "latency_p99_us": 1e9, "latency_max_us": 1e9, "latency_count": 1e12, "samples_per_s": 1e9,
          "throughput_mbps": 1e7, "per_subscriber_mbps": 1e7, "lost_samples": 1e15, "cpu_pub_pct": 1e5,
          "cpu_sub_pct": 1e5, "rss_pub_mb": 1e7, "rss_sub_mb": 1e7, "cpu_pct": 1e5, "cpu_max_pct": 1e5,
          "rss_mb": 1e7, "rss_max_mb": 1e7, "lines": 1e9, "length_bytes": 2 ** 32, "latency_std_us": 1e9,
          "latency_p9999_us": 1e9, "lost_percent": 100, "total_samples": 1e15}
LATENCY_ORDER = ("latency_min_us", "latency_p50_us", "latency_p90_us", "latency_p99_us", "latency_max_us")
TOL = 1.0  # print rounding (Perftest prints averages with %6.0lf)

REPLACEMENTS = ["nan", "-nan", "NaN", "-1", "-0.5", "1e30", "1e400", "inf", "", "x", "1.2.3", "0", "0.0",
                "99999999999999999999999", "12abc", "+7", ".5", "\u0665", "-"]
WHITESPACE = ["", " ", "  ", "\t", "\r", "\u00a0", "\n", " \n "]


def check_number(key: str, v) -> None:
    assert v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)), (key, v)
    if v is not None:
        assert math.isfinite(v), (key, v)
        assert 0 <= v <= BOUNDS.get(key, 1e15), (key, v)


def check_ordered(row: dict) -> None:
    vals = [row.get(k) for k in LATENCY_ORDER]
    present = [v for v in vals if v is not None]
    assert all(a <= b + TOL for a, b in zip(present, present[1:])), row
    mean = row.get("latency_mean_us")
    if mean is not None and vals[0] is not None and vals[-1] is not None:
        assert vals[0] - TOL <= mean <= vals[-1] + TOL, row


def check_samples(rows) -> None:
    assert isinstance(rows, list)
    for r in rows:
        assert list(r) == list(dp.SAMPLE_KEYS)
        assert r["role"] in ("ping", "sub")
        assert r["subscriber"] is None or (isinstance(r["subscriber"], int) and r["subscriber"] >= 1)
        assert r["peer"] is None or isinstance(r["peer"], str)
        for k in dp.SAMPLE_KEYS:
            if k not in ("role", "subscriber", "peer"):
                check_number(k, r[k])
        check_ordered(r)


def check_metrics(m: dict) -> None:
    assert set(p.METRIC_KEYS) <= set(m)
    for k, v in m.items():
        check_number(k, v)
    assert any(m[k] is not None for k in p.METRIC_KEYS), "an empty success"
    check_ordered(m)


# --- mutations ------------------------------------------------------------------------------------------------------

def mutate_text(data, text: str) -> str:
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        kind = data.draw(st.sampled_from(["delete", "dup", "swap", "number", "number", "number", "truncate", "ws",
                                          "garbage", "json"]), label="kind")
        lines = text.split("\n")
        if kind == "delete" and lines:
            del lines[data.draw(st.integers(0, len(lines) - 1))]
        elif kind == "dup" and lines:
            i = data.draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
        elif kind == "swap" and len(lines) > 1:
            i, j = (data.draw(st.integers(0, len(lines) - 1)) for _ in range(2))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "number":
            nums = list(re.finditer(r"\d+(?:\.\d+)?", text))
            if nums:
                m = nums[data.draw(st.integers(0, len(nums) - 1))]
                rep = data.draw(st.sampled_from(REPLACEMENTS) | st.text(max_size=6), label="replacement")
                text = text[:m.start()] + rep + text[m.end():]
            continue
        elif kind == "truncate":
            text = text[:data.draw(st.integers(0, len(text)))]
            continue
        elif kind == "ws":
            spaces = list(re.finditer(r"[ \t]+", text))
            if spaces:
                m = spaces[data.draw(st.integers(0, len(spaces) - 1))]
                text = text[:m.start()] + data.draw(st.sampled_from(WHITESPACE)) + text[m.end():]
            continue
        elif kind == "garbage":
            lines.insert(data.draw(st.integers(0, len(lines))), data.draw(st.text(max_size=40), label="garbage"))
        elif kind == "json":
            text = reshape_json(data, text)
            continue
        text = "\n".join(lines)
    return text


def reshape_json(data, text: str) -> str:
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    blocks = doc.get("perftest") if isinstance(doc, dict) else None
    first = blocks[0] if isinstance(blocks, list) and blocks else None
    shapes = [[doc], {"result": doc}, {"perftest": first}, {"perftest": [[first]]}, {"perftest": "x"}, 5, None,
              {"perftest": [first, first]}, {"perftest": [{**first, "summary": [first.get("summary")]}]}
              if isinstance(first, dict) else doc,
              {"perftest": [{**first, "intervals": first.get("summary")}]} if isinstance(first, dict) else doc,
              {"perftest": [{"length": "100", **({"summary": first.get("summary")} if isinstance(first, dict)
                                                  else {})}]}]
    return json.dumps(data.draw(st.sampled_from(shapes), label="shape"))


# --- properties -----------------------------------------------------------------------------------------------------

PROPERTY = settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(data=st.data())
def test_ddsperf_mutated_outputs(data):
    name, text, role = data.draw(st.sampled_from(DDS), label="fixture")
    text = mutate_text(data, text)
    for call in ("parse", "parse_role", "parse_samples", "parse_stats"):
        try:
            if call == "parse":
                out = dp.parse(text)
            elif call == "parse_role":
                out = dp.parse(text, role=role)
            elif call == "parse_samples":
                out = dp.parse_samples(text, role, 1)
            else:
                out = dp.parse_stats(text)
        except dp.DdsperfError:
            continue
        if call in ("parse", "parse_role"):
            assert out["tool"] == "ddsperf"
            check_samples(out["samples"])
            check_metrics(out["metrics"])
            got_role = role if call == "parse_role" else dp.detect_role(text)
            if got_role == "ping":
                assert out["samples"] and out["metrics"]["latency_count"] > 0
            elif got_role == "sub":
                assert out["samples"] and out["metrics"]["samples_per_s"] > 0
            else:
                assert out["samples"] == []
        elif call == "parse_samples":
            check_samples(out)
            if role in ("ping", "sub"):
                assert out, "an empty success"
        else:
            for k in ("cpu_pct", "rss_mb", "cpu_max_pct", "rss_max_mb", "lines"):
                check_number(k, out[k])
            for peer in out["peers"].values():
                for k in ("cpu_pct", "rss_mb", "cpu_max_pct", "rss_max_mb", "lines"):
                    check_number(k, peer[k])


@PROPERTY
@given(data=st.data())
def test_perftest_mutated_outputs(data):
    name, text = data.draw(st.sampled_from(PERFTEST), label="fixture")
    text = mutate_text(data, text)
    for call in ("parse", "summarize", "parse_samples"):
        try:
            out = getattr(p, call)(text)
        except p.PerftestParseError:
            continue
        if call == "parse":
            assert out["tool"] == "perftest"
            check_samples(out["samples"])
            check_metrics(out["metrics"])
            assert out["metrics"]["latency_mean_us"] is not None or out["metrics"]["samples_per_s"] is not None
        elif call == "summarize":
            check_metrics(out)
        else:
            check_samples(out)  # may be empty: -noPrint outputs have no intervals


@pytest.mark.parametrize("name, text, role", DDS, ids=[n for n, _, _ in DDS])
def test_ddsperf_fixtures_unmutated(name, text, role):
    out = dp.parse(text, role=role)
    check_samples(out["samples"])
    check_metrics(out["metrics"])


@pytest.mark.parametrize("name, text", PERFTEST, ids=[n for n, _ in PERFTEST])
def test_perftest_fixtures_unmutated(name, text):
    out = p.parse(text)
    check_samples(out["samples"])
    check_metrics(out["metrics"])


@PROPERTY
@given(text=st.text(max_size=300))
def test_arbitrary_text(text):
    for fn, err in ((dp.parse, dp.DdsperfError), (p.parse, p.PerftestParseError)):
        try:
            out = fn(text)
        except err:
            continue
        check_samples(out["samples"])
        check_metrics(out["metrics"])
