"""RTI Perftest parser on outputs copied from rticommunity/rtiperftest
srcDoc/designDocuments/280-ouput-format.md (tests/data/perftest-*.txt; the JSON ones carry no comment) and on outputs
reconstructed from the Perftest source's printf formats (tests/data/perftest/*.reconstructed.txt, see its README.md).
Expected values of the reconstructed files are read from the files here with plain str/csv/json code, not with the
parser."""

import csv
import io
import json
import math
from pathlib import Path

import pytest

from edgebench.drivers import perftest as p
from edgebench.drivers.ddsperf import SAMPLE_KEYS
from edgebench.errors import EdgebenchError

DATA = Path(__file__).parents[1] / "data"
RECON = DATA / "perftest"


def read(name):
    return (DATA / name).read_text()


def test_csv_latency_with_cpu():
    text = read("perftest-csv-latency-pub.txt")
    s = p.parse_samples(text)
    assert [x["latency_mean_us"] for x in s] == [67, 52, 45]
    # one row per pong: its latency, count 1; Perftest's running min/max (67/544) are not the row's
    assert s[0]["role"] == "ping" and s[0]["latency_count"] == 1 and s[0]["t_s"] is None
    assert s[0]["latency_min_us"] is None and s[0]["latency_max_us"] is None
    assert list(s[0]) == list(SAMPLE_KEYS) and s[0]["latency_p50_us"] is None
    m = p.summarize(text)
    assert (m["latency_mean_us"], m["latency_std_us"], m["latency_min_us"], m["latency_max_us"]) == (98, 129.3, 45, 544)
    assert (m["latency_p50_us"], m["latency_p90_us"], m["latency_p99_us"]) == (55, 88, 544)
    assert m["cpu_pub_pct"] == 26.64 and m["length_bytes"] == 100 and m["throughput_mbps"] is None


def test_csv_throughput():
    text = read("perftest-csv-throughput-sub.txt")
    s = p.parse_samples(text, subscriber=2)
    assert [(x["samples_per_s"], x["throughput_mbps"], x["lost_samples"]) for x in s] == [
        (2046014, 1636.8, 0), (2072794, 1658.2, 0)]
    assert all(x["role"] == "sub" and x["subscriber"] == 2 for x in s)
    m = p.summarize(text)
    assert (m["samples_per_s"], m["throughput_mbps"], m["lost_samples"], m["total_samples"]) == (
        1963048, 1570.4, 0, 5887953)
    assert m["lost_percent"] == 0.0 and m["latency_mean_us"] is None


def test_csv_without_headers():
    text = read("perftest-csv-noheaders-sub.txt")
    s = p.parse_samples(text)
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
    s = p.parse_samples(pub)
    assert [x["latency_mean_us"] for x in s] == [69, 92]
    m = p.summarize(pub)
    assert (m["latency_mean_us"], m["latency_p50_us"], m["latency_p99_us"], m["length_bytes"]) == (126, 69, 505, 100)
    sub = read("perftest-legacy-sub.txt")
    assert [x["throughput_mbps"] for x in p.parse_samples(sub)] == [685.8, 691.3]
    m = p.summarize(sub)
    assert (m["samples_per_s"], m["throughput_mbps"], m["cpu_sub_pct"], m["length_bytes"]) == (2641911, 676.3, 21.36, 32)


def test_json():
    sub = read("perftest-json-sub.txt")
    s = p.parse_samples(sub)
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


# --- reconstructed outputs of versions edgebench cannot run ---------------------------------------------------------

def recon(name):
    return (RECON / name).read_text(encoding="utf-8")


def after(tokens, label, k=1):
    """The number k tokens after `label` in a whitespace-split line."""
    return float(tokens[tokens.index(label) + k].rstrip("%").lstrip("("))


