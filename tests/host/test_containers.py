"""Structural lint of the Dockerfiles and the bake file (hadolint is not installable here; no Docker engine).

Each rule is also run against a bad snippet, so a rule that can never fail would be noticed.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONTAINERS = REPO / "containers"
DOCKERFILES = {"runner": CONTAINERS / "runner" / "Dockerfile",
               "http-services": CONTAINERS / "http-services" / "Dockerfile"}
BAKE = CONTAINERS / "docker-bake.hcl"
# Images whose publisher has no version tags: a named, non-latest tag is the exact pin available.
NAMED_TAG_ONLY = ("gcr.io/distroless/",)
# Command -> what provides it in the runner image: ("apt", package) or ("bin", file in /usr/local/bin).
TOOL_PROVIDERS = {
    "iperf3": ("apt", "iperf3"), "sockperf": ("apt", "sockperf"), "ddsperf": ("apt", "cyclonedds-tools"), "ssh": ("apt", "openssh-client"),
    "scp": ("apt", "openssh-client"), "ip": ("apt", "iproute2"), "bridge": ("apt", "iproute2"),
    "ss": ("apt", "iproute2"), "tc": ("apt", "iproute2"), "nft": ("apt", "nftables"),
    "ping": ("apt", "iputils-ping"), "sysctl": ("apt", "procps"), "curl": ("apt", "curl"),
    "fortio": ("bin", "fortio"), "kubectl": ("bin", "kubectl"), "helm": ("bin", "helm"), "hey": ("apt", "hey"),
    "iptables": ("apt", "iptables"), "ethtool": ("apt", "ethtool"), "openssl": ("apt", "openssl"),
    "edgebench-netem-emu": ("bin", "edgebench-netem-emu"), "edgebench-relay": ("bin", "edgebench-relay"),
}
ALWAYS_NEEDED = ("iperf3", "ddsperf", "fortio", "kubectl", "helm", "ssh")


# ------------------------------------------------------------------------------------------ a tiny parser
@dataclass
class Stage:
    image: str
    name: str | None
    platform: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, instr: str) -> list[str]:
        return [a for i, a in self.instructions if i == instr]


def parse(text: str) -> tuple[list[tuple[str, str]], list[Stage]]:
    """(global instructions before the first FROM, stages). Joins continuation lines, drops comments."""
    logical, buf = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        logical.append(buf + line)
        buf = ""
    if buf:
        logical.append(buf)
    preamble, stages = [], []
    for line in logical:
        instr, _, rest = line.partition(" ")
        instr, rest = instr.upper(), rest.strip()
        if instr == "FROM":
            words = rest.split()
            platform = next((w.split("=", 1)[1] for w in words if w.startswith("--platform=")), None)
            words = [w for w in words if not w.startswith("--")]
            name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
            stages.append(Stage(words[0], name, platform))
        elif stages:
            stages[-1].instructions.append((instr, rest))
        else:
            preamble.append((instr, rest))
    return preamble, stages


def lint(text: str) -> list[str]:
    """Every rule violation of a Dockerfile's text."""
    problems = []
    _, stages = parse(text)
    if not stages:
        return ["no FROM"]
    names = set()
    for st in stages:
        image = st.image
        if image not in names:
            base, _, digest = image.partition("@")
            repo, _, tag = base.rpartition(":") if ":" in base.rsplit("/", 1)[-1] else (base, "", "")
            if "$" in image:
                problems.append(f"FROM {image}: use a literal, pinned image")
            elif not tag and not digest:
                problems.append(f"FROM {image}: untagged")
            elif tag == "latest":
                problems.append(f"FROM {image}: 'latest' is not a pin")
            elif not digest and not re.search(r"\d+\.\d+\.\d+", tag) and not repo.startswith(NAMED_TAG_ONLY):
                problems.append(f"FROM {image}: tag {tag!r} is not an exact version")
        if st.name:
            names.add(st.name)
        for instr, rest in st.instructions:
            if instr == "ADD" and re.search(r"\bhttps?://", rest):
                problems.append(f"ADD {rest}: download with RUN curl + checksum instead of ADD <url>")
            if instr == "RUN":
                if re.search(r"\bapt-get\s+(?:-\S+\s+)*install\b", rest):
                    if "--no-install-recommends" not in rest:
                        problems.append(f"RUN apt-get install without --no-install-recommends: {rest[:80]}")
                    if "rm -rf /var/lib/apt/lists" not in rest:
                        problems.append(f"RUN apt-get install without cleaning /var/lib/apt/lists: {rest[:80]}")
                    if "apt-get update" not in rest:
                        problems.append("RUN apt-get install without apt-get update in the same layer")
                if re.search(r"\b(curl|wget)\b[^;&|]*https?://", rest) and "TARGETARCH" not in rest:
                    problems.append(f"RUN downloads without $TARGETARCH (multi-arch): {rest[:80]}")
                if "go install" in rest and "GOARCH=$TARGETARCH" not in rest.replace("${TARGETARCH}", "$TARGETARCH"):
                    problems.append("go install without GOARCH=$TARGETARCH (multi-arch)")
    final = stages[-1]
    users = final.args("USER")
    if not users:
        problems.append("final stage has no USER (runs as root)")
    elif users[-1].split(":")[0] in ("root", "0"):
        problems.append(f"final stage runs as {users[-1]}")
    return problems


