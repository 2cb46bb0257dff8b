"""RTI Perftest parser on outputs copied from rticommunity/rtiperftest
srcDoc/designDocuments/280-ouput-format.md (tests/data/perftest-*.txt; the JSON ones carry no comment)."""

from pathlib import Path

import pytest

from edgebench.drivers import perftest as p
from edgebench.drivers.ddsperf import SAMPLE_KEYS

DATA = Path(__file__).parent / "data"


def read(name):
    return (DATA / name).read_text()


def test_csv_latency_with_cpu():
    text = read("perftest-csv-latency-pub.txt")
    s = p.parse(text)
    assert [x["latency_mean_us"] for x in s] == [67, 52, 45]
    assert s[0]["role"] == "ping" and s[0]["latency_min_us"] == 67 and s[0]["latency_max_us"] == 544
    assert list(s[0]) == list(SAMPLE_KEYS) and s[0]["latency_p50_us"] is None
    m = p.summarize(text)
    assert (m["latency_mean_us"], m["latency_std_us"], m["latency_min_us"], m["latency_max_us"]) == (98, 129.3, 45, 544)
    assert (m["latency_p50_us"], m["latency_p90_us"], m["latency_p99_us"]) == (55, 88, 544)
    assert m["cpu_pub_pct"] == 26.64 and m["length_bytes"] == 100 and m["throughput_mbps"] is None


def test_csv_throughput():
    text = read("perftest-csv-throughput-sub.txt")
    s = p.parse(text, subscriber=2)
    assert [(x["samples_per_s"], x["throughput_mbps"], x["lost_samples"]) for x in s] == [
        (2046014, 1636.8, 0), (2072794, 1658.2, 0)]
    assert all(x["role"] == "sub" and x["subscriber"] == 2 for x in s)
    m = p.summarize(text)
    assert (m["samples_per_s"], m["throughput_mbps"], m["lost_samples"], m["total_samples"]) == (
        1963048, 1570.4, 0, 5887953)
    assert m["lost_percent"] == 0.0 and m["latency_mean_us"] is None


def test_csv_without_headers():
    text = read("perftest-csv-noheaders-sub.txt")
    s = p.parse(text)
    assert [x["samples_per_s"] for x in s] == [2118012, 2249222, 2709777]
    m = p.summarize(text)
    assert (m["samples_per_s"], m["throughput_mbps"], m["length_bytes"]) == (2393652, 612.8, 32)


def test_v4_headers():
    text = ("One-way Latency Summary:\n"
            "Sample Size (Bytes), Ave (μs), Std (μs), Min (μs), Max (μs), 50% (μs), 90% (μs), 99% (μs), "
            "99.99% (μs), 99.9999% (μs), CPU (%)\n"
            "          1024,     44.5,      3.1,     40.0,     90.0,     44.0,     47.0,     60.0,     90.0,     90.0, 12.5\n"
            "Throughput Summary:\n"
            "Sample Size (Bytes), Total Samples, Avg Samples/s,    Avg Mbps, Lost Samples, Lost Samples (%)\n"
            "          1024,      1000000,        100000,       819.2,           12,             0.00\n")
    m = p.summarize(text)
    assert (m["latency_mean_us"], m["latency_p90_us"], m["cpu_pub_pct"]) == (44.5, 47.0, 12.5)
    assert (m["samples_per_s"], m["throughput_mbps"], m["lost_samples"]) == (100000, 819.2, 12)


def test_legacy():
    pub = read("perftest-legacy-pub.txt")
    s = p.parse(pub)
    assert [x["latency_mean_us"] for x in s] == [69, 92]
    m = p.summarize(pub)
    assert (m["latency_mean_us"], m["latency_p50_us"], m["latency_p99_us"], m["length_bytes"]) == (126, 69, 505, 100)
    sub = read("perftest-legacy-sub.txt")
    assert [x["throughput_mbps"] for x in p.parse(sub)] == [685.8, 691.3]
    m = p.summarize(sub)
    assert (m["samples_per_s"], m["throughput_mbps"], m["cpu_sub_pct"], m["length_bytes"]) == (2641911, 676.3, 21.36, 32)


def test_json():
    sub = read("perftest-json-sub.txt")
    s = p.parse(sub)
    assert [(x["samples_per_s"], x["throughput_mbps"]) for x in s] == [(2018963, 1615.2), (2143640, 1714.9)]
    m = p.summarize(sub)
    assert (m["samples_per_s"], m["throughput_mbps"], m["lost_samples"]) == (2055211, 1644.2, 0)
    m = p.summarize(read("perftest-json-pub.txt"))
    assert (m["latency_mean_us"], m["latency_p50_us"], m["latency_max_us"], m["length_bytes"]) == (71.38, 55, 159, 100)


def test_garbage():
    with pytest.raises(p.PerftestParseError):
        p.summarize("hello\nworld\n")
    with pytest.raises(p.PerftestParseError):
        p.summarize("{not json")
