"""The runner image's one definition, containers/runner/image.toml: read for the offline build (images.py) and
turned into containers/runner/Dockerfile (BuildKit's build), which is generated, never edited. Also the offline
build's cross-compiled Go tools for a foreign architecture, at the spec's pins.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from imagelib import REPO, say

import cmdkit as ck  # noqa: E402 - on sys.path through imagelib
import lablib as ll  # noqa: E402

SPEC = REPO / "containers" / "runner" / "image.toml"
DOCKERFILE = REPO / "containers" / "runner" / "Dockerfile"
VENV_BIN_PATH = "/opt/edgebench/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def load(path: Path = SPEC) -> dict:
    """The spec, with the checks the two builds rely on (one message naming the file when one fails)."""
    try:
        spec = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ck.Fail(f"{path}: {e}") from None
    for key in ("suite", "packages", "venv", "entrypoint", "cmd", "user", "env", "tools", "check", "dockerfile",
                "offline"):
        if key not in spec:
            raise ck.Fail(f"{path}: no {key}")
    for t in [*spec["offline"]["tools"], *spec["offline"]["host_tools"]]:
        if t not in spec["tools"]:
            raise ck.Fail(f"{path}: tool {t} is not in [tools]")
    return spec


def offline_packages(spec: dict) -> list[str]:
    """The offline build's apt list: the spec's packages, then the Python python:slim brings."""
    return [*spec["packages"], *spec["offline"]["packages"]]


def offline_env(spec: dict) -> dict[str, str]:
    """The offline image's environment, in the order its config gets it (EDGEBENCH_COMMIT goes after PATH)."""
    return {"PATH": VENV_BIN_PATH, **spec["env"], **spec["offline"]["env"]}


def host_extra(spec: dict, e2e: str, tools: str) -> list[str]:
    """The offline build's kubectl and helm: this host's builds that exist."""
    paths = [p.replace("$E2E", e2e).replace("$EDGEBENCH_TOOLS", tools) for p in spec["offline"]["host_extra"]]
    return [p for p in paths if ll.executable(p)]


def cross_tools(spec: dict, arch: str, out: str, log: str) -> None:
    """The offline tools for a foreign ARCH, cross-compiled (CGO_ENABLED=0 GOARCH=ARCH) into OUT: modules at the
    spec's pins from the Go module proxy, the rest from this repository. -trimpath and no VCS stamps make the
    binaries (and so the image's key) reproducible; Go's build cache makes a rerun quick."""
    ll.need("go")
    tools = spec["offline"]["tools"]
    os.makedirs(out, exist_ok=True)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    say(f"tools ({arch}): cross-compiling {', '.join(tools)} into {out} (log: {log})")
    env = {**os.environ, "CGO_ENABLED": "0", "GOOS": "linux", "GOARCH": arch, "GOFLAGS": "-buildvcs=false"}
    gobin = ll.out(["go", "env", "GOPATH"]).strip().split(":")[0] + f"/bin/linux_{arch}"
    with open(log, "w") as f:
        for t in tools:
            tool = spec["tools"][t]
            if "module" in tool:
                steps = [(["go", "install", "-trimpath", f"{tool['module']}@{tool['version']}"], "/tmp",
                          {**env, "GOBIN": ""}),
                         (["install", "-m", "0755", f"{gobin}/{t}", f"{out}/{t}"], "/tmp", env)]
            else:
                steps = [(["go", "build", "-trimpath", "-o", f"{out}/{t}", "."], str(REPO / tool["dir"]), env)]
            for argv, cwd, e in steps:
                if subprocess.run(argv, cwd=cwd, env=e, stdout=f, stderr=subprocess.STDOUT).returncode:
                    f.flush()
                    sys.stderr.write("".join(Path(log).read_text().splitlines(True)[-20:]))
                    raise ck.Fail(f"cross-compiling the runner's tools for {arch} failed (log: {log})")
    for t in tools:
        what = ll.out(["file", "-b", f"{out}/{t}"])
        if f", {ll.ELF_MACHINE[arch]}," not in what or not what.startswith("ELF 64-bit"):
            raise ck.Fail(f"{out}/{t} is not an {arch} executable: {what.strip()}")


# ------------------------------------------------------------------------------------------------ the Dockerfile
def _wrap_packages(packages: list[str]) -> str:
    lines = textwrap.wrap(" ".join(packages), 108)
    return "".join(f"      {line} \\\n" for line in lines)


