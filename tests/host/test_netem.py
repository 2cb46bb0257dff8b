"""Link conditions: catalog, validation, golden tc renderings, and proofs on real namespaces.

The proofs build a 2-node mini topology (namespaces ebn-a, ebn-b joined by a veth pair, both ends `eth0`) and
apply each scenario to both nodes, as the testbed does. They use whatever mechanism this kernel offers (tc netem
or the userspace NFQUEUE emulator) and fail if neither is available.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time

import pytest

from edgebench.plan import netem
from edgebench.substrates.local import netem as netem_local
from edgebench.errors import SpecError

A, B = "ebn-a", "ebn-b"
IP_A, IP_B = "10.99.0.1", "10.99.0.2"


# catalog + validation ---------------------------------------------------------------------------------------
def test_table_iv_scenarios():
    expect = {"lcl": (0, 0, 0), "edg2.5": (1.25, 0.25, 0.02), "edg5": (2.5, 0.5, 0.04), "edg10": (5, 1, 0.08),
              "edg15": (7.5, 1.5, 0.12), "edg20": (10, 2, 0.16)}
    for name, (d, j, l) in expect.items():
        sc = netem.resolve(name)
        assert (sc.delay_ms, sc.jitter_ms, sc.loss_pct, sc.rate_mbit, sc.scope) == (d, j, l, None, "all")
    assert netem.resolve("none").untouched and netem.resolve("lcl").untouched
    assert netem.rate_presets() == {"100mbit": 100.0, "1gbit": 1000.0, "10gbit": 10000.0}
    assert netem.resolve("edg10@100mbit").rate_mbit == 100.0


def test_custom_scenarios():
    sc = netem.resolve("lossy", {"loss_pct": 1, "rate_mbit": "1gbit"})
    assert (sc.name, sc.delay_ms, sc.loss_pct, sc.rate_mbit) == ("lossy", 0.0, 1.0, 1000.0)
    assert netem.resolve("x", {"delay_ms": 3, "scope": "inter-group"}).scope == "inter-group"


@pytest.mark.parametrize("name,custom,msg", [
    ("edg99", None, "unknown netem scenario 'edg99'"),
    ("edg10@5mbit", None, "unknown rate '5mbit'"),
    ("c", {"loss_pct": 101}, "loss_pct must be between 0 and 100"),
    ("c", {"delay_ms": -1}, "delay_ms must be between 0 and 60000"),
    ("c", {"delay_ms": "5ms"}, "delay_ms must be a number"),
    ("c", {"rate_mbit": 0}, "rate_mbit must be > 0"),
    ("c", {"latency": 3}, "unknown key(s) latency"),
    ("c", {"scope": "some"}, "scope must be one of all, inter-group"),
    ("edg10", {"delay_ms": 1}, "is a catalog scenario"),
    ("bad name", {"delay_ms": 1}, "use letters, digits"),
])
def test_validation_errors(name, custom, msg):
    with pytest.raises(SpecError) as e:
        netem.resolve(name, custom)
    assert msg in str(e.value)


# golden renderings --------------------------------------------------------------------------------------------
def _lines(cmds):
    return netem.render_script(cmds).splitlines()


def test_render_all_traffic():
    assert _lines(netem.render_apply(netem.resolve("edg10"), "eth0")) == [
        "tc qdisc replace dev eth0 root netem delay 5ms 1ms distribution normal loss 0.08% limit 10000"]
    assert _lines(netem.render_apply(netem.resolve("edg2.5"), "ens3")) == [
        "tc qdisc replace dev ens3 root netem delay 1.25ms 0.25ms distribution normal loss 0.02% limit 10000"]
    assert netem.render_apply(netem.resolve("lcl"), "eth0") == []
    assert netem.render_apply(netem.resolve("none"), "eth0") == []


def test_render_rate():
    assert _lines(netem.render_apply(netem.resolve("edg20@10gbit"), "eth0")) == [
        "tc qdisc replace dev eth0 root handle 1: htb default 1",
        "tc class add dev eth0 parent 1: classid 1:1 htb rate 10000mbit ceil 10000mbit burst 1250000 cburst 1250000",
        "tc qdisc add dev eth0 parent 1:1 handle 10: netem delay 10ms 2ms distribution normal loss 0.16% limit 13334",
    ]
    assert _lines(netem.render_apply(netem.resolve("r", {"rate_mbit": 100}), "eth0")) == [
        "tc qdisc replace dev eth0 root handle 1: htb default 1",
        "tc class add dev eth0 parent 1: classid 1:1 htb rate 100mbit ceil 100mbit burst 32768 cburst 32768",
    ]
    # impair=False: only the rate part (the userspace emulator does the rest)
    assert len(netem.render_apply(netem.resolve("edg10@1gbit"), "eth0", impair=False)) == 2


def test_render_limit_scales_with_rate_and_delay():
    sc = netem.resolve("far", {"delay_ms": 100, "rate_mbit": 10000})
    assert netem.limit_for(sc) == 83334  # 10 Gbit/s x 100 ms / 1500 B
    assert "limit 83334" in netem.render_script(netem.render_apply(sc, "eth0"))


def test_render_inter_group():
    sc = netem.resolve("edg10", scope="inter-group")
    assert _lines(netem.render_apply(sc, "eth0", ["192.168.1.12", "10.42.2.0/24"])) == [
        "tc qdisc replace dev eth0 root handle 1: prio bands 3",
        "tc qdisc add dev eth0 parent 1:3 handle 30: netem delay 5ms 1ms distribution normal loss 0.08% limit 10000",
        "tc filter add dev eth0 parent 1:0 protocol ip prio 1 u32 match ip dst 192.168.1.12/32 flowid 1:3",
        "tc filter add dev eth0 parent 1:0 protocol ip prio 1 u32 match ip dst 10.42.2.0/24 flowid 1:3",
    ]
    sc = netem.resolve("edg5@1gbit", scope="inter-group")
    assert _lines(netem.render_apply(sc, "eth0", ["192.168.1.12"])) == [
        "tc qdisc replace dev eth0 root handle 1: htb",
        "tc class add dev eth0 parent 1: classid 1:1 htb rate 1000mbit ceil 1000mbit burst 125000 cburst 125000",
        "tc qdisc add dev eth0 parent 1:1 handle 10: netem delay 2.5ms 0.5ms distribution normal loss 0.04% limit 10000",
        "tc filter add dev eth0 parent 1:0 protocol ip prio 1 u32 match ip dst 192.168.1.12/32 flowid 1:1",
    ]
    with pytest.raises(SpecError, match="needs the peers"):
        netem.render_apply(sc, "eth0", [])


def test_render_readback_revert_script():
    assert _lines(netem.render_readback("eth0")) == ["tc -s qdisc show dev eth0"]
    assert _lines(netem.render_readback("eth0", "inter-group")) == [
        "tc -s qdisc show dev eth0", "tc -s class show dev eth0", "tc filter show dev eth0"]
    assert _lines(netem.render_revert("eth0")) == ["tc qdisc del dev eth0 root"]
    assert netem.render_script(netem.render_revert("eth0"), prefix=("nsenter", "-t", "1", "-n", "--")) == \
        "nsenter -t 1 -n -- tc qdisc del dev eth0 root\n"


def test_manifest_object_shape():
    obj = netem.manifest_object(netem.resolve("edg10"), "tc-netem", "qdisc netem ...")
    assert obj == {"scenario": "edg10", "mechanism": "tc-netem", "delay_ms": 5.0, "jitter_ms": 1.0,
                   "loss_pct": 0.08, "rate_mbit": None, "scope": "all", "readback": "qdisc netem ..."}


# proofs on real namespaces -------------------------------------------------------------------------------------
needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"), reason="needs root and iproute2")


def _sh(*argv, check=True, **kw):
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, **kw).stdout


def _delete_ns(ns):
    for pid in _sh("ip", "netns", "pids", ns, check=False).split():
        try:
            os.kill(int(pid), 9)
        except (ProcessLookupError, ValueError):
            pass
    _sh("ip", "netns", "del", ns, check=False)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    os.environ["EDGEBENCH_RUN_DIR"] = str(tmp_path_factory.mktemp("run"))
    for ns in (A, B):
        _delete_ns(ns)
    _sh("ip", "netns", "add", A)
    _sh("ip", "netns", "add", B)
    _sh("ip", "-n", A, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", B)
    for ns, ip in ((A, IP_A), (B, IP_B)):
        _sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
        _sh("ip", "-n", ns, "link", "set", "eth0", "up")
        _sh("ip", "-n", ns, "link", "set", "lo", "up")
    _sh("ip", "netns", "exec", A, "ping", "-c", "1", "-W", "2", IP_B)  # resolves ARP before measuring
    yield [A, B]
    netem_local.revert_local([A, B], "eth0")
    for ns in (A, B):
        _delete_ns(ns)
    os.environ.pop("EDGEBENCH_RUN_DIR", None)


def _ping_mean_ms(count=100, interval="0.01"):
    out = _sh("ip", "netns", "exec", A, "ping", "-q", "-c", str(count), "-i", interval, "-W", "1", IP_B, check=False)
    m = re.search(r"= [\d.]+/([\d.]+)/", out)
    assert m, out
    return float(m.group(1))


def _assert_clean(namespaces):
    for ns in namespaces:
        qdisc = _sh("tc", "-n", ns, "qdisc", "show", "dev", "eth0")
        assert not re.search(r"netem|htb|prio|tbf", qdisc), qdisc
        ruleset = _sh("ip", "netns", "exec", ns, "nft", "list", "ruleset", check=False)
        assert "queue" not in ruleset and netem.NFT_TABLE not in ruleset and "mangle" not in ruleset, ruleset
        procs = [p for p in _sh("ip", "netns", "pids", ns, check=False).split()
                 if netem.EMULATOR in open(f"/proc/{p}/cmdline").read()]
        assert procs == []
        assert not list(netem_local._state_dir().glob(f"{ns}*")) if netem_local._state_dir().exists() else True


@needs_root
def test_edg10_adds_10ms_rtt(pair):
    base = _ping_mean_ms()
    obj = netem_local.apply_local(pair, "eth0", "edg10", seed=11)
    try:
        assert obj["mechanism"] in ("tc-netem", "userspace-nfqueue")
        assert (obj["scenario"], obj["delay_ms"], obj["jitter_ms"], obj["loss_pct"]) == ("edg10", 5.0, 1.0, 0.08)
        assert f"## {A}" in obj["readback"] and f"## {B}" in obj["readback"]
        assert netem_local.check_local(pair, "eth0") is None
        with_netem = _ping_mean_ms()
    finally:
        netem_local.revert_local(pair, "eth0")
    added = with_netem - base
    print(f"\nedg10: baseline RTT {base:.3f} ms, with edg10 {with_netem:.3f} ms, added {added:.3f} ms "
          f"(target 10 ms, error {100 * (added - 10) / 10:+.1f}%), mechanism {obj['mechanism']}")
    assert 8.5 <= added <= 11.5
    _assert_clean(pair)


def _udp_one_way_loss(count=2000, gap_s=0.0005, port=45999):
    """Datagrams A -> B: a one-way probe crosses exactly one impaired interface (A's egress)."""
    recv = subprocess.Popen(
        ["ip", "netns", "exec", B, "python3", "-c",
         "import socket,sys\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
         f"s.bind(('{IP_B}',{port}))\ns.settimeout(1.5)\nseen=set()\nprint('ready',flush=True)\n"
         "while True:\n  try: seen.add(s.recv(64))\n  except socket.timeout: break\nprint(len(seen))\n"],
        stdout=subprocess.PIPE, text=True)
    assert recv.stdout.readline().strip() == "ready"
    _sh("ip", "netns", "exec", A, "python3", "-c",
        "import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
        f"for i in range({count}):\n  s.sendto(b'%d' % i, ('{IP_B}',{port}))\n  time.sleep({gap_s})\n")
    got = int(recv.communicate(timeout=30)[0].strip())
    return 100.0 * (count - got) / count


@needs_root
def test_one_percent_loss(pair):
    sc = netem.resolve("loss1", {"loss_pct": 1})
    obj = netem_local.apply_local(pair, "eth0", sc, seed=5)
    try:
        assert obj["loss_pct"] == 1.0
        loss = _udp_one_way_loss()
    finally:
        netem_local.revert_local(pair, "eth0")
    print(f"\nloss 1% per interface: measured one-way loss {loss:.2f}% over 2000 datagrams "
          f"(mechanism {obj['mechanism']})")
    assert 0.4 <= loss <= 1.8
    assert _udp_one_way_loss(count=300, gap_s=0.0002) == 0.0  # reverted: nothing lost
    _assert_clean(pair)


@needs_root
@pytest.mark.skipif(not shutil.which("iperf3"), reason="needs iperf3")
def test_rate_limit_100mbit(pair):
    obj = netem_local.apply_local(pair, "eth0", netem.resolve("r100", {"rate_mbit": 100}))
    try:
        assert obj["rate_mbit"] == 100.0 and "htb" in obj["readback"]
        srv = subprocess.Popen(["ip", "netns", "exec", B, "iperf3", "-s", "-1", "-p", "5399"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        out = _sh("ip", "netns", "exec", A, "iperf3", "-c", IP_B, "-p", "5399", "-t", "3", "-O", "1", "-J")
        srv.wait(timeout=10)
    finally:
        netem_local.revert_local(pair, "eth0")
    mbps = json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6
    print(f"\nrate 100 Mbit/s: iperf3 TCP measured {mbps:.1f} Mbit/s")
    assert 85 <= mbps <= 100
    _assert_clean(pair)


@needs_root
def test_inter_group_scope_only_delays_peers(pair):
    # B's address is the only peer of A (and vice versa): the rule or filter names it
    obj = netem_local.apply_local(pair, "eth0", "edg10", scope_peers={A: [IP_B], B: [IP_A]}, seed=3)
    try:
        assert obj["scope"] == "inter-group"
        assert IP_B in obj["readback"]
        added = _ping_mean_ms(count=30)
        assert added > 8
    finally:
        netem_local.revert_local(pair, "eth0")
    _assert_clean(pair)


@needs_root
def test_revert_is_idempotent_and_kills_leftovers(pair):
    netem_local.apply_local(pair, "eth0", "edg5", seed=1)
    netem_local.apply_local(pair, "eth0", "edg2.5", seed=1)  # re-apply replaces, does not stack
    for ns in pair:
        assert len(re.findall(r"## ", netem_local.readback_local([ns], "eth0"))) == 1
    netem_local.revert_local(pair, "eth0")
    netem_local.revert_local(pair, "eth0")
    _assert_clean(pair)
