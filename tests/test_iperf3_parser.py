"""The iperf3 parser on captured real output (iperf 3.12, tests/data)."""

from pathlib import Path

import pytest

from edgebench.drivers import iperf3

DATA = Path(__file__).parent / "data"


def test_tcp_client_output():
    m = iperf3.parse((DATA / "iperf3-3.12-tcp-client.json").read_text())
    assert m["protocol"] == "tcp"
    assert m["throughput_mbps"] == m["received_mbps"]
    assert 1000 < m["throughput_mbps"] < 100000
    assert m["sent_mbps"] >= m["received_mbps"] * 0.99
    assert isinstance(m["retransmits"], int)
    assert m["mean_rtt_us"] > 0
    assert m["jitter_ms"] is None and m["lost_percent"] is None
    assert 0 < m["cpu_host_pct"] <= 100 and 0 < m["cpu_remote_pct"] <= 100


def test_udp_client_output_uses_receiver_side():
    m = iperf3.parse((DATA / "iperf3-3.12-udp-client.json").read_text())
    assert m["protocol"] == "udp"
    assert m["throughput_mbps"] == pytest.approx(642.2126229901608)
    assert m["sent_mbps"] == pytest.approx(648.022279665805)
    assert m["lost_packets"] == 514 and m["packets"] == 57859
    assert m["lost_percent"] == pytest.approx(0.888351192533702)
    assert m["jitter_ms"] == pytest.approx(0.010216287903942425)
    assert m["retransmits"] is None


def test_error_output_raises_with_iperf3_message():
    with pytest.raises(iperf3.Iperf3Error, match="unable to connect to server: Connection refused"):
        iperf3.parse((DATA / "iperf3-3.12-error-client.json").read_text())


@pytest.mark.parametrize("text", ["", "not json", "[1,2]", '{"end": {}}'])
def test_garbage_raises(text):
    with pytest.raises(iperf3.Iperf3Error):
        iperf3.parse(text)


def test_udp_before_3_11_falls_back_to_sum():
    text = ('{"start":{"test_start":{"protocol":"UDP"}},"end":{"sum":{"bits_per_second":5e8,"jitter_ms":0.2,'
            '"lost_packets":3,"packets":100,"lost_percent":3.0}}}')
    m = iperf3.parse(text)
    assert m["throughput_mbps"] == 500 and m["lost_percent"] == 3.0 and m["jitter_ms"] == 0.2


def test_client_command():
    assert iperf3.client_cmd("10.0.0.1", 5201, "udp", 1300, 3, "1G") == [
        "iperf3", "--client", "10.0.0.1", "--port", "5201", "--json", "--time", "3", "--length", "1300",
        "--udp", "--bitrate", "1G"]
    assert "--udp" not in iperf3.client_cmd("10.0.0.1", 5201, "tcp", 131072, 3)