def legacy_expect(text):
    """Publisher (latency) or subscriber (throughput) numbers of a legacy output, read with str.split()."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    out = {}
    for ln in lines:
        t = ln.split()
        if ln.startswith("Length:") and "Latency:" in t:
            out["summary"] = {k: after(t, lab) for k, lab in (
                ("ave", "Ave"), ("min", "Min"), ("max", "Max"), ("p50", "50%"), ("p90", "90%"), ("p99", "99%"))}
            out["summary"]["length"] = after(t, "Length:")
            cpu = [x for x in t if x.startswith("CPU")]
            out["summary"]["cpu"] = after(t, cpu[0]) if cpu else None
        elif ln.startswith("Length:") and "Packets:" in t:
            out["summary"] = {"sps": after(t, "Packets/s(ave):"), "mbps": after(t, "Mbps(ave):"),
                              "lost": after(t, "Lost:"), "total": after(t, "Packets:")}
            out["summary"]["cpu"] = after(t, [x for x in t if x.startswith("CPU")][0]) if "CPU" in ln else None
        elif ln.lower().startswith(("one way latency:", "one-way latency:")):
            out.setdefault("intervals", []).append(after(t, "Latency:"))
        elif ln.startswith("Packets:"):
            out.setdefault("intervals", []).append(
                (after(t, "Packets/s:"), after(t, "Mbps:"), after(t, "Lost:")))
    return out


@pytest.mark.parametrize("name", ["perftest-2.3.2-legacy-cpu-pub.reconstructed.txt",
                                  "perftest-3.0.1-legacy-pub.reconstructed.txt",
                                  "perftest-4.3-legacy-cpu-pub.reconstructed.txt"])
def test_legacy_publisher_versions(name):
    """2.x/3.0.1 put two spaces before "Std" (and no unit after the interval's Max), 4.x writes "One-Way" and μs."""
    text = recon(name)
    exp = legacy_expect(text)
    rec = p.parse(text)
    m = rec["metrics"]
    e = exp["summary"]
    assert (m["latency_mean_us"], m["latency_min_us"], m["latency_max_us"]) == (e["ave"], e["min"], e["max"])
    assert (m["latency_p50_us"], m["latency_p90_us"], m["latency_p99_us"]) == (e["p50"], e["p90"], e["p99"])
    assert m["cpu_pub_pct"] == e["cpu"] and m["latency_count"] is None
    assert m["throughput_mbps"] is None and m["rss_pub_mb"] is None
    assert [s["latency_mean_us"] for s in rec["samples"]] == exp["intervals"]
    assert all(s["role"] == "ping" and s["latency_count"] == 1 and s["subscriber"] == 1 for s in rec["samples"])
    assert p.summarize(text)["length_bytes"] == e["length"]


def test_legacy_301_two_spaces_before_std_regression():
    line = "One way Latency:     52 us  Ave     60 us  Std    7.5 us  Min     52 us  Max     67 \n"
    assert "us  Std" in line
    assert [s["latency_mean_us"] for s in p.parse_samples(line)] == [52.0]


@pytest.mark.parametrize("name", ["perftest-2.3.2-legacy-cpu-sub.reconstructed.txt",
                                  "perftest-3.0.1-legacy-cpu-sub.reconstructed.txt"])
def test_legacy_subscriber_versions(name):
    text = recon(name)
    exp = legacy_expect(text)
    rec = p.parse(text, subscriber=3)
    m, e = rec["metrics"], exp["summary"]
    assert (m["samples_per_s"], m["throughput_mbps"], m["per_subscriber_mbps"]) == (e["sps"], e["mbps"], e["mbps"])
    assert (m["lost_samples"], m["cpu_sub_pct"]) == (e["lost"], e["cpu"])
    rows = rec["samples"]
    assert [(s["samples_per_s"], s["throughput_mbps"]) for s in rows] == [(a, b) for a, b, _ in exp["intervals"]]
    running = [c for *_, c in exp["intervals"]]
    assert [s["lost_samples"] for s in rows] == [b - a for a, b in zip([0.0] + running, running)]
    assert [s["t_s"] for s in rows] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert all(s["role"] == "sub" and s["subscriber"] == 3 for s in rows)


def csv_tables(text):
    """{header tuple: [row dicts]} of a Perftest CSV output, read with the csv module."""
    tables, header = {}, None
    for row in csv.reader(io.StringIO(text)):
        cells = [c.strip() for c in row]
        if not cells or not cells[0]:
            continue
        if "(Bytes)" in cells[0]:
            header = tuple(cells)
            tables[header] = []
        elif header and cells[0][0].isdigit():
            tables[header].append(dict(zip(header, cells)))
    return tables


def one(tables, first_col, needle):
    (rows,) = [r for h, r in tables.items() if h[0] == first_col and needle in h]
    return rows


@pytest.mark.parametrize("name", ["perftest-4.3-csv-cpu-pub.reconstructed.txt",
                                  "perftest-4.3-csv-noprint-serialization-pub.reconstructed.txt"])
def test_csv_4x_publisher(name):
    text = recon(name)
    t = csv_tables(text)
    (summ,) = one(t, "Sample Size (Bytes)", "50% (μs)")
    rec = p.parse(text)
    m = rec["metrics"]
    assert m["latency_mean_us"] == float(summ["Ave (μs)"]) and m["latency_p90_us"] == float(summ["90% (μs)"])
    assert (m["latency_min_us"], m["latency_max_us"]) == (float(summ["Min (μs)"]), float(summ["Max (μs)"]))
    assert m["latency_p99_us"] == float(summ["99% (μs)"])
    assert m["cpu_pub_pct"] == (float(summ["CPU (%)"]) if "CPU (%)" in summ else None)
    if "noprint" in name:
        assert "Summary" not in text and rec["samples"] == []  # -noPrint: no title, no intervals
    else:
        ints = one(t, "Length (Bytes)", "Latency (μs)")
        assert [s["latency_mean_us"] for s in rec["samples"]] == [float(r["Latency (μs)"]) for r in ints]


@pytest.mark.parametrize("name", ["perftest-4.3-csv-sub.reconstructed.txt",
                                  "perftest-4.3-csv-noprint-cpu-sub.reconstructed.txt"])
def test_csv_4x_subscriber(name):
    text = recon(name)
    t = csv_tables(text)
    (summ,) = one(t, "Sample Size (Bytes)", "Total Samples")
    rec = p.parse(text)
    m = rec["metrics"]
    assert m["samples_per_s"] == float(summ["Avg Samples/s"]) and m["throughput_mbps"] == float(summ["Avg Mbps"])
    assert m["lost_samples"] == int(summ["Lost Samples"])
    assert m["cpu_sub_pct"] == (float(summ["CPU (%)"]) if "CPU (%)" in summ else None)
    if "noprint" in name:
        assert rec["samples"] == []
    else:
        ints = one(t, "Length (Bytes)", "Samples/s")
        assert [(s["samples_per_s"], s["throughput_mbps"]) for s in rec["samples"]] == [
            (float(r["Samples/s"]), float(r["Mbps"])) for r in ints]
        assert sum(s["lost_samples"] for s in rec["samples"]) == int(ints[-1]["Lost Samples"])


def test_csv_3x_nanoclock_is_converted_to_microseconds():
    text = recon("perftest-3.3-csv-nanoclock-noprint-pub.reconstructed.txt")
    (summ,) = one(csv_tables(text), "Length (Bytes)", "50% (ns)")
    m = p.parse(text)["metrics"]
    assert m["latency_mean_us"] == pytest.approx(float(summ["Ave (ns)"]) / 1000)
    assert m["latency_p50_us"] == pytest.approx(float(summ["50% (ns)"]) / 1000)
    assert m["latency_max_us"] == pytest.approx(float(summ["Max (ns)"]) / 1000)


@pytest.mark.parametrize("name", ["perftest-4.3-json-cpu-pub.reconstructed.txt",
                                  "perftest-4.3-json-sub.reconstructed.txt",
                                  "perftest-4.3-json-noprint-sub.reconstructed.txt"])
def test_json_4x(name):
    text = recon(name)
    block = json.loads(text)["perftest"][0]
    summ = block["summary"]
    rec = p.parse(text)
    m = rec["metrics"]
    if "pub" in name:
        assert (m["latency_mean_us"], m["latency_p50_us"], m["latency_p99_us"], m["cpu_pub_pct"]) == (
            summ["latency_ave"], summ["latency_50"], summ["latency_99"], summ["CPU"])
        assert [s["latency_mean_us"] for s in rec["samples"]] == [i["latency"] for i in block["intervals"]]
    else:
        assert (m["samples_per_s"], m["throughput_mbps"], m["lost_samples"]) == (
            summ["packets/sAve"], summ["mbpsAve"], summ["lost"])
        assert [s["samples_per_s"] for s in rec["samples"]] == [i["packets/s"] for i in block.get("intervals", [])]


def test_error_class():
    assert issubclass(p.PerftestParseError, EdgebenchError) and issubclass(p.PerftestParseError, ValueError)


@pytest.mark.parametrize("text, words", [
    ('{"an": "object"}', "must be an object {\"perftest\""),
    ("[1, 2]", "not a list"),
    ('{"perftest": {"length": 100}}', "must be a list"),
    ('{"perftest": [5]}', "perftest[0] must be an object"),
    ('{"perftest": [{"length": 100, "summary": []}]}', "summary must be an object"),
    ('{"perftest": [{"length": 100, "intervals": {}}]}', "intervals must be a list"),
    ('{"perftest": [{"length": 100, "summary": {"latency_ave": "fast"}}]}', "not a number"),
    ('{"perftest": [{"length": 100, "summary": {"latency_ave": true}}]}', "not a number"),
    ('{"perftest": [{"length": 100, "summary": {"packets": 1, "packets/sAve": 1e400, "mbpsAve": 1, "lost": 0}}]}',
     "infinite"),
    ('{"perftest": [{"length": 100, "summary": {"packets": 10, "packets/sAve": 5, "mbpsAve": NaN, "lost": 0}}]}',
     "average Mbps is NaN"),
    ('{"perftest": []}', "no latency or throughput results"),
    ("null", "no latency or throughput results"),
    ("{not json", "does not parse"),
])
def test_json_shapes_are_parse_errors(text, words):
    with pytest.raises(p.PerftestParseError) as e:
        p.parse(text)
    assert words in str(e.value)


@pytest.mark.parametrize("old, new, words", [
    ("Ave    126 us", "Ave    nan us", "mean latency (us) is NaN"),
    ("Min     47 us", "Min     -47 us", "minimum latency (us) is negative"),
    ("99%    505 us", "99%    1e30 us", "99th percentile latency (us) 1e+30 is outside"),
    ("50%     69 us", "50%     abc us", "'abc', not a number"),
    ("Max    505 us 50%", "Max     10 us 50%", "above maximum latency"),
])
def test_bad_numbers_name_the_field(old, new, words):
    text = read("perftest-legacy-pub.txt")
    assert old in text
    with pytest.raises(p.PerftestParseError) as e:
        p.summarize(text.replace(old, new))
    assert words in str(e.value) and "line" in str(e.value)


def test_csv_rows_must_fit_their_header_and_totals_never_go_down():
    text = read("perftest-csv-throughput-sub.txt")
    with pytest.raises(p.PerftestParseError, match="cells under a header"):
        p.parse_samples(text.replace("   1636.8,    1636.8,", "   1636.8,"))
    lines = text.splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if ln.lstrip().startswith("100,       3583926"))
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    with pytest.raises(p.PerftestParseError, match="went down"):
        p.parse_samples("".join(lines))


