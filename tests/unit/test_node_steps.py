"""Node steps run as fast as they allow (substrates/clusters/install/node_steps.py): several nodes at once, consecutive
single-node steps on distinct nodes at once, the plan's order kept where it matters, every stage timed."""

import threading

import pytest

from edgebench.substrates.clusters.install import node_steps
from edgebench.substrates.clusters.install.distributions import Step
from edgebench.substrates.clusters.inventory import Inventory, Node
from edgebench.substrates.clusters.provider import ClusterProvider
from edgebench.substrates.clusters.transport import FakeTransport

INV = Inventory("lab", (Node("cp", "10.0.0.1", "amd64", "server", "root"), Node("w1", "10.0.0.2", "amd64", "agent", "root"),
                        Node("w2", "10.0.0.3", "amd64", "agent", "root")), "lab")


def test_batches_keep_the_order_that_matters():
    steps = [Step("all", "setup"), Step("server", ["kubeadm", "init"]), Step("server", ["token"], capture="join"),
             Step("w1", "join w1"), Step("w2", "join w2"), Step("w1", "after"), Step("cp", "reset"),
             Step("local", ["kubectl"])]
    got = [[s.command for s in b] for b in node_steps.batches(steps)]
    assert got == [["setup"], [["kubeadm", "init"]], [["token"]], ["join w1", "join w2"], ["after", "reset"],
                   [["kubectl"]]]


def test_kubeadm_plan_joins_and_resets_at_once(tmp_path):
    plan = _provider(tmp_path, FakeTransport()).dist_plan()
    install = node_steps.batches(plan.install)
    assert [s.where for s in install[-1]] == ["w1", "w2"]  # both joins, after the join command was captured
    assert install[-2][0].capture == "join_command"
    assert all(len(b) == 1 for b in install[:-1])  # everything before the joins in the plan's order
    teardown = node_steps.batches(plan.teardown)
    assert [sorted(s.where for s in b) for b in teardown] == [["cp", "w1", "w2"]] * 3  # reset, remove, cleanup


class BarrierTransport(FakeTransport):
    """Answers only when `parties` commands are in flight at once: a step run node after node breaks the barrier."""

    def __init__(self, parties: int, match: str):
        super().__init__()
        self.barrier, self.match = threading.Barrier(parties, timeout=10), match

    def run(self, node, command, sudo=False, timeout=900):
        text = command if isinstance(command, str) else " ".join(command)
        if self.match in text:
            self.barrier.wait()
        return super().run(node, command, sudo, timeout)


def _provider(tmp_path, transport):
    return ClusterProvider("ssh", "kubeadm", "flannel", "vxlan", tmp_path, inventory=INV, transport=transport,
                           local=lambda argv, input=None, check=True: "", fetch=lambda url: "")


def test_a_step_for_all_nodes_runs_on_them_at_once(tmp_path):
    t = BarrierTransport(3, "setup-all")
    p = _provider(tmp_path, t)
    p._step(Step("all", "setup-all", note="node setup (containerd, kubeadm)"))
    assert sorted(c.node for c in t.calls) == ["cp", "w1", "w2"]
    stage = p.timings.take()
    assert [(s["stage"], s["where"]) for s in stage] == [("node setup", "all")]
    assert p.timings.take() == []


def test_joins_run_at_once_and_a_failure_still_raises(tmp_path):
    t = BarrierTransport(2, "join")
    p = _provider(tmp_path, t)
    p._steps([Step("w1", "join a"), Step("w2", "join b")])
    t = BarrierTransport(2, "join")
    t.respond("join b", rc=1, stderr="[ERROR Port-10250]: Port 10250 is in use")
    p = _provider(tmp_path, t)
    with pytest.raises(Exception, match="Port 10250"):
        p._steps([Step("w1", "join a"), Step("w2", "join b")])


def test_teardown_goes_on_past_a_failed_step(tmp_path):
    t = FakeTransport()
    t.respond("reset w1", rc=1, stderr="unreachable")
    p = _provider(tmp_path, t)
    p._steps([Step("w1", "reset w1"), Step("w2", "reset w2"), Step("cp", "clean")], keep_going=True)
    assert {c.node for c in t.calls} == {"w1", "w2", "cp"}
    assert any("teardown step failed" in line and "unreachable" in line for line in p.log)


def test_summary_and_labels():
    assert node_steps.argv_label(["kubectl", "--kubeconfig", "/w/kc", "-n", "kube-system", "rollout", "status",
                                  "ds/cilium", "--timeout=600s"]) == "kubectl rollout status ds/cilium"
    line = node_steps.summary([{"stage": "kubeadm init", "where": "server", "seconds": 20.0},
                               {"stage": "join", "where": "w1", "seconds": 5.5}])
    assert line == "kubeadm init 20.0 s (server), join 5.5 s (w1); 25.5 s in all"
