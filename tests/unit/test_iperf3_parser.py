"""The iperf3 parser on real iperf 3.12 client JSON and on outputs of older versions reconstructed from their source
(tests/data/iperf3/README.md says which is which). Expected values are computed here from each file's raw fields
(bytes*8/seconds of the receiver's sum, and so on), not taken from the parser."""

import importlib.util
import json
import os
from pathlib import Path

import pytest

from edgebench.drivers import iperf3
from edgebench.errors import EdgebenchError

DATA = Path(__file__).parents[1] / "data" / "iperf3"


def load(name: str) -> tuple[str, dict]:
    text = (DATA / name).read_text()
    return text, json.loads(text)


def mbps(s: dict) -> float:
    """A sum's rate from its byte count and duration (the parser reads bits_per_second and checks it against this)."""
    return s["bytes"] * 8 / s["seconds"] / 1e6


def sender_rtt(end: dict, sender: bool = True) -> float | None:
    """Mean of mean_rtt over the streams whose sender side says `sender`, zeros (no sample) left out."""
    rtts = [s["sender"]["mean_rtt"] for s in end["streams"]
            if s["sender"]["sender"] is sender and s["sender"]["mean_rtt"] > 0]
    return sum(rtts) / len(rtts) if rtts else None


def approx(x):
    return pytest.approx(x, rel=1e-9)


def check_tcp(m: dict, end: dict, suffix: str = "", prefix: str = "") -> None:
    sent, received = end["sum_sent" + suffix], end["sum_received" + suffix]
    assert m[prefix + "throughput_mbps"] == m[prefix + "received_mbps"] == approx(mbps(received))
    assert m[prefix + "sent_mbps"] == approx(mbps(sent))
    assert m[prefix + "received_bytes"] == received["bytes"] and m[prefix + "sent_bytes"] == sent["bytes"]
    assert m[prefix + "retransmits"] == sent.get("retransmits")
    for k in ("jitter_ms", "lost_packets", "packets", "lost_percent"):
        assert m[prefix + k] is None


def check_udp(m: dict, end: dict, suffix: str = "", prefix: str = "") -> None:
    sent, received = end["sum_sent" + suffix], end["sum_received" + suffix]
    assert m[prefix + "throughput_mbps"] == m[prefix + "received_mbps"] == approx(mbps(received))
    assert m[prefix + "sent_mbps"] == approx(mbps(sent))
    assert m[prefix + "received_bytes"] == received["bytes"] <= sent["bytes"]
    assert m[prefix + "lost_packets"] == received["lost_packets"] and m[prefix + "packets"] == received["packets"]
    assert m[prefix + "lost_percent"] == approx(100 * received["lost_packets"] / sent["packets"])
    assert m[prefix + "jitter_ms"] == received["jitter_ms"]
    assert m[prefix + "retransmits"] is None and m[prefix + "mean_rtt_us"] is None


def check_common(m: dict, doc: dict, direction: str) -> None:
    cpu = doc["end"]["cpu_utilization_percent"]
    assert m["cpu_host_pct"] == cpu["host_total"] and m["cpu_remote_pct"] == cpu["remote_total"]
    assert m["direction"] == direction
    assert (m["reverse"], m["bidir"]) == (direction == "reverse", direction == "bidir")
    assert m["iperf3_version"] == doc["start"]["version"].split()[1]
    assert m["protocol"] == doc["start"]["test_start"]["protocol"].lower()


# --- real iperf 3.12 captures --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["iperf3-3.12-tcp-client.json", "iperf3-3.12-tcp-netns-client.json"])
def test_tcp(name):
    text, doc = load(name)
    m = iperf3.parse_metrics(text)
    check_tcp(m, doc["end"])
    check_common(m, doc, "forward")
    assert m["mean_rtt_us"] == sender_rtt(doc["end"]) and m["mean_rtt_us"] > 0
    assert isinstance(m["retransmits"], int)


@pytest.mark.parametrize("name", ["iperf3-3.12-udp-client.json", "iperf3-3.12-udp-100M-client.json",
                                  "iperf3-3.12-udp-get-server-output-client.json"])
def test_udp(name):
    text, doc = load(name)
    m = iperf3.parse_metrics(text)
    check_udp(m, doc["end"])
    check_common(m, doc, "forward")


def test_udp_1g_pod_network_capture_with_loss():
    text, doc = load("iperf3-3.12-udp-client.json")
    m = iperf3.parse_metrics(text)
    r = doc["end"]["sum_received"]
    assert m["lost_packets"] == r["lost_packets"] > 0
    assert m["throughput_mbps"] == approx(r["bytes"] * 8 / r["seconds"] / 1e6)
    assert m["throughput_mbps"] < m["sent_mbps"]


