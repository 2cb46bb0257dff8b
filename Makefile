# edgebench: `make sweep` (the main job) and `make test`, on a fresh Debian/Ubuntu machine as root.
# Everything the targets need is installed by them: apt packages, MinIO + mc (go install, pinned), a virtualenv.
SHELL := /bin/bash
.DEFAULT_GOAL := help

ROOT       := $(abspath .)
STATE      := $(ROOT)/.edgebench
VENV       := $(ROOT)/.venv
PY         := $(VENV)/bin/python
EDGEBENCH  := $(VENV)/bin/edgebench
TOOLS      ?= $(HOME)/.local/share/edgebench/tools
SWEEP      ?= workflows/sweep.yaml
ARGS       ?=
# how `make sweep` repeats: each variant at least 2 rounds, more (up to 6) where its comparison with the host is
# still open, while the next round ends within the time 3 full rounds take on this machine (3r: fixed 3's, measured on
# the sweep's own first rounds); a variant decided after round 2 (its spread pooled with the other modes') gives its
# time to the open ones (docs/verdicts.md, "Adaptive repetitions");
# REPEAT='-p repetitions=3' is the sweep file's fixed plan; ARGS that name repetitions, time-budget or a duration
# replace REPEAT
REPEAT     ?= -p repetitions=auto -p min-repetitions=2 -p max-repetitions=6 -p time-budget=3r
# Pinned MinIO server and client (Go module versions of their release commits)
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MC_VERSION    := v0.0.0-20250313080218-cf909e1063a9
APT_PACKAGES  := iproute2 iputils-ping nftables iptables ethtool iperf3 sockperf cyclonedds-tools procps \
                 cyclonedds-dev gcc libc6-dev wireguard-tools openssl curl ca-certificates python3-venv sysbench ipvsadm kmod runc jq \
                 clang libbpf-dev
# (clang and libbpf-dev build the testbed's eBPF forwarding for Cilium's modes: substrates/local/ebpf.py)
# the lab's node test (tests/host/test_lab_local.py: sshd in namespaces); only `make test` and `make lab-local` install
# them, so `make sweep` does not bring an SSH server to a machine that had none
TEST_PACKAGES := openssh-server openssh-client sudo
# `make test` runs the suite in this many processes (pytest-xdist): the tests that use the machine itself stay in one
# of them, one after another (tests/conftest.py); TEST_WORKERS=0 runs everything in one process
TEST_WORKERS ?= 2
# the portal's browser test and benchmark (headless Chromium driven by Selenium): Debian's packages; Ubuntu ships
# chromium as a snap (chromium-browser), which often cannot run in containers: best effort, the test skips without it
BROWSER_PACKAGES := chromium chromium-driver
FORTIO_VERSION := v1.66.5
KUBECTL_VERSION := v1.32.4
KUSTOMIZE_VERSION := v5.5.0
# make up-upstream (a workstation with Docker and a registry): kind matching the pinned upstream node image, the Argo
# CLI; make up's own build uses kind v0.33.0 (scripts/kind/mgmt.sh)
KIND_VERSION  := v0.29.0
# Argo Events' linter and edgebench's Sensor renderer (containers/events-check/go.mod pins the same version)
ARGO_EVENTS_VERSION := v1.9.11
ARGO_VERSION  := v4.1.2
CLUSTER       ?= edgebench
ARCH          := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)

export EDGEBENCH_TOOLS := $(TOOLS)
export EDGEBENCH_HOME  := $(ROOT)
export PATH := $(VENV)/bin:$(TOOLS):$(PATH)

.PHONY: help setup apt tools venv minio minio-stop sweep papers warehouse summary portal test bench clean \
        up up-upstream submit submit-tiny down mgmt-tools events-tools e2e-argo lab-local lab-local-down lab-argo papers-lab lab-mirror-arm64 \
        lab-vm lab-vm-down lab-vm-test

help: ## list the targets
	@echo "edgebench - benchmark Kubernetes networking stacks for edge clusters"
	@echo
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'
	@echo
	@echo "Variables: SWEEP=$(SWEEP)  ARGS='-p NAME=VALUE ...' (sweep parameter overrides)"