def test_nan_std_is_null_not_an_error():
    """C prints a NaN standard deviation (variance rounded below zero) as -nan; Perftest's std is no warehouse
    field, so it becomes null instead of failing the run."""
    text = read("perftest-legacy-pub.txt").replace("Std  146.0 us", "Std   -nan us")
    m = p.summarize(text)
    assert m["latency_std_us"] is None and m["latency_mean_us"] == 126
    js = recon("perftest-4.3-json-cpu-pub.reconstructed.txt").replace('"latency_std": 0.00', '"latency_std": -nan')
    assert p.parse(js)["metrics"]["latency_mean_us"] == json.loads(
        recon("perftest-4.3-json-cpu-pub.reconstructed.txt"))["perftest"][0]["summary"]["latency_ave"]


def test_role_and_scan_options():
    both = read("perftest-csv-latency-pub.txt") + read("perftest-csv-throughput-sub.txt")
    with pytest.raises(p.PerftestParseError, match="pass role=pub or role=sub"):
        p.parse(both)
    assert p.parse(both, role="ping")["metrics"]["latency_mean_us"] == 98
    assert p.parse(both, role="sub")["metrics"]["samples_per_s"] == 1963048
    with pytest.raises(p.PerftestParseError, match="no throughput results"):
        p.parse(read("perftest-csv-latency-pub.txt"), role="sub")
    with pytest.raises(p.PerftestParseError, match="role must be"):
        p.parse(both, role="pong")
    with pytest.raises(p.PerftestParseError, match="unknown option"):
        p.parse(both, colour="red")
    # -scan: two sizes need length=
    sub = read("perftest-csv-throughput-sub.txt")
    scan = sub + sub.replace("           100,", "          1024,").replace("for 100 Bytes", "for 1024 Bytes")
    with pytest.raises(p.PerftestParseError, match=r"2 sample sizes \[100, 1024\]"):
        p.parse(scan)
    assert p.parse(scan, length=100)["metrics"]["samples_per_s"] == 1963048
    assert len(p.parse(scan, length=1024)["samples"]) == 2
    with pytest.raises(p.PerftestParseError, match="not a size"):
        p.parse(scan, length=64)