def dockerfile(spec: dict) -> str:
    """containers/runner/Dockerfile for SPEC (BuildKit, multi-arch through TARGETARCH)."""
    t, d, u = spec["tools"], spec["dockerfile"], spec["user"]
    go = f"golang:{d['golang']}-{spec['suite']}"
    py = f"python:{d['python']}-slim-{spec['suite']}"
    env = {"PATH": f"{spec['venv']}/bin:$PATH", "EDGEBENCH_COMMIT": "$EDGEBENCH_COMMIT", **spec["env"]}
    env_lines = " \\\n    ".join(f"{k}={v}" for k, v in env.items())
    privileges = "\n".join(f"# {line}".rstrip() for line in d["privileges"].strip().splitlines())
    exec_form = lambda argv: "[" + ", ".join(f'"{a}"' for a in argv) + "]"  # noqa: E731
    return f"""# syntax=docker/dockerfile:1.7
# GENERATED from containers/runner/image.toml by `scripts/e2e-argo/images.sh dockerfile`: edit that file, not this.
# edgebench runner: the `edgebench` CLI plus every tool its drivers call. Multi-arch (linux/amd64, linux/arm64)
# through BuildKit's TARGETARCH.
# Build context: the REPOSITORY ROOT (it needs requirements.txt as pip constraints), e.g.
#   docker buildx bake -f containers/docker-bake.hcl runner
#   docker build -f containers/runner/Dockerfile .
# containers/runner/Dockerfile.dockerignore limits what is sent.

# ---- fortio, cross-compiled natively on the build platform (pure Go, CGO off)
FROM --platform=$BUILDPLATFORM {go} AS fortio
ARG FORTIO_VERSION={t['fortio']['version']}
ARG TARGETOS
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go install "{t['fortio']['module']}@${{FORTIO_VERSION}}" \\
 && install -D -m 0755 "$(find /go/bin -type f -name fortio | head -n1)" /out/fortio

# ---- the userspace link emulator (NFQUEUE) used where the kernel has no sch_netem
FROM --platform=$BUILDPLATFORM {go} AS netem-emu
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY {t['edgebench-netem-emu']['dir']}/ ./
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -o /out/edgebench-netem-emu .

# ---- edgebench-relay: the models of the Skupper and ClusterLink data planes (standard library only)
FROM --platform=$BUILDPLATFORM {go} AS relay
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY {t['edgebench-relay']['dir']}/ ./
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -o /out/edgebench-relay .

# ---- edgebench-ddsrr: the round-robin DDS pinger (C on Cyclone DDS's C API), built for the target platform against
# the same Debian libddsc the final image's cyclonedds-tools brings
FROM {py} AS ddsrr
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends cyclonedds-dev cyclonedds-tools gcc libc6-dev \\
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY {t['edgebench-ddsrr']['dir']}/ ./
RUN mkdir -p /out && idlc ddsrr.idl && gcc -O2 -Wall -Wextra -Werror -I. -o /out/edgebench-ddsrr main.c ddsrr.c -lddsc -lm

# ---- kind (the kind substrate), cross-compiled from its pinned module version
FROM --platform=$BUILDPLATFORM {go} AS cluster-tools
ARG KIND_VERSION={t['kind']['version']}
ARG TARGETOS
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go install "{t['kind']['module']}@${{KIND_VERSION}}" \\
 && install -D -m 0755 "$(find /go/bin -type f -name kind | head -n1)" /out/kind

# ---- kubectl and helm for the target architecture, verified against the published .sha256 files
FROM --platform=$BUILDPLATFORM {go} AS downloads
ARG KUBECTL_VERSION={t['kubectl']['version']}
ARG HELM_VERSION={t['helm']['version']}
ARG TARGETARCH
WORKDIR /dl
RUN set -eux; \\
    curl -fsSLO "https://dl.k8s.io/release/${{KUBECTL_VERSION}}/bin/linux/${{TARGETARCH}}/kubectl"; \\
    curl -fsSL -o kubectl.sha256 "https://dl.k8s.io/release/${{KUBECTL_VERSION}}/bin/linux/${{TARGETARCH}}/kubectl.sha256"; \\
    echo "$(cat kubectl.sha256)  kubectl" | sha256sum -c -; \\
    helm_tgz="helm-${{HELM_VERSION}}-linux-${{TARGETARCH}}.tar.gz"; \\
    curl -fsSLO "https://get.helm.sh/${{helm_tgz}}"; \\
    curl -fsSL -o helm.sha256 "https://get.helm.sh/${{helm_tgz}}.sha256"; \\
    echo "$(cut -d' ' -f1 helm.sha256)  ${{helm_tgz}}" | sha256sum -c -; \\
    tar -xzf "${{helm_tgz}}" "linux-${{TARGETARCH}}/helm"; \\
    install -D -m 0755 kubectl /out/kubectl; \\
    install -D -m 0755 "linux-${{TARGETARCH}}/helm" /out/helm

# ---- the edgebench package in a virtualenv (dependency versions constrained by requirements.txt)
FROM {py} AS venv
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements.txt /src/requirements.txt
COPY containers/runner/pyproject.toml /src/runner/pyproject.toml
COPY containers/runner/src /src/runner/src
RUN python -m venv {spec['venv']} \\
 && {spec['venv']}/bin/pip install --constraint /src/requirements.txt /src/runner \\
 && {spec['venv']}/bin/edgebench --help >/dev/null

# ---- final image (the packages: containers/runner/image.toml says what each is for)
FROM {py}
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \\
 && apt-get install -y --no-install-recommends \\
{_wrap_packages(spec['packages'])} && rm -rf /var/lib/apt/lists/*
COPY --from=fortio /out/fortio /usr/local/bin/fortio
COPY --from=netem-emu /out/edgebench-netem-emu /usr/local/bin/edgebench-netem-emu
COPY --from=relay /out/edgebench-relay /usr/local/bin/edgebench-relay
COPY --from=ddsrr /out/edgebench-ddsrr /usr/local/bin/edgebench-ddsrr
COPY --from=cluster-tools /out/kind /usr/local/bin/kind
COPY --from=downloads /out/kubectl /out/helm /usr/local/bin/
COPY --from=venv {spec['venv']} {spec['venv']}
{privileges}
RUN groupadd --gid {u['uid']} {u['name']} \\
 && useradd --uid {u['uid']} --gid {u['uid']} --create-home --home-dir {u['home']} --shell /usr/sbin/nologin {u['name']}
# the commit the image was built from, recorded in every run's manifest (environment.edgebench_commit)
ARG EDGEBENCH_COMMIT=unknown
ENV {env_lines}
WORKDIR {u['home']}
USER {u['uid']}:{u['uid']}
ENTRYPOINT {exec_form(spec['entrypoint'])}
CMD {exec_form(spec['cmd'])}
"""


def write_dockerfile(path: Path = DOCKERFILE) -> bool:
    """Write the generated Dockerfile; True when it changed."""
    return ll.write_text(path, dockerfile(load()))