def apt_packages(stage: Stage) -> set[str]:
    pkgs = set()
    for rest in stage.args("RUN"):
        for m in re.finditer(r"apt-get\s+install\s+([^&;|]*)", rest):
            pkgs |= {w for w in shlex.split(m.group(1)) if not w.startswith("-")}
    return pkgs


def arg_defaults(stages: list[Stage], preamble) -> dict[str, str]:
    out = {}
    for instr, rest in preamble + [x for s in stages for x in s.instructions]:
        if instr == "ARG" and "=" in rest:
            k, v = rest.split("=", 1)
            out[k.strip()] = v.strip()
    return out


# ------------------------------------------------------------------------------------------ the real files
@pytest.mark.parametrize("name", sorted(DOCKERFILES))
def test_dockerfile_lint(name):
    path = DOCKERFILES[name]
    assert path.is_file()
    assert lint(path.read_text()) == []


@pytest.mark.parametrize("name", sorted(DOCKERFILES))
def test_multi_arch_build_stages(name):
    _, stages = parse(DOCKERFILES[name].read_text())
    assert len(stages) >= 2, "multi-stage"
    text = DOCKERFILES[name].read_text()
    assert "ARG TARGETARCH" in text
    for st in stages[:-1]:  # builder stages run natively and cross-build for the target
        if st.image.startswith("golang:"):
            assert st.platform == "$BUILDPLATFORM", f"stage {st.name}: FROM --platform=$BUILDPLATFORM"


def test_runner_image():
    text = DOCKERFILES["runner"].read_text()
    preamble, stages = parse(text)
    final = stages[-1]
    args = arg_defaults(stages, preamble)
    assert re.fullmatch(r"v\d+\.\d+\.\d+", args.get("KUBECTL_VERSION", "")), args
    assert re.fullmatch(r"v3\.\d+\.\d+", args.get("HELM_VERSION", "")), args
    assert args.get("FORTIO_VERSION") == "v1.66.5"
    assert re.match(r"python:3\.11\.\d+-slim-bookworm$", final.image)
    # downloads from the official sites, for $TARGETARCH, verified against their published .sha256 files
    assert "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/${TARGETARCH}/kubectl" in text
    assert "kubectl.sha256" in text and "https://get.helm.sh/" in text and ".sha256" in text
    assert text.count("sha256sum -c") >= 2
    assert 'ENTRYPOINT ["edgebench"]' in text
    assert re.search(r"COPY containers/runner/src", text), "build context is the repository root"
    # every tool the drivers call is in the image
    apt = apt_packages(final)
    assert {"iperf3", "cyclonedds-tools", "iproute2", "iputils-ping", "nftables", "openssh-client",
            "ca-certificates", "curl"} <= apt
    copied = " ".join(final.args("COPY"))
    for tool in ALWAYS_NEEDED + tuple(sorted(tools_called_by_package())):
        kind, what = TOOL_PROVIDERS[tool]
        if kind == "apt":
            assert what in apt, f"{tool}: apt package {what} missing"
        else:
            assert re.search(rf"/out/{what}\b", copied) and "/usr/local/bin" in copied, f"{tool} not copied"
    assert "privileged" in text and "securityContext" in text, "document which steps need privileges"


def tools_called_by_package() -> set[str]:
    """Commands the edgebench package runs: names given to sh.require(...), list-form argv heads and the testbed's
    `_ns(namespace, "<command>", ...)` calls (a heuristic: keep TOOL_PROVIDERS in step with the drivers)."""
    found = set()
    for py in (REPO / "containers" / "runner" / "src" / "edgebench").rglob("*.py"):
        src = py.read_text()
        for m in re.finditer(r"\brequire\(([^)]*)\)", src):
            for tool in re.findall(r"[\"']([\w.-]+)[\"']", m.group(1)):
                assert tool in TOOL_PROVIDERS, f"{py.name} requires {tool!r}: add it to the image and TOOL_PROVIDERS"
                found.add(tool)
        heads = re.findall(r"\[\s*[\"']([\w.-]+)[\"']\s*,", src)  # ["ip", ...]
        heads += re.findall(r"\b_ns\([^,()]+(?:\([^)]*\))?,\s*[\"']([\w.-]+)[\"']", src)  # self._ns(ns, "nft", ...)
        found |= {t for t in heads if t in TOOL_PROVIDERS}
    return found


