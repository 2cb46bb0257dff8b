"""The testbed's eBPF forwarding: its build (clang's command line, the cache key, the object's programs) and what is
said where it cannot be built. Loading it into a kernel is tests/host/test_testbed.py's."""

import subprocess

import pytest

from edgebench import sh
from edgebench.substrates.local import ebpf

PROGRAMS = ("from_pod", "from_pod_routed", "to_overlay", "from_overlay")


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_the_command_line_targets_bpf_with_the_tunnel_index_and_vni(tmp_path):
    argv = ebpf.compile_argv(tmp_path / "a.c", tmp_path / "a.o", 7)
    assert argv[0] == "clang" and ["-target", "bpf"] == argv[argv.index("-target"):argv.index("-target") + 2]
    assert f"-DTUNNEL_IFINDEX={ebpf.TUNNEL_IFINDEX}" in argv and "-DVNI=7" in argv
    assert argv[-4:] == ["-c", str(tmp_path / "a.c"), "-o", str(tmp_path / "a.o")]


def test_an_edited_source_or_another_vni_is_another_object(tmp_path):
    src = tmp_path / "p.c"
    src.write_text("int x;\n")
    first = ebpf.object_path(2, src)
    assert ebpf.object_path(2, src) == first
    assert ebpf.object_path(1, src) != first
    src.write_text("int y;\n")
    assert ebpf.object_path(2, src) != first


def test_the_object_holds_the_four_programs_and_is_cached():
    obj = ebpf.build(2)
    sections = subprocess.run(["readelf", "-S", "-W", str(obj)], capture_output=True, text=True, check=True).stdout
    for program in PROGRAMS:
        assert f"tc/{program}" in sections
    mtime = obj.stat().st_mtime_ns
    assert ebpf.build(2) == obj and obj.stat().st_mtime_ns == mtime  # cached: not compiled again
    assert not list(obj.parent.glob("*.tmp"))


def test_a_source_that_does_not_compile_says_why_and_caches_nothing(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("int f(void) { return undeclared; }\n")
    with pytest.raises(sh.CommandError, match="undeclared"):
        ebpf.build(2, bad)
    assert not ebpf.object_path(2, bad).exists()
    assert not list(ebpf.cache_dir().glob("*.tmp"))


def test_without_clang_the_reason_names_what_to_install(monkeypatch):
    real = sh.which
    monkeypatch.setattr(sh, "which", lambda tool: None if tool == "clang" else real(tool))
    assert ebpf.missing() == "clang is not installed (apt-get install clang libbpf-dev)"
    assert ebpf.probe("unused-ns", 2) == ("the eBPF forwarding cannot be built: clang is not installed "
                                         "(apt-get install clang libbpf-dev)")