setup: apt tools venv ## install everything (apt packages, MinIO + mc, Python virtualenv, DuckDB httpfs)

apt: ## install the Debian/Ubuntu packages (only those missing)
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "apt: installing $$missing"; \
	  [ "$$(id -u)" = 0 ] || { echo "error: installing packages needs root (sudo make ...)" >&2; exit 1; }; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@missing=$$(for p in $(BROWSER_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ]; then \
	  echo "apt: installing $$missing (the portal's browser test)"; \
	  { DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null 2>&1; } || \
	    echo "note: $$missing not installable here (Ubuntu: chromium is a snap); tests/host/test_browser.py will skip"; \
	fi
	@command -v go >/dev/null || { echo "apt: installing golang-go (MinIO is built from source)"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null; }
	@command -v kubectl >/dev/null || echo "note: kubectl is not installed; only the management-cluster path needs it \
	  (make up/submit; \`make mgmt-tools\` downloads it there). Nothing here downloads from outside the package registries."

tools: $(TOOLS)/minio-$(MINIO_VERSION) $(TOOLS)/mc-$(MC_VERSION) $(TOOLS)/fortio-$(FORTIO_VERSION) \
       $(TOOLS)/kustomize-$(KUSTOMIZE_VERSION) $(TOOLS)/edgebench-netem-emu $(TOOLS)/edgebench-relay $(TOOLS)/edgebench-httpduet \
       $(TOOLS)/edgebench-ddsrr ## build MinIO, mc, fortio, kustomize, the netem emulator, the Skupper/ClusterLink relay, the interleaving HTTP client (Go, pinned; ~4 min once), the round-robin DDS pinger (C, seconds)

$(TOOLS)/minio-$(MINIO_VERSION):
	@echo "minio: go install github.com/minio/minio@$(MINIO_VERSION) (a few minutes, once)"
	@mkdir -p $(TOOLS) && cd /tmp && GOBIN=$(TOOLS) GOFLAGS=-buildvcs=false go install github.com/minio/minio@$(MINIO_VERSION)
	@touch $@

$(TOOLS)/mc-$(MC_VERSION):
	@echo "mc: go install github.com/minio/mc@$(MC_VERSION)"
	@mkdir -p $(TOOLS) && cd /tmp && GOBIN=$(TOOLS) GOFLAGS=-buildvcs=false go install github.com/minio/mc@$(MC_VERSION)
	@touch $@

$(TOOLS)/fortio-$(FORTIO_VERSION):
	@echo "fortio: go install fortio.org/fortio@$(FORTIO_VERSION) (the HTTP test services)"
	@mkdir -p $(TOOLS) && cd /tmp && GOBIN=$(TOOLS) GOFLAGS=-buildvcs=false go install fortio.org/fortio@$(FORTIO_VERSION)
	@touch $@

# kustomize builds the management-cluster manifests (tests validate them offline); the standalone module, since
# kubectl (which embeds it) is not in the package registries this must work from
$(TOOLS)/kustomize-$(KUSTOMIZE_VERSION):
	@echo "kustomize: go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)"
	@mkdir -p $(TOOLS) && cd /tmp && GOBIN=$(TOOLS) GOFLAGS=-buildvcs=false go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	@touch $@

# the userspace link emulator (NFQUEUE) for kernels without sch_netem; rebuilt when its sources change
$(TOOLS)/edgebench-netem-emu: containers/netem-emulator/main.go containers/netem-emulator/go.mod containers/netem-emulator/go.sum
	@echo "netem emulator: go build ./containers/netem-emulator"
	@mkdir -p $(TOOLS) && cd containers/netem-emulator && GOFLAGS=-buildvcs=false go build -o $(TOOLS)/edgebench-netem-emu .

# the data-plane models of Skupper and ClusterLink for the local testbed (standard library only); rebuilt when its
# sources change
$(TOOLS)/edgebench-httpduet: $(wildcard containers/httpduet/*.go) containers/httpduet/go.mod
	@echo "httpduet: go build ./containers/httpduet"
	@mkdir -p $(TOOLS) && cd containers/httpduet && GOFLAGS=-buildvcs=false go build -o $(TOOLS)/edgebench-httpduet .

$(TOOLS)/edgebench-relay: $(wildcard containers/relay/*.go) containers/relay/go.mod
	@echo "relay: go build ./containers/relay"
	@mkdir -p $(TOOLS) && cd containers/relay && GOFLAGS=-buildvcs=false go build -o $(TOOLS)/edgebench-relay .

# the round-robin DDS pinger (multi-subscriber latency, seed 000 Eq. 1) on Cyclone DDS's C API: idlc generates the
# sample type's C code, gcc links it against Debian's libddsc; rebuilt when its sources change
$(TOOLS)/edgebench-ddsrr: containers/ddsrr/main.c containers/ddsrr/ddsrr.idl
	@echo "ddsrr: idlc + gcc ./containers/ddsrr"
	@mkdir -p $(TOOLS) && tmp=$$(mktemp -d) && cd $$tmp && idlc $(CURDIR)/containers/ddsrr/ddsrr.idl \
	  && gcc -O2 -Wall -Wextra -Werror -I. -o $(TOOLS)/edgebench-ddsrr $(CURDIR)/containers/ddsrr/main.c ddsrr.c -lddsc -lm \
	  && rm -rf $$tmp

# Opt-in (not part of setup: ~10 min of compiling once on 2 cores, 2.6x what `tools` takes): the upstream Argo Events
# CLI for `argo-events lint`, and edgebench-events-render, which runs the rerun Sensor's filters and parameter mapping
# with Argo Events' own code. Both from containers/events-check (its go.mod/go.sum pin argo-events v1.9.11; the
# module proxy's version list is not needed). tests/host/test_events.py uses them when present and skips those checks
# with a reason otherwise.
events-tools: $(TOOLS)/argo-events-$(ARGO_EVENTS_VERSION) $(TOOLS)/edgebench-events-render ## build `argo-events lint` and the Sensor renderer (Go, pinned v1.9.11; ~10 min once)

$(TOOLS)/argo-events-$(ARGO_EVENTS_VERSION): containers/events-check/go.mod containers/events-check/go.sum
	@echo "argo-events: go build github.com/argoproj/argo-events/cmd@$(ARGO_EVENTS_VERSION) (~10 min once)"
	@mkdir -p $(TOOLS) && cd containers/events-check && \
	  GOFLAGS=-buildvcs=false go build -o $(TOOLS)/argo-events github.com/argoproj/argo-events/cmd
	@touch $@

$(TOOLS)/edgebench-events-render: $(wildcard containers/events-check/*.go) containers/events-check/go.mod containers/events-check/go.sum
	@echo "events render: go build ./containers/events-check"
	@mkdir -p $(TOOLS) && cd containers/events-check && GOFLAGS=-buildvcs=false go build -o $(TOOLS)/edgebench-events-render .

venv: $(VENV)/.stamp ## create the Python virtualenv with edgebench, dbt-duckdb, Streamlit

$(VENV)/.stamp: requirements.txt containers/runner/pyproject.toml
	@echo "venv: installing Python packages into $(VENV)"
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -r requirements.txt
	@$(PY) -m pip install -q -e containers/runner
	@$(PY) -c "from edgebench.results.warehouse import ensure_httpfs; ensure_httpfs()"
	@touch $@

minio: tools ## start the local MinIO on 127.0.0.1:9000 (data in .edgebench/minio)
	@scripts/minio.sh start

minio-stop: ## stop the local MinIO
	@scripts/minio.sh stop

# exit 2 is bad input (a spec, parameter or argument; the sweep changed nothing): the warehouse is left as it was.
# Any other end (a failed run, an interruption) still builds it from what was measured.
sweep: setup minio ## run the default sweep on the local testbed, build the warehouse, print the summary
	@rc=0; $(EDGEBENCH) sweep $(SWEEP) --local $(if $(findstring repetitions,$(ARGS))$(findstring time-budget,$(ARGS))$(findstring duration,$(ARGS)),,$(REPEAT)) $(ARGS) || rc=$$?; \
	 if [ $$rc -eq 2 ]; then exit 2; fi; \
	 $(EDGEBENCH) warehouse || exit $$?; \
	 echo; echo "Portal: make portal, then open http://127.0.0.1:8501"; exit $$rc

# the seed papers' undecided claims: their testbed presets within BUDGET (seconds, 90m, 2h), most claims first,
# then the scorecard; run again, it measures nothing already stored (docs/papers.md)
BUDGET ?= 2h
papers: setup minio ## run the testbed presets the papers' undecided claims need, within BUDGET (2h), then the scorecard
	@$(EDGEBENCH) papers run --budget $(BUDGET) $(ARGS)

# the same on the local lab (after make lab-local LAB_ONLY=1): the papers' cluster presets through the ssh substrate, the
# lab's own claims (substrate ssh, never pooled with the testbed's); ARGS='--paper 002 -p dds-duration=10' e.g.
papers-lab: setup minio ## the papers' cluster presets on the local lab (make lab-local LAB_ONLY=1 first) within BUDGET (root; opt-in)
	@[ "$$(id -u)" = 0 ] || { echo "error: make papers-lab needs root (the lab's nodes)" >&2; exit 1; }
	@eval "$$(scripts/lab-local/lab.sh env)"; \
	 [ -f "$$EDGEBENCH_INVENTORY" ] || { echo "error: the local lab is not up ($$EDGEBENCH_INVENTORY): make lab-local LAB_ONLY=1" >&2; exit 2; }; \
	 PY=$(PY) scripts/lab-local/mirror.sh serve 10.77.0.1 && \
	 PATH=$${EDGEBENCH_E2E:-$$HOME/.local/share/edgebench/e2e-argo}/bin:$$PATH $(EDGEBENCH) papers run --budget $(BUDGET) \
	   --inventory "$$EDGEBENCH_INVENTORY" --ssh-key "$$EDGEBENCH_SSH_KEY" --artifact-source http://10.77.0.1:8089 $(ARGS)

warehouse: setup minio ## rebuild the warehouse (.edgebench/warehouse.duckdb) from what is in MinIO
	@$(EDGEBENCH) warehouse

summary: venv ## print the throughput summary from the warehouse
	@$(EDGEBENCH) summary

portal: venv ## serve the Streamlit portal on http://127.0.0.1:8501, its warehouse following running sweeps (FOLLOW=0: not)
	@if [ "$(FOLLOW)" != 0 ]; then mkdir -p .edgebench; \
	  $(VENV)/bin/edgebench warehouse --follow > .edgebench/follow.log 2>&1 & pid=$$!; \
	  echo "portal: the warehouse follows the store (edgebench warehouse --follow; log: .edgebench/follow.log)"; \
	  trap "kill $$pid 2>/dev/null" EXIT INT TERM; fi; \
	$(VENV)/bin/streamlit run app/streamlit_app.py --server.address 127.0.0.1 --server.port 8501 \
	  --server.headless true --browser.gatherUsageStats false

test: setup argo-schemas ## install everything, then run the whole test suite
	@missing=$$(for p in $(TEST_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ]; then echo "apt: installing $$missing (the lab's node test)"; \
	  { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null; } || \
	  echo "note: $$missing not installable; tests/host/test_lab_local.py's node test will skip"; fi
	@$(PY) -m pytest -q -rs --durations=20 -n $(TEST_WORKERS) --dist loadgroup tests

# the Argo Workflows v3.7.9 / Argo Events v1.9.11 Go modules into the Go module cache, checksums checked: their JSON
# schemas and CRDs validate the manifests where ../shared/vendor lacks the pinned releases (tests/argo_schemas.py)
.PHONY: argo-schemas
argo-schemas: venv ## fetch the pinned Argo Go modules whose schemas validate the manifests (make test does)
	@$(PY) tests/argo_schemas.py fetch

bench: setup ## benchmarks, side by side in one run: fidelity, sweep overhead, warehouse and portal at scale (QUICK=1, ONLY=part,...)
	@$(PY) bench/run.py $(if $(QUICK),--quick) $(if $(ONLY),--only $(ONLY))

clean: ## remove the testbed, stop MinIO, delete local state (.edgebench)
	-@[ -x $(EDGEBENCH) ] && $(EDGEBENCH) testbed down || true
	-@scripts/minio.sh stop
	rm -rf $(STATE)

# ---- end to end on real Argo Workflows + Events: the kind management cluster (opt-in; root) ------------------------
# `make up` (below: built here, offline), then workflows/smoke.yaml, the default sweep's tiny variant, a calico version
# bump that the probe records and Argo Events' Sensor reruns, the keys in MinIO and the warehouse
# (scripts/e2e-argo/e2e.py), then `make down`. Cold, make up builds Kubernetes, the lab's mirror, Argo and the images
# once (about an hour on 2 cores), then about 2 min. KEEP=1 keeps the cluster up (make down removes it).
e2e-argo: ## smoke, a tiny sweep and a version-bump rerun on real Argo Workflows + Events on the kind management cluster (root)
	@rc=0; $(MAKE) --no-print-directory up UPSTREAM=0 && PY=$(PY) $(MGMT) e2e || rc=$$?; \
	if [ "$(KEEP)" != 1 ]; then $(MGMT) down; fi; exit $$rc

# ---- real CNIs on a local multi-node lab (opt-in) --------------------------------------------------------------------
# A control plane and 2 workers on this machine (scripts/lab-local/lab.sh: namespaces of one kernel, sshd, a Pi-format
# inventory), an air-gapped artifact mirror built from the Go module proxy and Debian (mirror.sh), and the sweep run
# through the ssh substrate: kubeadm over SSH, flannel / kube-router from their mirrored manifests, cilium from the
# mirrored Helm chart, the default sweep's workloads in real pods; then the same cells on the testbed for
# `edgebench report --emulation`.
# KEEP=1 keeps the lab up (LAB_ONLY=1: up with its mirror, no sweep); CNIS='[...]' REPS=N change the sweep. See docs/lab-local.md.
LAB_PACKAGES := containerd runc containernetworking-plugins umoci skopeo debootstrap gcc libc6-dev conntrack iptables \
                openssh-server openssh-client sudo util-linux
lab-local: setup ## real CNIs on a local 3-node kubeadm lab through the ssh substrate, beside the testbed (root; opt-in)
	@[ "$$(id -u)" = 0 ] || { echo "error: make lab-local needs root (namespaces, containerd, kubelet)" >&2; exit 1; }
	@missing=$$(for p in $(LAB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "apt: installing $$missing"; DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi
	@$(MAKE) --no-print-directory minio
	@EB=$(EDGEBENCH) PY=$(PY) scripts/lab-local/run.sh

lab-local-down: ## stop the local lab and remove everything it left (after a crash or KEEP=1; FORCE=1 under a live sweep)
	@scripts/lab-local/lab.sh down

# The lab's sweep through the management cluster's Argo controller (argo submit -p substrate=ssh): the kind
# management cluster (make up) and the lab with its mirror (make lab-local KEEP=1). CNIS='[...]' REPS=N;
# PRESET=workflows/presets/seed-004-kubeadm.yaml submits a paper's preset instead of sweep.yaml; ARGS='--rerun' adds a
# flannel version bump and Argo Events' rerun on the lab. See docs/lab-argo.md.
LAB_ARGO_ARGS = $(if $(PRESET),--preset $(PRESET)) $(if $(CNIS),--cnis '$(CNIS)') $(if $(REPS),--reps $(REPS)) \
                $(if $(SWEEP_ID),--sweep-id $(SWEEP_ID)) $(ARGS)
lab-argo: setup ## the lab's sweep submitted with argo submit on the kind management cluster (after make up and make lab-local KEEP=1)
	@[ "$$(id -u)" = 0 ] || { echo "error: make lab-argo needs root (the management cluster's images)" >&2; exit 1; }
	@$(MGMT) running || { echo "error: the kind management cluster is not up: make up" >&2; exit 2; }
	@PY=$(PY) $(MGMT) lab $(LAB_ARGO_ARGS)

# The same artifact source for arm64 nodes (a Raspberry Pi lab), built on this amd64 machine: Go cross-compiles,
# Debian's arm64 packages install into roots under qemu-user-static (binfmt_misc), then every arm64 binary of the
# mirror runs under emulation (mirror.sh prove). Cold about an hour on 2 cores, cached seconds. See docs/lab-local.md.
LAB_ARM64_PACKAGES := qemu-user-static gcc-aarch64-linux-gnu libc6-dev-arm64-cross file
lab-mirror-arm64: setup ## the lab's air-gapped artifact mirror for arm64 (Pi) nodes, proven under qemu (root; opt-in)
	@[ "$$(id -u)" = 0 ] || { echo "error: make lab-mirror-arm64 needs root (chroot, image layers)" >&2; exit 1; }
	@missing=$$(for p in $(LAB_PACKAGES) $(LAB_ARM64_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "apt: installing $$missing"; DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi
	@scripts/e2e-argo/build.sh --k8s
	@ARCH=arm64 scripts/lab-local/build.sh
	@ARCH=arm64 scripts/e2e-argo/images.sh build runner
	@ARCH=arm64 PY=$(PY) scripts/lab-local/mirror.sh build
	@ARCH=arm64 PY=$(PY) scripts/lab-local/mirror.sh prove

# VM nodes with a kernel of their own beside the lab (scripts/lab-local/vm.py): qemu full-system guests under TCG with
# Debian bookworm's stock kernel (x86: linux-image-cloud-amd64; arm64: linux-image-arm64 on -M virt, a Pi stand-in),
# for what this machine's kernel lacks (WireGuard, Geneve, IPIP, ESP, netem). Only these targets install qemu;
# `make test` boots no VM (tests/unit/test_lab_vm.py is offline, tests/live/test_lab_vm_live.py is opt-in).
# VMS=x86:1,arm64:1 (default x86:1). The base image is built once per kind (debootstrap, minutes). docs/lab-vm.md.
LAB_VM_PACKAGES := qemu-system-x86 qemu-system-arm qemu-utils qemu-user-static debootstrap e2fsprogs openssh-client
VMS ?= x86:1
lab-vm: ## VM nodes (qemu TCG, Debian's stock kernel) on the lab's bridge: VMS=x86:1,arm64:1 (root; opt-in)
	@[ "$$(id -u)" = 0 ] || { echo "error: make lab-vm needs root (taps, debootstrap, chroot)" >&2; exit 1; }
	@missing=$$(for p in $(LAB_VM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "apt: installing $$missing"; DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi
	@scripts/lab-local/lab.sh vm up $(VMS)

lab-vm-down: ## stop the VM nodes: qemu, taps, overlays, state (lab.sh down also does)
	@scripts/lab-local/lab.sh vm down

lab-vm-test: venv ## the opt-in live test of the VM nodes (boots an x86 guest; builds its base image when missing)
	@[ "$$(id -u)" = 0 ] || { echo "error: make lab-vm-test needs root" >&2; exit 1; }
	@missing=$$(for p in $(LAB_VM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "apt: installing $$missing"; DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi
	@python3 scripts/lab-local/vm.py image x86
	@EDGEBENCH_VM_LIVE=1 $(PY) -m pytest -q -rs -p no:cacheprovider tests/live/test_lab_vm_live.py

# ---- management cluster: kind (opt-in; root) ------------------------------------------------------------------------
# `make up` builds everything from this machine's own builds and runs offline (scripts/kind/mgmt.sh: a Docker engine of
# its own where none runs, kind v0.33.0 from the Go module proxy, a node image for Kubernetes v1.33.4 built from a
# Debian root, flannel from the lab's mirror, Argo Workflows v3.7.9, Argo Events v1.9.11, MinIO and edgebench). Where a
# container registry answers, UPSTREAM=auto (the default) takes upstream's node image, images and release binaries
# (up-upstream); UPSTREAM=0 forces the local build, UPSTREAM=1 upstream's. docs/argo.md, docs/substrates.md.
UPSTREAM ?= auto
MGMT := scripts/kind/mgmt.sh

up: setup $(TOOLS)/argo-events-$(ARGO_EVENTS_VERSION) ## create the kind management cluster with Argo Workflows, Argo Events, MinIO and the edgebench templates (offline here)
	@[ "$$(id -u)" = 0 ] || { echo "error: make up needs root (an engine of its own, a node image built with chroot)" >&2; exit 1; }
	@missing=$$(for p in $(LAB_PACKAGES) jq tzdata; do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "apt: installing $$missing"; DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi
	@up=$(UPSTREAM); if [ "$$up" = auto ]; then \
	  if curl -s -o /dev/null --max-time 5 https://registry.k8s.io/v2/; then up=1; else up=0; \
	    echo "up: no container registry answers (registry.k8s.io): the cluster is built from this machine's own builds"; fi; fi; \
	if [ "$$up" = 1 ]; then $(MAKE) --no-print-directory up-upstream; else PY=$(PY) $(MGMT) up; fi

submit: ## argo submit $(SWEEP) --watch on the management cluster (ARGS='-p NAME=VALUE ...')
	@SWEEP=$(SWEEP) $(MGMT) submit $(ARGS)

submit-tiny: ## the default sweep's tiny variant on the management cluster (workflows/tiny.params.yaml: no edge lab needed)
	@SWEEP=$(SWEEP) $(MGMT) submit --parameter-file workflows/tiny.params.yaml $(ARGS)

down: ## delete the kind management cluster; stop the engine if make up started it (PURGE=1: its image cache too)
	@$(MGMT) down

# upstream's path (a workstation with Docker and a registry): kind matching the pinned node image, kubectl, the
# argo CLI, and the project's images built with buildx
up-upstream: mgmt-tools
	kind get clusters 2>/dev/null | grep -qx $(CLUSTER) || \
	  kind create cluster --name $(CLUSTER) --config kustomize/overlays/kind/kind-cluster.yaml
	kubectl apply --server-side -k kustomize/upstream/argo-workflows
	kubectl apply --server-side -k kustomize/upstream/argo-events
	kubectl -n argo rollout status deploy/workflow-controller --timeout=300s
	kubectl -n argo-events rollout status deploy/controller-manager --timeout=300s
	docker buildx bake -f containers/docker-bake.hcl --load --set '*.platform=linux/$(ARCH)' \
	  --set runner.tags=edgebench-runner:dev --set http-services.tags=edgebench-http:dev
	kind load docker-image edgebench-runner:dev edgebench-http:dev --name $(CLUSTER)
	kubectl apply -k kustomize/overlays/kind
	kubectl -n edgebench rollout status deploy/minio --timeout=300s
	kubectl -n edgebench wait --for=condition=complete job/minio-make-bucket --timeout=300s
	@echo "management cluster ready: make submit (or: argo -n edgebench submit workflows/smoke.yaml --watch)"

mgmt-tools:
	@command -v docker >/dev/null && docker info >/dev/null 2>&1 || { echo "error: make up-upstream needs a running Docker engine" >&2; exit 1; }
	@command -v kubectl >/dev/null || { echo "kubectl: downloading $(KUBECTL_VERSION) from dl.k8s.io"; mkdir -p $(TOOLS); \
	  curl -fsSL -o $(TOOLS)/kubectl https://dl.k8s.io/release/$(KUBECTL_VERSION)/bin/linux/$(ARCH)/kubectl \
	  && chmod +x $(TOOLS)/kubectl; }
	@test -x $(TOOLS)/kind || { echo "kind: go install sigs.k8s.io/kind@$(KIND_VERSION)"; mkdir -p $(TOOLS); \
	  cd /tmp && GOBIN=$(TOOLS) go install sigs.k8s.io/kind@$(KIND_VERSION); }
	@test -x $(TOOLS)/argo || { echo "argo: downloading the $(ARGO_VERSION) CLI"; mkdir -p $(TOOLS); \
	  curl -fsSL https://github.com/argoproj/argo-workflows/releases/download/$(ARGO_VERSION)/argo-linux-$(ARCH).gz \
	  | gunzip > $(TOOLS)/argo && chmod +x $(TOOLS)/argo; }
