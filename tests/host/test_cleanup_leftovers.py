"""The cleanup a cluster cell runs on every node (install/distributions.cleanup_script) removes kube-router's routes
and policy rules: left, the next cluster's pod CIDRs (given in join order) were routed to the wrong node, and a
flannel cell after kube-router failed every cross-node run (docs/papers.md, `make papers-lab`). The script's own
lines run in a network namespace (the rest of it touches the machine's files)."""

from __future__ import annotations

import os
import subprocess
import uuid
from types import SimpleNamespace

import pytest

from edgebench.substrates.clusters.install import distributions as dist_mod

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")


def _ns(ns: str, cmd: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", cmd], check=True, capture_output=True,
                          text=True).stdout


def test_kube_routers_bgp_routes_and_rules_are_removed_and_nothing_else():
    lines = [ln for ln in dist_mod.cleanup_script("kubeadm", {}, SimpleNamespace(name="n1")).splitlines()
             if ln.startswith(("ip route show proto 17", "while ip rule del"))]
    assert len(lines) == 2, lines
    ns = f"eb-clean-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        _ns(ns, "ip link add d0 type veth peer name d1 && ip link set d1 up && ip link set d0 up && ip addr add 10.77.9.2/24 dev d0 && "
                "ip route add 10.244.5.0/24 via 10.77.9.3 dev d0 proto 17 && "
                "ip route add 10.244.6.0/24 via 10.77.9.4 dev d0 proto 17 && "
                "ip route add 10.99.0.0/24 via 10.77.9.5 dev d0 && "
                "ip rule add from 10.244.5.0/24 lookup 77 && ip rule add from 10.244.6.0/24 lookup 77 && "
                "ip rule add from 10.99.0.0/24 lookup 78")
        _ns(ns, "\n".join(lines))
        routes, rules = _ns(ns, "ip route show"), _ns(ns, "ip rule show")
        assert "10.244." not in routes and "lookup 77" not in rules
        assert "10.99.0.0/24 via 10.77.9.5" in routes and "lookup 78" in rules  # what is not kube-router's stays
    finally:
        subprocess.run(["ip", "netns", "delete", ns], check=False)
