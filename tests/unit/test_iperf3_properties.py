"""Property tests of the iperf3 parser: whatever is done to a real (or reconstructed) output, `parse` either returns
figures that are finite, inside the documented ranges and consistent (the receiver got no more than was sent), or
raises Iperf3Error. Any other exception is a bug."""

import copy
import json
import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgebench.drivers import iperf3

DATA = Path(__file__).parents[1] / "data" / "iperf3"
FIXTURES = {p.name: p.read_text() for p in sorted(DATA.glob("*.json"))}
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# the parts of a document the parser reads (intervals are never read; mutating them only slows the search)
READ = ("start", "end", "server_output_json", "error")

REPLACEMENTS = st.sampled_from([
    None, float("nan"), float("inf"), -float("inf"), "", "12", "TCP", "UDP", "udp", "SCTP", -1, -1e-9, 0, 0.0, 1,
    0.5, 2**53 + 1, 10**30, 1e300, -1e300, 6e8, 101.0, 1e-300, True, False, [], [1, 2], {}, {"bytes": 1},
])


def paths(value, prefix=()):
    """Every (path to a container, key/index) in the parts the parser reads."""
    if isinstance(value, dict):
        for k, v in value.items():
            if prefix or k in READ:
                yield prefix, k
                yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield prefix, i
            yield from paths(v, prefix + (i,))


def at(doc, prefix):
    for step in prefix:
        doc = doc[step]
    return doc


@st.composite
def mutation(draw, doc):
    """Apply one change to `doc` in place: drop a key, replace a value, rename a key, or scale a number."""
    where = list(paths(doc))
    if not where:
        return
    prefix, key = draw(st.sampled_from(where))
    parent = at(doc, prefix)
    kind = draw(st.sampled_from(["drop", "replace", "replace", "rename", "scale", "flip_protocol"]))
    if kind == "flip_protocol":
        test_start = doc.get("start", {}).get("test_start") if isinstance(doc.get("start"), dict) else None
        if isinstance(test_start, dict):
            test_start["protocol"] = copy.deepcopy(draw(st.sampled_from(["TCP", "UDP", "tcp", "udp", None, "", 6,
                                                                         ["UDP"]])))
        return
    if kind == "drop":
        del parent[key]
    elif kind == "rename" and isinstance(parent, dict):
        parent[key + draw(st.sampled_from(["_bidir_reverse", "_x", ""]))] = parent.pop(key)
    elif kind == "scale" and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
        factor = draw(st.sampled_from([-1, 0, 0.5, 2, 1000, 1e9, 1 + 1e-5]))
        parent[key] = parent[key] * factor
    else:
        parent[key] = copy.deepcopy(draw(REPLACEMENTS))  # the doc is mutated later: never share a list or dict


def check(metrics: dict) -> None:
    """What a successful parse must satisfy."""
    assert metrics["protocol"] in ("tcp", "udp")
    for key, value in metrics.items():
        if isinstance(value, float):
            assert math.isfinite(value), key
    for prefix in ("", "reverse_") if metrics.get("bidir") else ("",):
        m = {k: metrics[prefix + k] for k in ("throughput_mbps", "sent_mbps", "received_mbps", "sent_bytes",
                                               "received_bytes", "retransmits", "jitter_ms", "lost_packets",
                                               "packets", "lost_percent", "mean_rtt_us")}
        assert 0 < m["throughput_mbps"] == m["received_mbps"] <= iperf3.MAX_THROUGHPUT_MBPS
        assert 0 <= m["sent_mbps"] <= iperf3.MAX_THROUGHPUT_MBPS
        assert isinstance(m["received_bytes"], int) and isinstance(m["sent_bytes"], int)
        assert 0 < m["received_bytes"] <= m["sent_bytes"] * iperf3.RECEIVED_OVER_SENT_MAX
        assert m["retransmits"] is None or (isinstance(m["retransmits"], int) and m["retransmits"] >= 0)
        assert m["mean_rtt_us"] is None or 0 < m["mean_rtt_us"] <= iperf3.MAX_RTT_US
        if metrics["protocol"] == "udp":
            assert 0 <= m["jitter_ms"] <= iperf3.MAX_JITTER_MS
            assert 0 <= m["lost_percent"] <= 100
            assert 0 <= m["lost_packets"] <= m["packets"]
            assert m["retransmits"] is None and m["mean_rtt_us"] is None
        else:
            assert m["jitter_ms"] is m["lost_percent"] is m["lost_packets"] is None
    for key in ("cpu_host_pct", "cpu_remote_pct"):
        assert metrics[key] is None or 0 <= metrics[key] <= iperf3.MAX_CPU_PCT


def parse_or_error(text: str) -> None:
    try:
        metrics = iperf3.parse_metrics(text)
    except iperf3.Iperf3Error:
        return
    check(metrics)


def test_every_fixture_satisfies_the_properties_or_is_refused():
    for text in FIXTURES.values():
        parse_or_error(text)


@SETTINGS
@given(data=st.data(), name=st.sampled_from(sorted(FIXTURES)), n=st.integers(1, 3))
def test_mutated_fixtures_parse_sanely_or_raise_iperf3error(data, name, n):
    doc = json.loads(FIXTURES[name])
    for _ in range(n):
        data.draw(mutation(doc))
    parse_or_error(json.dumps(doc))  # NaN/Infinity come out as the non-JSON literals, which must be refused too


@SETTINGS
@given(name=st.sampled_from(sorted(FIXTURES)), cut=st.floats(0, 1, exclude_max=True))
def test_truncated_fixtures_raise_iperf3error(name, cut):
    text = FIXTURES[name]
    parse_or_error(text[:int(len(text) * cut)])


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                        st.sampled_from(["start", "end", "test_start", "protocol", "sum_sent", "sum_received",
                                         "sum", "streams", "sender", "udp", "bytes", "seconds", "bits_per_second",
                                         "error", "version", "reverse", "bidir", "server_output_json",
                                         "sum_received_bidir_reverse", "mean_rtt", "packets", "lost_packets",
                                         "lost_percent", "jitter_ms", "cpu_utilization_percent"]), inner, max_size=6),
                    max_leaves=40)


@SETTINGS
@given(doc=JSON)
def test_arbitrary_json_parses_sanely_or_raises_iperf3error(doc):
    parse_or_error(json.dumps(doc))
