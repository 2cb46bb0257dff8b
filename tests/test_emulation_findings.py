"""Traced testbed / real-lab disagreements (catalog cnis.yaml `testbed_disagreements`, issue 43): matched to the
emulation mart's rows, counted by `fared`, said in its sentence."""
from __future__ import annotations

import re

from edgebench.plan import catalog
from edgebench.results import emulation

UDP_SAME = "udp pod-to-pod same-node 1300 B duration 3 bitrate 1G"


def _row(config: str, testbed: str, real: str, cni: str = "flannel") -> dict:
    decided = testbed in emulation.DECIDED and real in emulation.DECIDED
    return {"real_lab": "lab-local", "workload": "iperf3", "metric": "throughput_mbps", "config": config, "cni": cni,
            "testbed_verdict": testbed, "real_verdict": real, "decided_both": decided,
            "verdicts_agree": decided and testbed == real, "overhead_gap_pts": 15.0, "kendall_tau": None,
            "n_modes": 1}


def test_every_entry_names_a_workload_a_pattern_a_cause_and_what_was_measured():
    entries = catalog.load("cnis.yaml")["testbed_disagreements"]
    assert entries
    for e in entries:
        assert e["workload"] in catalog.workloads(), e
        re.compile(e["config"])
        assert e["cause"].strip() and len(e["explanation"]) > 200, e  # the measurement, not a label


def test_the_udp_same_node_disagreement_is_traced_and_only_it():
    assert "CPU contention" in catalog.disagreement("iperf3", UDP_SAME)["cause"]
    assert catalog.disagreement("iperf3", UDP_SAME.replace("same-node", "cross-node")) is None
    assert catalog.disagreement("iperf3", "tcp pod-to-pod same-node 131072 B duration 3 bitrate -") is None
    assert catalog.disagreement("dds", UDP_SAME) is None


def test_fared_counts_a_traced_disagreement_and_says_so():
    rows = [_row(UDP_SAME, "equivalent", "worse"), _row(UDP_SAME, "equivalent", "worse", cni="cilium"),
            _row("tcp pod-to-pod cross-node 131072 B duration 3 bitrate -", "worse", "equivalent"),
            _row("tcp pod-to-pod same-node 131072 B duration 3 bitrate -", "worse", "worse"),
            _row(UDP_SAME.replace("same-node", "cross-node"), "inconclusive", "worse")]
    assert [bool(emulation.explained(r)) for r in rows] == [True, True, False, False, False]
    (f,) = emulation.fared(rows)
    assert (f["decided_both"], f["agree"], f["explained"], f["outcome"]) == (4, 1, 2, "differs")
    assert "(2 of the 3 that differ traced: see the Emulation page)" in emulation.sentence(f)
    (g,) = emulation.fared(rows[3:])
    assert g["explained"] == 0 and "traced" not in emulation.sentence(g)