@pytest.mark.parametrize("name", ["iperf3-3.12-udp-loss-client.json",
                                  "iperf3-3.12-udp-loss-get-server-output-client.json"])
def test_udp_with_heavy_loss_reports_the_receivers_rate(name):
    text, doc = load(name)
    m = iperf3.parse_metrics(text)
    check_udp(m, doc["end"])
    check_common(m, doc, "forward")
    # 100 Mbit/s offered through a 20 Mbit/s shaper: end.sum still carries the sender's rate in 3.12
    assert m["lost_percent"] > 50
    assert m["throughput_mbps"] < 25 < 90 < doc["end"]["sum"]["bits_per_second"] / 1e6
    assert m["throughput_mbps"] != pytest.approx(doc["end"]["sum"]["bits_per_second"] / 1e6, rel=0.1)


def test_reverse_tcp_has_no_rtt_but_the_servers_retransmits():
    text, doc = load("iperf3-3.12-reverse-tcp-client.json")
    m = iperf3.parse_metrics(text)
    check_tcp(m, doc["end"])
    check_common(m, doc, "reverse")
    assert all(s["sender"]["mean_rtt"] == 0 for s in doc["end"]["streams"])  # what the client writes
    assert m["mean_rtt_us"] is None
    assert m["retransmits"] == doc["end"]["sum_sent"]["retransmits"]  # the server's, via the results exchange


def test_reverse_tcp_without_server_retransmits_reports_none():
    text, doc = load("iperf3-3.12-reverse-tcp-client.json")
    del doc["end"]["sum_sent"]["retransmits"]  # a server that does not report retransmits (not Linux)
    assert iperf3.parse_metrics(json.dumps(doc))["retransmits"] is None


def test_reverse_tcp_takes_rtt_from_the_servers_own_json():
    text, doc = load("iperf3-3.12-reverse-tcp-get-server-output-client.json")
    m = iperf3.parse_metrics(text)
    check_tcp(m, doc["end"])
    check_common(m, doc, "reverse")
    assert m["mean_rtt_us"] == sender_rtt(doc["server_output_json"]["end"]) > 0


def test_reverse_udp():
    text, doc = load("iperf3-3.12-reverse-udp-client.json")
    m = iperf3.parse_metrics(text)
    check_udp(m, doc["end"])
    check_common(m, doc, "reverse")


def test_bidir_tcp_reports_both_directions_and_rtt_only_where_measured():
    text, doc = load("iperf3-3.12-bidir-tcp-client.json")
    m = iperf3.parse_metrics(text)
    end = doc["end"]
    check_tcp(m, end)
    check_tcp(m, end, "_bidir_reverse", "reverse_")
    check_common(m, doc, "bidir")
    assert m["mean_rtt_us"] == sender_rtt(end, True) > 0  # client -> server streams only
    assert m["reverse_mean_rtt_us"] is None  # the server's sending side is not in the client's JSON


def test_bidir_udp():
    text, doc = load("iperf3-3.12-bidir-udp-client.json")
    m = iperf3.parse_metrics(text)
    check_udp(m, doc["end"])
    check_udp(m, doc["end"], "_bidir_reverse", "reverse_")
    check_common(m, doc, "bidir")


def test_four_parallel_streams():
    text, doc = load("iperf3-3.12-p4-tcp-client.json")
    m = iperf3.parse_metrics(text)
    end = doc["end"]
    check_tcp(m, end)
    check_common(m, doc, "forward")
    assert len(end["streams"]) == 4
    assert m["received_bytes"] == sum(s["receiver"]["bytes"] for s in end["streams"])
    assert m["retransmits"] == sum(s["sender"]["retransmits"] for s in end["streams"])
    assert m["mean_rtt_us"] == pytest.approx(sum(s["sender"]["mean_rtt"] for s in end["streams"]) / 4)


@pytest.mark.parametrize("name, field, value", [("iperf3-3.12-bytes-10M-tcp-client.json", "bytes", 10 * 2**20),
                                                ("iperf3-3.12-blocks-100-tcp-client.json", "blocks", 100)])
def test_byte_and_block_limited_tcp(name, field, value):
    text, doc = load(name)
    assert doc["start"]["test_start"][field] == value
    m = iperf3.parse_metrics(text)
    check_tcp(m, doc["end"])
    check_common(m, doc, "forward")


