"""``KindBackend``: a real multi-node Kubernetes in Docker running mockgpu's device plugin.

``up`` runs named steps and prints each with its time: preflight, build the mockgpu image, create
the cluster, load the image into the nodes, apply the manifests (or install fake-gpu-operator with
Helm), and wait until every GPU node's allocatable shows GPUs (and every DRA node's ResourceSlices are
published). The image is built *before* the cluster is created so a broken build costs no cluster. On a
failure after creation starts, the half-created cluster is deleted unless ``retain`` is set.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from pathlib import Path
from typing import TextIO

import yaml

from mockgpu.backends.base import ClusterInfo, Traits, UpOptions, kubeconfig_of, status_of
from mockgpu.backends.common.dramanifests import dra_nodes
from mockgpu.backends.common.images import mockgpu_image
from mockgpu.backends.common.kueue import MANIFESTS_IN_IMAGE, NAMESPACE, kind_manifests, kueue_image
from mockgpu.backends.common.manifests import dump_stream
from mockgpu.backends.common.run import Progress, Result, Runner
from mockgpu.backends.common.waitgpus import wait_for_gpus
from mockgpu.backends.kind import fgo
from mockgpu.backends.kind.cluster import KindCluster
from mockgpu.backends.kind.config import DRIVER_DIR, KindRenderOptions, driver_host_dir, kind_config
from mockgpu.backends.kind.preflight import first_blocking, preflight
from mockgpu.backends.kind.render import cluster_manifests, default_state_dir, render_all, render_options
from mockgpu.backends.kind.scheduler import scheduler_config_for_kind
from mockgpu.config.clusterspec import ClusterSpec
from mockgpu.errors import MockgpuError

SKIP_PHASES_LABEL = "mockgpu.node-image.kubeadm-skip-phases"
# set by scripts/kind-node-image on images whose containerd applies CDI specs (1.7 with enable_cdi)
CDI_LABEL = "mockgpu.node-image.cdi"
PYTHON_BASE_ENV = "MOCKGPU_PYTHON_BASE"
# Run in each kind node by `down`: stop what writes into the driver folder, then empty it (not the mount).
_EMPTY_DRIVER_DIR = (
    "systemctl stop kubelet >/dev/null 2>&1; crictl rmp --all --force >/dev/null 2>&1; "
    f"find {DRIVER_DIR} -mindepth 1 -delete"
)


def checkout_root() -> Path:
    """The mockgpu checkout the image is built from (the folder holding the Dockerfile)."""
    return Path(__file__).resolve().parents[3]


def _last_line(res: Result) -> str:
    lines = [ln.strip() for ln in (res.stderr or res.stdout).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else f"exit code {res.returncode}"


def remove_tree(path: Path) -> list[Path]:
    """Remove ``path`` like ``rm -rf``; return what could not be removed instead of hiding it."""
    left: list[Path] = []

    def record(_func, failed, _exc) -> None:
        left.append(Path(failed))

    if not path.exists():
        return []
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=record)
    else:
        shutil.rmtree(path, onerror=record)
    return left


class KindBackend:
    name = "kind"

    def __init__(self, runner: Runner | None = None, out: TextIO | None = None, state_root: Path | None = None):
        self.runner = runner or Runner()
        self.out = out or sys.stderr
        self.state_root = state_root  # tests pin it; default: $XDG_STATE_HOME/mockgpu/kind

    @property
    def traits(self) -> Traits:
        """Real kubelets run the workloads' image (the loaded mockgpu image, never pulled); the real
        kube-scheduler's results reach the pods from its log (``schedresults``)."""
        return Traits(sandboxed=False, results_after_decision=True, workload_image=(mockgpu_image(), "Never"),
                      wait_factor=3.0, kueue=True)

    # -- the Backend protocol -------------------------------------------------------------------
    def is_available(self) -> str | None:
        return first_blocking(preflight(self.runner, nodes=1))

    def cluster(self, opts: UpOptions) -> KindCluster:
        return KindCluster(self, opts)

    def up(self, opts: UpOptions) -> ClusterInfo:
        state = self._state_dir(opts.name)
        if opts.dry_run:
            print(render_all(opts, state), end="", file=sys.stdout)
            return ClusterInfo(opts.name, self.name, "", self.kubeconfig_path(opts), "dry-run")
        return self.cluster(opts).start().info()

    def create(self, opts: UpOptions) -> ClusterInfo:
        """The steps of ``up`` (``KindCluster.start``): preflight, build, create, load, apply, wait for GPUs."""
        state = self._state_dir(opts.name)
        kind_opts = render_options(opts, state)  # bad options fail before any side effect
        use_fgo = opts.device_plugin == "fake-gpu-operator"
        nodes = max(1, sum(1 for _ in opts.spec.nodes()))  # the first spec node is the control plane
        kueue = opts.spec.spec.kueue.enabled
        progress = Progress(total=7 if kueue else 6, out=self.out)
        with progress.step("preflight"):
            checks = preflight(self.runner, nodes=nodes, helm=use_fgo, image=kind_opts.node_image)
            for c in checks:
                progress.note(("ok   " if c.ok else ("FAIL " if c.blocking else "warn ")) + c.message)
            problem = first_blocking(checks)
            if problem:
                raise MockgpuError(problem)
            self._refuse_existing(opts.name)
            self._check_cdi(opts.spec, kind_opts)
            if kueue:
                self._check_kueue_image()
        with progress.step("build image" if not use_fgo else "build image (skipped: fake-gpu-operator)"):
            if not use_fgo:
                self._build_image()
        kubeconfig = self.kubeconfig_path(opts)
        try:
            with progress.step(f"create cluster {opts.name} ({nodes} nodes)"):
                self._create(opts, kind_opts, state, kubeconfig)
            with progress.step("load image" if not use_fgo else "load image (skipped: fake-gpu-operator)"):
                if not use_fgo:
                    self._load_image(opts.name, state, progress)
            with progress.step("apply manifests" + (" and helm install fake-gpu-operator" if use_fgo else "")):
                self._apply(opts, kubeconfig, state)
            with progress.step("wait for GPUs in node allocatable"):
                wait_for_gpus(self.runner, self._kubectl(kubeconfig, opts.name), opts.spec, progress)
            if kueue:
                with progress.step(f"install Kueue ({kueue_image()})"):
                    self._install_kueue(opts.name, kubeconfig, state)
        except BaseException:
            if opts.retain:
                progress.note(f"keeping the half-created cluster '{opts.name}' (--retain); "
                              f"delete it with `kind delete cluster --name {opts.name}`")
            else:
                progress.note(f"deleting the half-created cluster '{opts.name}' (use --retain to keep it)")
                self.runner.run(["kind", "delete", "cluster", "--name", opts.name])
            raise
        progress.finish(f"kind cluster '{opts.name}' is up")
        return ClusterInfo(opts.name, self.name, self._endpoint(kubeconfig, opts.name), kubeconfig, "running",
                           kueue=kueue)

    def down(self, name: str) -> None:
        """Delete the cluster and its state folder; root-owned driver files are removed from inside the nodes
        first, and anything still left is reported (one line with ``sudo rm -rf``), never silently kept."""
        problem = self.is_available()
        if problem:
            raise MockgpuError(problem)
        clusters = self.cluster_names()
        if name not in clusters:
            raise MockgpuError(f"no kind cluster named '{name}' (kind clusters: {', '.join(clusters) or 'none'})")
        self._empty_driver_dirs(name)
        self.runner.check(["kind", "delete", "cluster", "--name", name])
        state = self._state_dir(name)
        left = remove_tree(state)
        if left:
            shown = ", ".join(str(p) for p in left[:3]) + (", ..." if len(left) > 3 else "")
            raise MockgpuError(f"kind cluster '{name}' deleted, but {len(left)} entries under {state} could not be "
                               f"removed ({shown}; probably created by root in a container): run `sudo rm -rf {state}`")

    def list(self) -> list[ClusterInfo]:
        if self.is_available() is not None:
            return []
        infos = []
        for name in self.cluster_names():
            kubeconfig = self._state_dir(name) / "kubeconfig"
            res = self.runner.run(["docker", "inspect", "-f", "{{.State.Running}}", f"{name}-control-plane"])
            state = "running" if res.stdout.strip() == "true" else "stopped"
            infos.append(ClusterInfo(name, self.name, self._endpoint(kubeconfig, name), kubeconfig, state))
        return infos

    def status(self, name: str) -> ClusterInfo | None:
        return status_of(self, name)

    def kubeconfig(self, name: str) -> Path:
        return kubeconfig_of(self, name)

    def kubeconfig_path(self, opts: UpOptions) -> Path:
        """Where ``up`` writes the kubeconfig of ``opts.name``."""
        return opts.kubeconfig or self._state_dir(opts.name) / "kubeconfig"

    def cluster_names(self) -> list[str]:
        """``kind get clusters``."""
        res = self.runner.check(["kind", "get", "clusters"])
        return [ln.strip() for ln in res.stdout.splitlines() if ln.strip() and not ln.startswith("No kind")]

    # -- steps ----------------------------------------------------------------------------------
    def _state_dir(self, name: str) -> Path:
        return self.state_root / name if self.state_root else default_state_dir(name)

    def _refuse_existing(self, name: str) -> None:
        if name not in self.cluster_names():
            return
        nodes = [n for n in self.runner.run(["kind", "get", "nodes", "--name", name]).stdout.split() if n]
        raise MockgpuError(
            f"a kind cluster named '{name}' already exists ({len(nodes)} node containers; it may be half-created): "
            f"delete it with `mockgpu down --backend kind --name {name}` or choose another name"
        )

    def _load_image(self, name: str, state: Path, progress: Progress) -> None:
        """``kind load docker-image``; if that fails, ``docker save`` one platform + ``kind load image-archive``.

        With Docker's containerd image store (Docker 29's default, Docker Desktop) ``kind load docker-image``
        fails with ``ctr: content digest ... not found`` (kind#3795): the saved archive names content of other
        platforms (or attestations) that ``ctr import --all-platforms`` cannot find. Saving only the daemon's
        own platform is the workaround kind's maintainers give; a plain ``docker save`` would fail the same way.
        """
        image = mockgpu_image()
        first = self.runner.run(["kind", "load", "docker-image", image, "--name", name], timeout=900)
        if first.returncode == 0:
            return
        progress.note(f"`kind load docker-image` failed ({_last_line(first)}); retrying with `docker save` + "
                      "`kind load image-archive` (Docker's containerd image store, kind#3795)")
        platform = self.runner.run(["docker", "version", "--format", "{{.Server.Os}}/{{.Server.Arch}}"], timeout=30)
        only = ["--platform", platform.stdout.strip()] if platform.returncode == 0 and platform.stdout.strip() else []
        archive = state / "mockgpu-image.tar"
        try:
            self.runner.check(["docker", "save", *only, "-o", str(archive), image], timeout=900)
            self.runner.check(["kind", "load", "image-archive", str(archive), "--name", name], timeout=900)
        finally:
            archive.unlink(missing_ok=True)

    def _check_kueue_image(self) -> None:
        """spec.kueue needs the image ``scripts/kind-images kueue`` packs from the upstream build (before any side
        effect: one line saying how to make it)."""
        if self.runner.run(["docker", "image", "inspect", kueue_image()]).returncode != 0:
            raise MockgpuError(f"spec.kueue needs the image {kueue_image()}: build Kueue with "
                               "`scripts/upstream-build kueue`, then `scripts/kind-images kueue`")

    def _install_kueue(self, name: str, kubeconfig: Path, state: Path) -> None:
        """The release manifests out of the Kueue image, the image into the nodes, the release applied with the
        manager on that image; done when its Deployment is Available and a server-side dry-run ResourceFlavor passes
        Kueue's webhooks."""
        image = kueue_image()
        created = self.runner.check(["docker", "create", image], timeout=120).stdout.strip()
        release_file = state / "kueue-release.yaml"
        try:
            self.runner.check(["docker", "cp", f"{created}:{MANIFESTS_IN_IMAGE}", str(release_file)], timeout=120)
        finally:
            self.runner.run(["docker", "rm", created], timeout=120)
        release = [d for d in yaml.safe_load_all(release_file.read_text()) if d]
        self.runner.check(["kind", "load", "docker-image", image, "--name", name], timeout=900)
        kubectl = self._kubectl(kubeconfig, name)
        self.runner.check([*kubectl, "apply", "--server-side", "-f", "-"],
                          input=dump_stream(kind_manifests(release, image)), timeout=300)
        self.runner.check([*kubectl, "-n", NAMESPACE, "wait", "--for=condition=Available", "--timeout=300s",
                           "deployment/kueue-controller-manager"], timeout=330)
        probe = dump_stream([{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                              "metadata": {"name": "mockgpu-webhook-probe"}}])
        for _ in range(60):
            res = self.runner.run([*kubectl, "create", "--dry-run=server", "-f", "-"], input=probe, timeout=60)
            if res.returncode == 0:
                return
            self.runner.sleep(2)
        raise MockgpuError(f"Kueue's webhooks did not answer within 2 minutes: {_last_line(res)}")

    def _empty_driver_dirs(self, name: str) -> None:
        """Empty every node's bind-mounted driver folder from inside its kind node, as root.

        The device plugin and the workloads run as root in the node, so what they write into the host's
        ``<state>/<node>/driver`` is root-owned and a non-root user could not remove it afterwards. The
        kubelet and the node's pods are stopped first (a training pod rewrites its ledger every step), then
        the folder's contents go; it is a bind mount, so never the mount point itself. Best effort: a node
        that is gone or stopped leaves its files to ``remove_tree``'s report.
        """
        nodes = self.runner.run(["kind", "get", "nodes", "--name", name]).stdout.split()
        for node in sorted(n for n in nodes if n.startswith(f"{name}-")):
            self.runner.run(["docker", "exec", node, "sh", "-c", _EMPTY_DRIVER_DIR], timeout=120)

    def _build_image(self) -> None:
        root = checkout_root()
        if not (root / "Dockerfile").is_file():
            raise MockgpuError(f"the mockgpu image is built from a checkout, but {root}/Dockerfile does not exist")
        # $MOCKGPU_PYTHON_BASE: a local Python base image where python:3.11-slim cannot be pulled (CI builds one
        # from Debian packages with scripts/kind-images); the Dockerfile's ARG BASE defaults to the public one.
        base = os.environ.get(PYTHON_BASE_ENV)
        build_arg = ["--build-arg", f"BASE={base}"] if base else []
        self.runner.check(["docker", "build", *build_arg, "-t", mockgpu_image(), str(root)], timeout=1800)

    def _check_cdi(self, spec: ClusterSpec, kind_opts: KindRenderOptions) -> None:
        """A spec with DRA pools on a local node image needs containerd to apply CDI specs (the DRA driver's
        devices reach containers only that way): refuse an image that does not say so (its label), rather than
        run pods without their devices. The pinned kindest/node images run containerd 2.x, where CDI is on."""
        image = kind_opts.node_image
        if not image.local or not dra_nodes(spec):
            return
        res = self.runner.run(["docker", "image", "inspect", "-f", '{{index .Config.Labels "' + CDI_LABEL + '"}}',
                               image.local])
        if res.returncode == 0 and res.stdout.strip() != "true":
            raise MockgpuError(f"node image {image.local} has no label {CDI_LABEL}=true (its containerd may not "
                               "apply CDI specs, which the DRA driver's devices need): rebuild it with "
                               "scripts/kind-node-image")

    def _machine_options(self, kind_opts: KindRenderOptions) -> KindRenderOptions:
        """The kubeadm patches this Docker host and node image need (see config.py): cgroup v1, and the
        init phases a node image says it cannot serve (label mockgpu.node-image.kubeadm-skip-phases,
        set by scripts/kind-node-image)."""
        info = self.runner.run(["docker", "info", "--format", "{{.CgroupVersion}}"])
        cgroup_v1 = info.returncode == 0 and info.stdout.strip() == "1"
        label = self.runner.run(["docker", "image", "inspect", "-f",
                                 '{{index .Config.Labels "' + SKIP_PHASES_LABEL + '"}}', kind_opts.node_image.ref])
        value = label.stdout.strip() if label.returncode == 0 else ""
        phases = tuple(p.strip() for p in value.split(",") if p.strip() and value != "<no value>")
        return dataclasses.replace(kind_opts, cgroup_v1=cgroup_v1, skip_phases=phases)

    def _create(self, opts: UpOptions, kind_opts: KindRenderOptions, state: Path, kubeconfig: Path) -> None:
        kind_opts = self._machine_options(kind_opts)
        state.mkdir(parents=True, exist_ok=True)
        state.chmod(0o700)  # only its owner reaches the world-writable driver folders below
        for node in opts.spec.nodes():
            driver = driver_host_dir(state, node.name)
            driver.mkdir(parents=True, exist_ok=True)
            # The plugin runs as root with every capability dropped, so it has no DAC override: it may
            # write into a folder owned by the invoking user only if that folder is writable by all.
            driver.chmod(0o777)
        if kind_opts.scheduler_source is not None and kind_opts.scheduler_config is not None:
            kind_opts.scheduler_config.parent.mkdir(parents=True, exist_ok=True)
            kind_opts.scheduler_config.write_text(scheduler_config_for_kind(kind_opts.scheduler_source))
        config = state / "kind-config.yaml"
        config.write_text(dump_stream([kind_config(opts.spec, kind_opts)]))
        kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        retain = ["--retain"] if opts.retain else []  # else kind itself removes nodes of a failed create
        self.runner.check(["kind", "create", "cluster", "--name", opts.name, "--config", str(config),
                           "--kubeconfig", str(kubeconfig), "--wait", "5m", *retain], timeout=900)

    def _kubectl(self, kubeconfig: Path, name: str) -> list[str]:
        return ["kubectl", "--kubeconfig", str(kubeconfig), "--context", f"kind-{name}"]

    def _apply(self, opts: UpOptions, kubeconfig: Path, state: Path) -> None:
        stream = dump_stream(cluster_manifests(opts))
        self.runner.check([*self._kubectl(kubeconfig, opts.name), "apply", "-f", "-"], input=stream)
        if opts.device_plugin == "fake-gpu-operator":
            values = state / "fake-gpu-operator-values.yaml"
            values.write_text(dump_stream([fgo.fgo_values(opts.spec)]))
            for note in fgo.unsupported_features(opts.spec):
                print(f"      fake-gpu-operator cannot express: {note}", file=self.out)
            self.runner.check([*fgo.helm_install_args(str(values), f"kind-{opts.name}"),
                               "--kubeconfig", str(kubeconfig)], timeout=900)

    def _endpoint(self, kubeconfig: Path, name: str) -> str:
        try:
            data = yaml.safe_load(kubeconfig.read_text()) or {}
        except (OSError, yaml.YAMLError):
            return ""
        for c in data.get("clusters") or []:
            if c.get("name") == f"kind-{name}":
                return str(c.get("cluster", {}).get("server", ""))
        return ""
