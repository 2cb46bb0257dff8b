"""Duet rounds (sweep/duet.py): the cells of a group stand side by side within a round, each variant runs on all
of them in turn with the host in the middle, the order reversed every other round; their testbeds live under the
sweep's prefix, so that tearing down the prefix removes them too."""
from __future__ import annotations

import pytest

from edgebench.errors import EdgebenchError
from edgebench.plan import spec
from edgebench.plan.cells import expand_checked, runs_for
from edgebench.substrates.local import testbed as testbed_mod
from edgebench.sweep import adaptive, duet
from edgebench.sweep.runner import visits


def _sweep(**extra):
    params = {"substrate": "local", "cnis": '["host","flannel:vxlan","flannel:host-gw","kube-router","calico:bgp"]',
              "workloads": '["iperf3:tcp","dds:latency"]', "repetitions": "2", "duration": "1", **extra}
    return spec.from_parameters(params, source="test")


def test_groups_share_every_dimension_but_the_network():
    s = _sweep(**{"service-proxy": '["default","iptables"]'})
    cells, _ = expand_checked(s)
    g = duet.groups(cells)
    by_group: dict[int, list] = {}
    for i, k in g.items():
        by_group.setdefault(k, []).append(cells[i])
    # one group per service proxy, each with its own host baseline beside the modes at that proxy
    assert len(by_group) == 2
    for members in by_group.values():
        assert len({c.service_proxy for c in members}) == 1
        assert sum(c.cni == "host" for c in members) == 1 and len(members) == 5
    assert len(g) == len(cells)
    # a mode at two versions pairs without the host (a regression card's pair); a lone cell forms no group
    versions, _ = expand_checked(_sweep(cnis='["flannel:vxlan"]', **{"cni-versions": '["v1","v2"]'}))
    assert len(versions) == 2 and set(duet.groups(versions)) == {0, 1}
    alone, _ = expand_checked(_sweep(cnis='["flannel:vxlan"]'))
    assert duet.groups(alone) == {}


def test_inter_cluster_cells_take_no_part():
    s = _sweep(cnis='["host","flannel:vxlan"]', intercluster='["none","skupper"]')
    cells, _ = expand_checked(s)
    g = duet.groups(cells)
    assert {cells[i].intercluster for i in g} == {"none"} and len(g) == 2


def test_order_puts_the_host_in_the_middle_and_reverses_every_other_round():
    cells, _ = expand_checked(_sweep())
    members = list(range(len(cells)))
    names = lambda seq: [cells[i].cni for i in seq]  # noqa: E731
    first, second = duet.order(cells, members, 1), duet.order(cells, members, 2)
    assert names(first) == ["flannel", "flannel", "host", "kube-router", "calico"]
    assert second == first[::-1]
    # over two rounds every configuration runs once before and once after the host
    for i in members:
        if cells[i].cni != "host":
            host = next(j for j in members if cells[j].cni == "host")
            assert (first.index(i) < first.index(host)) != (second.index(i) < second.index(host))


def test_variants_keep_the_planned_order():
    s = _sweep()
    cells, _ = expand_checked(s)
    runs = {i: [r for r in runs_for(s, c) if r.repetition == 1] for i, c in enumerate(cells)}
    vs = duet.variants(runs)
    assert vs == [adaptive.variant(r) for r in runs[0]]
    assert len(vs) == len(set(vs)) == len(runs[0])


def test_visits_put_a_group_together_within_each_round():
    s = _sweep(**{"service-proxy": '["default","iptables"]'})
    cells, _ = expand_checked(s)
    todos = [{r.run_id for r in runs_for(s, c)} for c in cells]
    g = duet.groups(cells)
    plain = [i for i, _ in visits(s, cells, todos, interleave=True)][:len(cells)]
    assert max(plain.index(i) for i in g if g[i] == g[0]) - min(plain.index(i) for i in g if g[i] == g[0]) > 4, \
        "without duets a group's cells are not next to each other: the case below proves something"
    plan = visits(s, cells, todos, interleave=True, duets=g)
    order = [i for i, _ in plan]
    assert len(order) == 2 * len(cells)
    for half in (order[:len(cells)], order[len(cells):]):
        for k in set(g.values()):
            pos = [half.index(i) for i in g if g[i] == k]
            assert max(pos) - min(pos) == len(pos) - 1  # consecutive
    assert sorted(rid for _, t in plan for rid in t) == sorted(rid for t in todos for rid in t)


def test_prefixes_live_under_the_sweeps_and_are_found_for_teardown(tmp_path, monkeypatch):
    assert duet.prefix("eb", 3) == "eb-d3"
    monkeypatch.setattr(testbed_mod, "STATE_DIR", tmp_path)
    (tmp_path / "testbed-eb-d1.json").write_text("{}")
    (tmp_path / "testbed-eb2-d1.json").write_text("{}")  # another prefix's duet: not ours
    tb = testbed_mod.Testbed("eb", runner=lambda *a, **k: "")
    assert tb.duet_members(["eb-d0-n1", "eb-d0-lan", "eb-n1", "eb-dx-n1", "eb-d12-n2-p1"]) == ["eb-d0", "eb-d1",
                                                                                             "eb-d12"]


def test_a_duet_members_prefix_is_refused_as_the_sweeps_own(monkeypatch):
    monkeypatch.setenv("EDGEBENCH_TESTBED_PREFIX", "eb-d2")
    with pytest.raises(EdgebenchError, match="duet member"):
        testbed_mod.default_prefix()
    monkeypatch.setenv("EDGEBENCH_TESTBED_PREFIX", "eb-dev")
    assert testbed_mod.default_prefix() == "eb-dev"


def test_every_member_is_torn_down_even_when_one_teardown_fails(tmp_path, monkeypatch):
    from types import SimpleNamespace

    torn = []

    def teardown(ctx):
        torn.append(ctx.name)
        if ctx.name == "a":
            raise RuntimeError("a would not go")

    monkeypatch.setattr(duet.phases, "teardown_cluster", teardown)
    ctxs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        ctxs.append(SimpleNamespace(name=name, workdir=tmp_path / name))
    with pytest.raises(RuntimeError, match="a would not go"):
        duet._teardown(ctxs)
    assert torn == ["a", "b"] and not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