def test_udp_run_whose_receiver_got_nothing_is_an_error_not_zero():
    text, doc = load("iperf3-3.12-udp-blocks-1-client.json")
    assert doc["end"]["sum_received"]["bytes"] == 0 and doc["end"]["sum"]["bits_per_second"] > 0
    with pytest.raises(iperf3.Iperf3Error, match=r"end\.sum_received\.bytes is 0"):
        iperf3.parse_metrics(text)


@pytest.mark.parametrize("name", ["iperf3-3.12-error-client.json", "iperf3-3.12-conn-refused-client.json"])
def test_connection_refused_raises_with_iperf3s_message(name):
    with pytest.raises(iperf3.Iperf3Error, match="unable to connect to server: Connection refused"):
        iperf3.parse_metrics(load(name)[0])


# --- reconstructed outputs of older versions ------------------------------------------------------------------------

def test_3_7_tcp_without_snd_wnd_fields():
    text, doc = load("iperf3-3.7-tcp-client.reconstructed.json")
    m = iperf3.parse_metrics(text)
    check_tcp(m, doc["end"])
    check_common(m, doc, "forward")
    assert m["iperf3_version"] == "3.7" and m["mean_rtt_us"] == sender_rtt(doc["end"])


@pytest.mark.parametrize("name", ["iperf3-3.9-udp-loss-client.reconstructed.json",
                                  "iperf3-3.10-udp-loss-client.reconstructed.json"])
def test_udp_before_3_11_never_reports_the_senders_rate_as_received(name):
    text, doc = load(name)
    assert "sum_received" not in doc["end"] and doc["end"]["sum"]["bits_per_second"] > 90e6  # the sender's
    with pytest.raises(iperf3.Iperf3Error, match="receiver's rate is not in this output.*--get-server-output"):
        iperf3.parse_metrics(text)


def test_udp_reverse_before_3_11_is_refused():
    with pytest.raises(iperf3.Iperf3Error, match="receiver's rate is not in this output.*client was the receiver"):
        iperf3.parse_metrics(load("iperf3-3.10-reverse-udp-client.reconstructed.json")[0])


def test_udp_before_3_11_with_a_3_10_servers_output_is_refused():
    text, doc = load("iperf3-3.10-udp-loss-get-server-output-client.reconstructed.json")
    assert doc["server_output_json"]["end"]["sum"]["bytes"] == 0  # the 3.10 server's UDP sum
    with pytest.raises(iperf3.Iperf3Error, match="server's own JSON .* has no sum_received"):
        iperf3.parse_metrics(text)


def test_udp_3_10_client_takes_the_receiver_from_a_3_12_servers_output():
    text, doc = load("iperf3-3.10-client-3.12-server-udp-loss-get-server-output-client.reconstructed.json")
    m = iperf3.parse_metrics(text)
    server = doc["server_output_json"]["end"]["sum_received"]
    client_sum = doc["end"]["sum"]
    assert m["throughput_mbps"] == approx(mbps(server)) and m["throughput_mbps"] < 25
    assert m["sent_mbps"] == approx(client_sum["bits_per_second"] / 1e6)  # the sender's rate, as sent
    assert m["lost_packets"] == server["lost_packets"] and m["jitter_ms"] == server["jitter_ms"]
    assert m["lost_percent"] == approx(100 * server["lost_packets"] / server["packets"])
    assert m["iperf3_version"] == "3.10"


def test_bidir_before_3_11_is_refused():
    text = load("iperf3-3.10-bidir-tcp-client.reconstructed.json")[0]
    assert text.count('"sum_sent":') == 2  # both directions under one name
    with pytest.raises(iperf3.Iperf3Error, match="both directions"):
        iperf3.parse_metrics(text)
    at = text.rindex('"streams":')  # end.streams; without it, the duplicated sums themselves are refused
    with pytest.raises(iperf3.Iperf3Error, match=r"end\.sum_sent occurs more than once"):
        iperf3.parse_metrics(text[:at] + '"no_streams":' + text[at + len('"streams":'):])


def test_reconstructed_fixtures_are_what_reconstruct_py_writes():
    spec = importlib.util.spec_from_file_location("reconstruct", DATA / "reconstruct.py")
    reconstruct = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reconstruct)
    for path in DATA.glob("iperf3-3.12-*.json"):  # its cJSON layout reproduces real captures byte for byte
        assert reconstruct.dump(reconstruct.load_doc(path)) + "\n" == path.read_text(), path.name
    built = reconstruct.build()
    assert sorted(built) == sorted(p.name for p in DATA.glob("*.reconstructed.json"))
    for name, text in built.items():
        assert (DATA / name).read_text() == text, f"{name} is stale: run tests/data/iperf3/reconstruct.py"


