"""The kubeconfig backend: mockgpu's device plugin on an existing cluster (current context, or the
kubeconfig in ``UpOptions.kubeconfig``), only on nodes without real GPUs (rule in ``placement``).

The image (``mockgpu:<version>``, or ``$MOCKGPU_IMAGE``) must be pullable by the cluster's nodes;
it is not built or pushed here.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import yaml

from mockgpu.backends.base import ClusterInfo, Traits, UpOptions, kubeconfig_of, status_of
from mockgpu.backends.common.images import mockgpu_image
from mockgpu.backends.common.manifests import NAMESPACE, PluginManifestOptions, dump_stream, plugin_manifests
from mockgpu.backends.common.run import Progress, Runner, kubectl_check
from mockgpu.backends.common.waitgpus import wait_for_gpus
from mockgpu.backends.kubeconfig.placement import NOT_REAL_GPU, assign_nodes, label_args
from mockgpu.config.clusterspec import ClusterSpec
from mockgpu.errors import MockgpuError

IMAGE_ENV = "MOCKGPU_IMAGE"


def image() -> str:
    return os.environ.get(IMAGE_ENV) or mockgpu_image()


def render_manifests(spec: ClusterSpec, node_map: dict[str, str]) -> list[dict[str, Any]]:
    """The objects to apply for ``spec`` with this node assignment (pure)."""
    opts = PluginManifestOptions(image=image(), node_names=node_map, pull_policy="IfNotPresent",
                                 extra_match=[NOT_REAL_GPU], dra=False)
    return plugin_manifests(spec, opts)


def render_all(spec: ClusterSpec, node_map: dict[str, str]) -> str:
    """Dry-run output: the node labels as comments, then every manifest as one YAML stream."""
    head = f"# mockgpu on an existing cluster from {Path(spec.source).name}; nodes labelled with:\n"
    head += "".join(f"#   kubectl {' '.join(a)}\n" for a in label_args(spec, node_map))
    return head + dump_stream(render_manifests(spec, node_map))


class KubeconfigBackend:
    """mockgpu's device plugin on an existing cluster; ``cluster(opts)`` refuses: it creates no cluster of its own."""

    name = "kubeconfig"
    traits = Traits(sandboxed=False)  # the cluster's own kubelets and scheduler: nothing assumed

    def __init__(self, runner: Runner | None = None, out: TextIO | None = None):
        self.runner = runner or Runner()
        self.out = out or sys.stderr

    def _kubectl(self, kubeconfig: Path | None = None) -> list[str]:
        path = kubeconfig or (Path(os.environ["KUBECONFIG"]) if os.environ.get("KUBECONFIG") else None)
        return ["kubectl", *(["--kubeconfig", str(path)] if path else [])]

    def is_available(self) -> str | None:
        check = kubectl_check(self.runner)
        return None if check.ok else check.message

    def cluster(self, opts: UpOptions) -> Any:
        raise MockgpuError("the kubeconfig backend installs mockgpu on an existing cluster and owns none: use "
                           "mockgpu up --backend kubeconfig, or point a lab at the cluster with MOCKGPU_KUBECONFIG",
                           exit_code=2)

    def status(self, name: str) -> ClusterInfo | None:
        return status_of(self, name)

    def kubeconfig(self, name: str) -> Path:
        return kubeconfig_of(self, name)

    def _nodes(self, kubeconfig: Path | None) -> list[dict[str, Any]]:
        res = self.runner.check([*self._kubectl(kubeconfig), "get", "nodes", "-o", "json"], timeout=60)
        return json.loads(res.stdout).get("items", [])

    def up(self, opts: UpOptions) -> ClusterInfo:
        problem = self.is_available()
        if problem:
            raise MockgpuError(problem)
        if opts.device_plugin != "mockgpu":
            raise MockgpuError("the kubeconfig backend runs only mockgpu's device plugin "
                               "(fake-gpu-operator: install its Helm chart yourself)", exit_code=2)
        kubectl = self._kubectl(opts.kubeconfig)
        node_map = assign_nodes(opts.spec, self._nodes(opts.kubeconfig))
        if opts.dry_run:
            print(render_all(opts.spec, node_map), end="", file=sys.stdout)
            return ClusterInfo(opts.name, self.name, self._endpoint(kubectl), self._path(opts), "dry-run")
        progress = Progress(total=2, out=self.out)
        with progress.step("label nodes and apply manifests"):
            for args in label_args(opts.spec, node_map):
                self.runner.check([*kubectl, *args])
            self.runner.check([*kubectl, "apply", "-f", "-"], input=dump_stream(render_manifests(opts.spec, node_map)))
        with progress.step("wait for GPUs in node allocatable"):
            wait_for_gpus(self.runner, kubectl, opts.spec, progress)
        progress.finish("mockgpu device plugin is up")
        return ClusterInfo(opts.name, self.name, self._endpoint(kubectl), self._path(opts), "running")

    def down(self, name: str) -> None:
        problem = self.is_available()
        if problem:
            raise MockgpuError(problem)
        kubectl = self._kubectl()
        self.runner.check([*kubectl, "delete", "namespace", NAMESPACE, "--ignore-not-found"], timeout=300)
        self.runner.check([*kubectl, "delete", "clusterrole,clusterrolebinding", "mockgpu-gpu-state",
                           "--ignore-not-found"])
        # No labelled nodes is fine (kubectl then says "no objects passed to label").
        self.runner.run([*kubectl, "label", "nodes", "-l", "mockgpu.io/node", "mockgpu.io/node-", "mockgpu.io/pool-"])

    def list(self) -> list[ClusterInfo]:
        if self.is_available() is not None:
            return []
        kubectl = self._kubectl()
        res = self.runner.run([*kubectl, "-n", NAMESPACE, "get", "configmap", "mockgpu-spec", "-o", "json"], timeout=30)
        if res.returncode != 0:
            return []
        spec = yaml.safe_load(json.loads(res.stdout).get("data", {}).get("spec.yaml", "")) or {}
        name = spec.get("metadata", {}).get("name", "unknown")
        return [ClusterInfo(name, self.name, self._endpoint(kubectl), self._path(None), "running")]

    def _path(self, opts: UpOptions | None) -> Path:
        if opts is not None and opts.kubeconfig:
            return opts.kubeconfig
        return Path(os.environ.get("KUBECONFIG") or Path.home() / ".kube" / "config")

    def _endpoint(self, kubectl: list[str]) -> str:
        res = self.runner.run([*kubectl, "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"])
        return res.stdout.strip() if res.returncode == 0 else ""
