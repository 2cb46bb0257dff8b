"""The recipe of each image images.py builds: Argo's controller and executor, MinIO and mc, NATS, Argo Events (a
static root with one binary each) and the runner (two cached stages: debootstrap + apt packages, then the user,
the Go tools and the venv; then its config). What the runner holds is containers/runner/image.toml's.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

from imagelib import REPO, SUITE, Chroot, Conf, Layout, base_files, install_binary, is_static, safe_rm, say

import cmdkit as ck  # noqa: E402 - on sys.path through imagelib
import lablib as ll  # noqa: E402
import imagekeys as ik  # noqa: E402
import runner_image as ri  # noqa: E402

# applets of busybox linked in the mc image (the make-bucket Job runs `/bin/sh -c 'until mc ...; do sleep 3; done'`)
BUSYBOX_APPLETS = ("sh", "ash", "cat", "cp", "echo", "env", "false", "id", "ls", "mkdir", "mv", "printf", "rm",
                   "sleep", "test", "true")
# like Debian's slim images: no documentation, manual pages or translations (the copyright files stay)
DPKG_SLIM = ("path-exclude /usr/share/doc/*", "path-include /usr/share/doc/*/copyright", "path-exclude /usr/share/man/*",
             "path-exclude /usr/share/groff/*", "path-exclude /usr/share/info/*", "path-exclude /usr/share/locale/*",
             "path-exclude /usr/share/lintian/*", "path-exclude /usr/share/linda/*")
PROXY_VARS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY",
              "HTTPS_PROXY", "NO_PROXY")


def tail(log: str, n: int = 20) -> None:
    """The last N lines of LOG on stderr (what failed, before the one-line error)."""
    lines = Path(log).read_text(errors="replace").splitlines(keepends=True) if os.path.exists(log) else []
    sys.stderr.write("".join(lines[-n:]))
    sys.stderr.flush()


def logged(argvs: list[list[str]], log: str, what: str, **kw) -> None:
    """Each command in turn, their output in LOG; on a failure the log's tail and Fail(WHAT (log: LOG))."""
    with open(log, "w") as f:
        for argv in argvs:
            if subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, **kw).returncode:
                break
        else:
            return
    tail(log)
    raise ck.Fail(f"{what} (log: {log})")