def test_every_fixture_is_tested_here():
    source = Path(__file__).read_text()
    for path in DATA.glob("*.json"):
        assert path.name in source, f"{path.name} has no test in {Path(__file__).name}"


# --- rules on broken or absurd values --------------------------------------------------------------------------------

def mutated(name: str, change) -> str:
    doc = json.loads((DATA / name).read_text())
    change(doc)
    return json.dumps(doc)


UDP = "iperf3-3.12-udp-loss-client.json"
TCP = "iperf3-3.12-tcp-netns-client.json"


@pytest.mark.parametrize("name, change, words", [
    (UDP, lambda d: d["end"]["sum_received"].update(jitter_ms=6e8), r"sum_received\.jitter_ms .* outside"),
    (UDP, lambda d: d["end"]["sum_received"].update(lost_percent=101.0), r"sum_received\.lost_percent .* outside"),
    (UDP, lambda d: d["end"]["sum_received"].update(lost_percent=5.0), r"lost_percent = 5.0 does not match"),
    (UDP, lambda d: d["end"]["sum_received"].update(lost_packets=10**9), r"lost_packets = \d+ exceeds packets"),
    (UDP, lambda d: d["end"]["sum_received"].update(bytes=2 * d["end"]["sum_sent"]["bytes"], bits_per_second=2 * (
        d["end"]["sum_sent"]["bytes"] * 8 / d["end"]["sum_received"]["seconds"])), r"exceeds the sender's"),
    (TCP, lambda d: d["end"]["sum_received"].update(bits_per_second=2e13), r"bits_per_second .* outside"),
    (TCP, lambda d: d["end"]["sum_received"].update(bytes=d["end"]["sum_received"]["bytes"] // 2),
     r"sum_received\.bits_per_second = .* does not match bytes\*8/seconds"),
    (TCP, lambda d: d["end"]["sum_received"].update(seconds=0), r"no rate can be derived"),
    (TCP, lambda d: d["end"]["sum_received"].update(seconds=-1.0), r"sum_received\.seconds .* outside"),
    (TCP, lambda d: d["end"]["sum_sent"].update(retransmits=-3), r"sum_sent\.retransmits .* outside"),
    (TCP, lambda d: d["end"]["sum_sent"].update(retransmits=True), r"sum_sent\.retransmits must be a number"),
    (TCP, lambda d: d["end"]["streams"][0]["sender"].update(mean_rtt=10**12), r"mean_rtt .* outside"),
    (TCP, lambda d: d["end"]["cpu_utilization_percent"].update(host_total=-5), r"host_total .* outside"),
    (TCP, lambda d: d["end"]["sum_received"].update(bytes=0, bits_per_second=0), r"bytes is 0"),
    (TCP, lambda d: d["end"]["sum_received"].update(bytes="1000"), r"sum_received\.bytes must be a number, got str"),
    (TCP, lambda d: d["end"].update(sum_received=[1, 2]), r"end\.sum_received must be a JSON object, got array"),
    (TCP, lambda d: d["end"].update(streams={}), r"end\.streams must be a JSON array"),
    (TCP, lambda d: d["end"]["streams"].append("x"), r"end\.streams\[1\] must be a JSON object"),
    (TCP, lambda d: d["end"].pop("sum_received"), r"end\.sum_received is missing"),
    (TCP, lambda d: d.update(end={}), r"empty end section"),
    (TCP, lambda d: d["start"]["test_start"].update(protocol=None), r"protocol must be .* got null"),
    (TCP, lambda d: d["start"]["test_start"].pop("protocol"), r"protocol must be .* got missing"),
    (TCP, lambda d: d["start"]["test_start"].update(protocol=["TCP"]), r"protocol must be .* got array"),
    (TCP, lambda d: d["start"]["test_start"].update(protocol="SCTP"), r"protocol must be"),
    (TCP, lambda d: d["start"]["test_start"].update(reverse=1), r"start\.test_start\.reverse = 1"),
    (TCP, lambda d: d["start"]["test_start"].update(reverse="yes"), r"reverse must be 0/1"),
    (TCP, lambda d: d["start"].update(test_start="TCP"), r"start\.test_start must be a JSON object, got string"),
    (TCP, lambda d: d["start"].update(version=5), r"start\.version must be a short string"),
    (TCP, lambda d: d.update(error=None), r"iperf3: \(an error field of type null\)"),
])
def test_absurd_or_mistyped_values_raise_naming_the_field(name, change, words):
    with pytest.raises(iperf3.Iperf3Error, match=words):
        iperf3.parse_metrics(mutated(name, change))


def test_nan_and_infinity_literals_are_rejected():
    text = (DATA / TCP).read_text()
    for constant in ("NaN", "Infinity", "-Infinity"):
        bad = text.replace('"host_total":\t', f'"host_total":\t{constant}, "x":\t', 1)
        with pytest.raises(iperf3.Iperf3Error, match=f"non-JSON constant {constant}"):
            iperf3.parse_metrics(bad)


def test_udp_flipped_to_tcp_and_back_never_mixes_fields():
    m = iperf3.parse_metrics(mutated(UDP, lambda d: d["start"]["test_start"].update(protocol="TCP")))
    assert m["protocol"] == "tcp" and m["jitter_ms"] is None  # a UDP sum read as TCP is still bytes/seconds
    with pytest.raises(iperf3.Iperf3Error, match=r"sum_received\.packets is missing"):
        iperf3.parse_metrics(mutated(TCP, lambda d: d["start"]["test_start"].update(protocol="UDP")))


@pytest.mark.parametrize("text", ["", "not json", "[1,2]", '{"end": {}}', "null", '"iperf3"', "{" * 5000,
                                  '{"start": {"test_start": {"protocol": "TCP"}}, "end": {"sum_sent": {}}}'])
def test_garbage_raises(text):
    with pytest.raises(iperf3.Iperf3Error):
        iperf3.parse_metrics(text)


def test_errors_are_edgebench_errors():
    assert issubclass(iperf3.Iperf3Error, EdgebenchError)
    with pytest.raises(EdgebenchError):
        iperf3.parse_metrics(b"{}")  # not text


def test_normalize_wraps_parse():
    text = (DATA / UDP).read_text()
    assert iperf3.parse(text) == {"tool": "iperf3", "metrics": iperf3.parse_metrics(text), "samples": []}


def test_metrics_keep_the_warehouse_fields():
    m = iperf3.parse_metrics((DATA / TCP).read_text())
    for key in ("throughput_mbps", "sent_mbps", "received_mbps", "retransmits", "jitter_ms", "lost_packets",
                "packets", "lost_percent", "cpu_host_pct", "cpu_remote_pct", "mean_rtt_us", "protocol"):
        assert key in m


def test_client_command():
    assert iperf3.client_cmd("10.0.0.1", 5201, "udp", 1300, 3, "1G") == [
        "iperf3", "--client", "10.0.0.1", "--port", "5201", "--json", "--time", "3", "--length", "1300",
        "--udp", "--bitrate", "1G"]
    assert "--udp" not in iperf3.client_cmd("10.0.0.1", 5201, "tcp", 131072, 3)


def test_a_kubectl_exec_stream_that_breaks_is_a_failed_run_saying_so(tmp_path, monkeypatch):
    """Killing a node's containerd or kubelet mid-run (the local lab's fault test): `kubectl exec` exits 0 with no
    output and no message. The run fails naming the pod, the node and the likely cause, not 'output is not JSON'."""
    from edgebench.drivers.iperf3 import run as drv
    from edgebench.substrates.clusters.workload_pods import ClusterEndpoint

    fake = tmp_path / "kubectl"
    fake.write_text("#!/bin/sh\nexit 0\n")  # the stream ended: nothing, exit 0
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(drv, "_wait_listening", lambda *a, **k: None)

    class Server:
        def cmd(self, argv):
            return ["sh", "-c", "echo '{}'"]

    client = ClusterEndpoint("edgebench-bench", "10.244.1.2", "lab-w1", "eb-w1-lab-w1", str(tmp_path / "kubeconfig"))
    raw, metrics, error = drv.measure(client, Server(), "10.244.2.2", 5201, "tcp", 131072, 1)
    assert metrics is None and raw["iperf3-server.json"].strip() == b"{}"
    assert error.startswith("iperf3 client printed nothing (kubectl exec into pod eb-w1-lab-w1 on node lab-w1 exited 0")
    assert "kubelet or container runtime" in error

    fake.write_text("#!/bin/sh\necho 'error: unable to upgrade connection: container not found' >&2\nexit 1\n")
    _, _, error = drv.measure(client, Server(), "10.244.2.2", 5201, "tcp", 131072, 1)
    assert error == "iperf3 client failed (exit code 1): error: unable to upgrade connection: container not found"