def test_no_summary_and_cut_off_output():
    text = read("perftest-csv-throughput-sub.txt")
    no_summary = text.split("Throughput Summary:")[0]
    assert len(p.parse_samples(no_summary)) == 2
    with pytest.raises(p.PerftestParseError, match="no throughput summary"):
        p.parse(no_summary)
    # the final row without its newline is taken as cut off, whatever it holds
    cut = text.rstrip("\n")
    with pytest.raises(p.PerftestParseError, match="no newline"):
        p.parse(cut)
    assert p.summarize(text)["samples_per_s"] == 1963048


def test_normalize_shape():
    rec = p.parse(read("perftest-csv-latency-pub.txt"))
    assert set(rec) == {"tool", "metrics", "samples"} and rec["tool"] == "perftest"
    assert list(rec["metrics"]) == list(p.METRIC_KEYS)
    assert all(list(s) == list(SAMPLE_KEYS) for s in rec["samples"])
    assert all(v is None or math.isfinite(v) for v in rec["metrics"].values())


def test_legacy_nanoclock_lines_are_converted():
    """3.x builds with RTI_PERFTEST_NANO_CLOCK print legacy lines in ns (PERFT_TIME_UNIT "ns")."""
    text = ("One way Latency:  69000 ns Ave 287000 ns Std 218000.0 ns Min  69000 ns Max 505000 ns\n"
            "Length:   100 Latency: Ave 126000 ns Std 146000.0 ns Min  47000 ns Max 505000 ns 50%  69000 ns"
            " 90% 505000 ns 99% 505000 ns 99.99% 505000 ns 99.9999% 505000 ns\n")
    rec = p.parse(text)
    assert rec["metrics"]["latency_mean_us"] == 126 and rec["metrics"]["latency_p50_us"] == 69
    assert [s["latency_mean_us"] for s in rec["samples"]] == [69]
    with pytest.raises(p.PerftestParseError, match="not a well-formed"):
        p.parse(text.replace("Std 146000.0 ns", "Std 146000.0 us"))  # one unit per line