class Recipes:
    def __init__(self, conf: Conf, layout: Layout, inputs: ik.Inputs):
        self.c, self.layout, self.inputs = conf, layout, inputs

    def argo(self, cmd: str, w: str) -> None:
        """workflow-controller or argoexec (emissary: `argoexec init` copies /bin/argoexec into the pod's volume)."""
        root = f"{w}/bundle/rootfs"
        if not self.inputs.check_argo(cmd):
            raise ck.Fail(f"{cmd}: its binary is missing")
        self.layout.new_bundle(cmd, f"{w}/bundle")
        base_files(root, [("argo", 8737)])
        install_binary(self.inputs.argo_binary(cmd), root, f"/bin/{cmd}")
        self.layout.finish_bundle(cmd, f"{w}/bundle", "--config.entrypoint", cmd, "--config.env", "PATH=/bin:/usr/bin",
                                  "--config.user", "8737")

    def busybox(self, root: str, w: str) -> None:
        """busybox from Debian's busybox-static as /bin/busybox, with the links of BUSYBOX_APPLETS."""
        v = ik.busybox_version()
        if v is None:
            raise ck.Fail("no busybox-static to download")
        d = f"{self.c.cache}/busybox-static/{v}"
        debs = sorted(glob.glob(f"{d}/*.deb"))
        if not debs:
            os.makedirs(d, exist_ok=True)
            ll.run(["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", f"busybox-static={v}"], cwd=d)
            debs = sorted(glob.glob(f"{d}/*.deb"))
        ll.run(["dpkg-deb", "-x", debs[0], f"{w}/busybox"])
        ll.run(["install", "-m", "0755", f"{w}/busybox/bin/busybox", f"{root}/bin/busybox"])
        if not is_static(f"{root}/bin/busybox"):
            raise ck.Fail(f"busybox from {debs[0]} is not static")
        for a in BUSYBOX_APPLETS:
            Path(f"{root}/bin/{a}").unlink(missing_ok=True)
            os.symlink("busybox", f"{root}/bin/{a}")

    def tool(self, name: str, w: str) -> None:
        """minio or mc, as uid 1000 like kustomize/base/minio (mc with busybox's /bin/sh)."""
        root, src = f"{w}/bundle/rootfs", f"{self.c.tools}/{name}"
        self.layout.new_bundle(name, f"{w}/bundle")
        base_files(root, [(name, 1000)])
        install_binary(src, root, f"/usr/bin/{name}")
        if name == "mc":
            self.busybox(root, w)
        self.layout.finish_bundle(name, f"{w}/bundle", "--config.entrypoint", name, "--config.env",
                                  "PATH=/usr/bin:/bin", "--config.env", "HOME=/tmp", "--config.user", "1000:1000")

    def nats(self, w: str) -> None:
        """uid 1000 like kustomize/overlays/e2e/nats-deployment.yaml; JetStream's store in /data (1777); the path in
        argo-events-controller-config's startCommand, should the controller run NATS itself (like nats:*)."""
        root = f"{w}/bundle/rootfs"
        self.layout.new_bundle("nats", f"{w}/bundle")
        base_files(root, [("nats", 1000)])
        install_binary(f"{self.c.e2e}/bin/nats-server", root, "/usr/bin/nats-server")
        os.symlink("/usr/bin/nats-server", f"{root}/nats-server")
        os.makedirs(f"{root}/data")
        os.chmod(f"{root}/data", 0o1777)
        self.layout.finish_bundle("nats", f"{w}/bundle", "--config.entrypoint", "nats-server", "--config.env",
                                  "PATH=/usr/bin:/bin", "--config.env", "HOME=/tmp", "--config.user", "1000:1000")

    def argo_events(self, w: str) -> None:
        """Argo Events' controller, EventSource and Sensor services are one binary: like upstream's image
        /bin/argo-events, the CA bundle and the zone database, and the argo CLI the argoWorkflow trigger runs;
        uid 9731, the runAsUser of upstream's controller-manager Deployment."""
        root = f"{w}/bundle/rootfs"
        self.layout.new_bundle("argo-events", f"{w}/bundle")
        base_files(root, [("argo-events", 9731)])
        install_binary(f"{self.c.tools}/argo-events", root, "/bin/argo-events")
        install_binary(f"{self.c.e2e}/bin/argo", root, "/usr/local/bin/argo")
        os.makedirs(f"{root}/usr/share", exist_ok=True)
        ll.run(["cp", "-a", "/usr/share/zoneinfo", f"{root}/usr/share/zoneinfo"])
        self.layout.finish_bundle("argo-events", f"{w}/bundle", "--config.entrypoint", "/bin/argo-events",
                                  "--config.env", "PATH=/usr/local/bin:/bin:/usr/bin", "--config.user", "9731")

    # -------------------------------------------------------------------------------------------- the runner
    def runner_base(self, w: str, tag: str) -> None:
        """Stage 1: debootstrap --variant=minbase + the apt packages, cleaned (one layer)."""
        root, mirror, security = f"{w}/bundle/rootfs", ik.debian_mirror(), ik.debian_security()
        packages = self.inputs.packages
        self.layout.new_bundle(tag, f"{w}/bundle")
        say(f"runner: debootstrap --variant=minbase {SUITE} ({self.c.arch}) from {mirror} (log: {w}/debootstrap.log)")
        if not ll.debootstrap_root(self.c.lab(), say, root, f"{w}/debootstrap.log", mirror):
            tail(f"{w}/debootstrap.log")
            raise ck.Fail(f"debootstrap failed (log: {w}/debootstrap.log)")
        safe_rm(f"{root}/dev")
        os.makedirs(f"{root}/dev", mode=0o755)  # containers get their own /dev
        Path(f"{root}/etc/apt/sources.list").write_text(
            f"deb {mirror} {SUITE} main\ndeb {mirror} {SUITE}-updates main\ndeb {security} {SUITE}-security main\n")
        Path(f"{root}/etc/dpkg/dpkg.cfg.d/edgebench-slim").write_text("".join(f"{x}\n" for x in DPKG_SLIM))
        Path(f"{root}/usr/sbin/policy-rc.d").write_text("#!/bin/sh\nexit 101\n")  # no service starts in the chroot
        os.chmod(f"{root}/usr/sbin/policy-rc.d", 0o755)
        shutil.copyfile("/etc/resolv.conf", f"{root}/etc/resolv.conf")
        say(f"runner: apt-get install {' '.join(packages)} (log: {w}/apt.log)")
        with Chroot(root) as ch:
            logged([ch.argv(["apt-get", "update"]),
                    ch.argv(["apt-get", "install", "-y", "--no-install-recommends", *packages]),
                    ch.argv(["apt-get", "clean"])], f"{w}/apt.log", "apt-get in the runner's chroot failed")
        ll.run(["sh", "-c", 'r=$1; rm -f "$r/usr/sbin/policy-rc.d" "$r"/var/cache/apt/*.bin "$r"/var/log/*.log '
                '"$r"/var/log/apt/*; rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/debconf/*-old "$r"/tmp/* '
                '"$r"/var/tmp/*; find "$r/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete; '
                'find "$r/usr/share/doc" -mindepth 1 -type d -empty -delete; '
                'rm -rf "$r"/usr/share/man/* "$r"/usr/share/groff/* "$r"/usr/share/info/* "$r"/usr/share/locale/* '
                '"$r"/usr/share/lintian/* "$r"/usr/share/linda/*', "sh", root])
        for f in ("etc/resolv.conf", "etc/hostname"):  # the runtime mounts its own; debootstrap copied the modes
            Path(f"{root}/{f}").write_text("")
            os.chmod(f"{root}/{f}", 0o644)
        self.layout.finish_bundle(tag, f"{w}/bundle", "--history.created_by",
                                  f"debootstrap --variant=minbase {SUITE}; apt-get install {' '.join(packages)}")

    def runner_venv(self, base: str, w: str, tag: str, spec: dict) -> None:
        """Stage 2: user edgebench, the Go tools, the venv /opt/edgebench with containers/runner (one layer)."""
        root, user = f"{w}/bundle/rootfs", spec["user"]
        safe_rm(f"{w}/bundle")
        ll.run(["umoci", "unpack", "--image", f"{self.layout.path}:{base}", f"{w}/bundle"], quiet=True)
        with Chroot(root) as ch:
            for argv in (["groupadd", "--gid", str(user["uid"]), user["name"]],
                         ["useradd", "--uid", str(user["uid"]), "--gid", str(user["uid"]), "--create-home",
                          "--home-dir", user["home"], "--shell", "/usr/sbin/nologin", user["name"]]):
                ll.run(ch.argv(argv))
            for t in self.inputs.tools:
                ll.run(["install", "-m", "0755", f"{self.c.tools_dir}/{t}", f"{root}/usr/local/bin/{t}"])
            for t in self.inputs.extra:
                ll.run(["install", "-m", "0755", t, f"{root}/usr/local/bin/{os.path.basename(t)}"])
            os.makedirs(f"{root}/src/runner")
            ll.run(["install", "-m", "0644", f"{REPO}/requirements.txt", f"{root}/src/requirements.txt"])
            ll.run(["sh", "-c", 'tar -C "$1/containers/runner" --exclude=__pycache__ --exclude="*.pyc" '
                    '--exclude="*.egg-info" -cf - pyproject.toml src | tar -C "$2/src/runner" -xf -', "sh",
                    str(REPO), root])
            shutil.copyfile("/etc/resolv.conf", f"{root}/etc/resolv.conf")
            # pip trusts the host's CA bundle during the build (PyPI may be reached through a TLS-inspecting
            # proxy); the image keeps Debian's own bundle
            ll.run(["install", "-m", "0644", "/etc/ssl/certs/ca-certificates.crt", f"{root}/tmp/build-ca.crt"])
            env = ["PIP_NO_CACHE_DIR=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_CERT=/tmp/build-ca.crt",
                   f"PIP_DEFAULT_TIMEOUT={os.environ.get('PIP_DEFAULT_TIMEOUT') or 120}"]
            env += [f"{v}={os.environ[v]}" for v in PROXY_VARS if os.environ.get(v)]
            say(f"runner: venv /opt/edgebench, pip install --constraint requirements.txt containers/runner "
                f"(log: {w}/pip.log)")
            logged([ch.argv(["python3", "-m", "venv", "/opt/edgebench"]),
                    ch.argv(["/opt/edgebench/bin/pip", "install", "--constraint", "/src/requirements.txt",
                             "/src/runner"], env)], f"{w}/pip.log", "pip in the runner's chroot failed")
            self.sanity(ch, spec)
        ll.run(["sh", "-c", 'rm -rf "$1/src" "$1"/tmp/* "$1"/root/.cache', "sh", root])
        Path(f"{root}/etc/resolv.conf").write_text("")
        extra = " ".join(os.path.basename(t) for t in self.inputs.extra)
        self.layout.finish_bundle(tag, f"{w}/bundle", "--history.created_by",
                                  f"edgebench venv (containers/runner), {' '.join(self.inputs.tools)} {extra}")

    def sanity(self, ch: Chroot, spec: dict) -> None:
        """The image's checks (image.toml's [[check]]), in the chroot: edgebench --help as the user, then each
        tool's version (nft not under qemu: qemu-user has no NETLINK_NETFILTER sockets)."""
        say("runner: sanity checks in the chroot")
        uid = spec["user"]["uid"]
        p = subprocess.run(["chroot", f"--userspec={uid}:{uid}", ch.root, "/usr/bin/env", "-i",
                            f"HOME={spec['user']['home']}", "PATH=/opt/edgebench/bin:/usr/bin:/bin", "edgebench",
                            "--help"], stdout=subprocess.DEVNULL)
        if p.returncode:
            raise ck.Fail(f"runner: edgebench --help fails in the image (as uid {uid})")
        say(f"runner:   edgebench --help: ok (as uid {uid})")
        for check in spec["check"]:
            c, argv = " ".join(check["run"]), check["run"]
            if self.c.foreign and check.get("emulated") is False:
                out = ll.out(["file", "-b", f"{ch.root}{check['binary']}"])
                say(f"runner:   {c}: not run under qemu ({check['why']}): {','.join(out.split(',')[:2])}")
                continue
            p = ch.run(argv)
            first = p.stdout.split("\n", 1)[0]
            if check.get("expect"):  # no version option: the output's start is the proof (its exit status is not 0)
                if not p.stdout.startswith(check["expect"]):
                    raise ck.Fail(f"runner: {argv[0]} does not run in the image: {p.stdout.rstrip()}")
            elif p.returncode:
                raise ck.Fail(f"runner: {c} fails in the image: {p.stdout.rstrip()}")
            say(f"runner:   {c}: {first}")

    def runner(self, w: str, venv_inputs: str, spec: dict) -> None:
        """The two stages (cached by their inputs), then the image's config on top of the venv stage."""
        base, venv = self.inputs.base_tag(), ik.runner_venv_tag(self.c.arch, venv_inputs)
        self.layout.ensure_stage(base, lambda tag: self.runner_base(w, tag))
        self.layout.ensure_stage(venv, lambda tag: self.runner_venv(base, w, tag, spec))
        if self.layout.has("runner"):
            self.layout.rm("runner")
        ll.run(["umoci", "config", "--image", f"{self.layout.path}:{venv}", "--tag", "runner",
                *runner_config(spec, ik.edgebench_commit())])


def runner_config(spec: dict, commit: str) -> list[str]:
    """umoci config's options of the runner image: its environment (PATH first, then EDGEBENCH_COMMIT), working
    directory, user, entrypoint and command."""
    env = [f"{k}={v}" for k, v in ri.offline_env(spec).items()]
    env.insert(1, f"EDGEBENCH_COMMIT={commit}")
    uid = spec["user"]["uid"]
    return [*(x for e in env for x in ("--config.env", e)), "--config.workingdir", spec["user"]["home"],
            "--config.user", f"{uid}:{uid}", "--config.entrypoint", spec["entrypoint"][0],
            f"--config.cmd={spec['cmd'][0]}"]
