"""The testbed's socket load balancer: its build (the object's four cgroup programs, the loader), where it finds
cgroup v2 and what it says where there is none. Attaching it to a kernel is tests/host/test_testbed.py's."""

import subprocess

import pytest

from edgebench.substrates.local import sock_lb

PROGRAMS = ("cgroup/connect4", "cgroup/sendmsg4", "cgroup/recvmsg4", "cgroup/getpeername4")


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_the_object_holds_the_four_hooks_and_both_are_cached():
    obj, loader = sock_lb.build()
    sections = subprocess.run(["readelf", "-S", "-W", str(obj)], capture_output=True, text=True, check=True).stdout
    for program in PROGRAMS:
        assert program in sections
    stamps = obj.stat().st_mtime_ns, loader.stat().st_mtime_ns
    assert sock_lb.build() == (obj, loader)
    assert (obj.stat().st_mtime_ns, loader.stat().st_mtime_ns) == stamps  # cached: not compiled again
    usage = subprocess.run([str(loader)], capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: sock_lb_loader attach")
    bad = subprocess.run([str(loader), "service", "1", "10.96.0.300", "80", "10.244.2.11", "80"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "sock_lb_loader" in bad.stderr


def test_cgroup_v2_at_the_root_or_unified_and_the_reason_without(tmp_path):
    assert sock_lb.cgroup2(tmp_path) is None
    assert sock_lb.missing(tmp_path) == (f"no cgroup v2 hierarchy at {tmp_path} or {tmp_path}/unified, which its "
                                         f"cgroup hooks attach to (mount -t cgroup2 none {tmp_path}/unified)")
    assert sock_lb.probe("x", tmp_path).startswith("the socket load balancer cannot be built: no cgroup v2")
    assert sock_lb.remove("x", tmp_path) == []
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("cpu\n")
    assert sock_lb.cgroup2(tmp_path) == tmp_path / "unified"
    (tmp_path / "cgroup.controllers").write_text("cpu\n")
    assert sock_lb.cgroup2(tmp_path) == tmp_path