def test_http_services_image():
    text = DOCKERFILES["http-services"].read_text()
    preamble, stages = parse(text)
    assert arg_defaults(stages, preamble).get("FORTIO_VERSION") == "v1.66.5"
    assert "go install \"fortio.org/fortio@${FORTIO_VERSION}\"" in text
    assert stages[-1].image.startswith("gcr.io/distroless/static-debian12:nonroot")
    assert stages[-1].args("EXPOSE") == ["8080"]
    readme = (CONTAINERS / "http-services" / "README.md").read_text()
    for behaviour in ("payload-echo", "payload-recv", "static-reply"):
        assert behaviour in readme


def test_dockerignore_keeps_context_small():
    def patterns(path):
        return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    ignore = patterns(CONTAINERS / "runner" / "Dockerfile.dockerignore")
    assert ignore[0] == "*" and "!containers/runner/src" in ignore and "!requirements.txt" in ignore
    assert patterns(CONTAINERS / "http-services" / "Dockerfile.dockerignore") == ["*"]
    assert ".venv" in (REPO / ".dockerignore").read_text().split()


# ------------------------------------------------------------------------------------------ bake file
def parse_bake(text: str) -> dict:
    """Blocks of a (simple) HCL bake file: {('target', 'runner'): {attr: raw value}, ...}."""
    blocks = {}
    for m in re.finditer(r'^(\w+)\s+"([\w.-]+)"\s*\{(.*?)^\}', text, re.S | re.M):
        attrs = dict(re.findall(r'^\s*(\w+)\s*=\s*(.+?)\s*$', m.group(3), re.M))
        blocks[(m.group(1), m.group(2))] = attrs
    return blocks


def test_bake_file():
    blocks = parse_bake(BAKE.read_text())
    assert '"0.1.0"' in blocks[("variable", "VERSION")]["default"]
    assert '"ghcr.io/edgebench"' in blocks[("variable", "REGISTRY")]["default"]
    assert re.findall(r'"([\w-]+)"', blocks[("group", "default")]["targets"]) == ["runner", "http-services"]
    common = blocks[("target", "_common")]
    assert set(re.findall(r'"([^"]+)"', common["platforms"])) == {"linux/amd64", "linux/arm64"}
    context = REPO / common["context"].strip('"')
    images = {"runner": "edgebench-runner", "http-services": "edgebench-http"}
    for target, image in images.items():
        t = blocks[("target", target)]
        assert "_common" in t["inherits"]
        dockerfile = context / t["dockerfile"].strip('"')
        assert dockerfile.resolve() == DOCKERFILES[target].resolve() and dockerfile.is_file()
        assert t["tags"] == f'["${{REGISTRY}}/{image}:${{VERSION}}"]'


# ------------------------------------------------------------------------------------------ the rules can fail
BAD = {
    "FROM python\nUSER 1000": "untagged",
    "FROM python:latest\nUSER 1000": "'latest'",
    "FROM python:3.11-slim\nUSER 1000": "not an exact version",
    "FROM python:3.11.13-slim-bookworm": "no USER",
    "FROM python:3.11.13-slim-bookworm\nUSER root": "runs as root",
    "FROM debian:12.11\nRUN apt-get update && apt-get install -y iperf3\nUSER 1": "--no-install-recommends",
    "FROM debian:12.11\nRUN apt-get update && apt-get install -y --no-install-recommends iperf3\nUSER 1": "lists",
    "FROM debian:12.11\nADD https://example.org/x.tgz /x\nUSER 1": "ADD",
    "FROM debian:12.11\nRUN curl -fsSLO https://dl.k8s.io/release/v1.33.3/bin/linux/amd64/kubectl\nUSER 1": "TARGETARCH",
}


@pytest.mark.parametrize("text, expect", BAD.items())
def test_lint_rejects(text, expect):
    problems = lint(text)
    assert any(expect in p for p in problems), problems


def test_lint_accepts_stage_references_and_continuations():
    text = ("FROM golang:1.24.5-bookworm AS build\nARG TARGETARCH\nRUN GOARCH=$TARGETARCH go install x@v1 \\\n"
            "  && true\nFROM build\nUSER 10001:10001\n")
    assert lint(text) == []
