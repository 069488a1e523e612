"""Everything ``mockgpu up --backend kind`` would create, as one YAML stream (the dry-run output).

Documents in order: the kind ``Cluster`` config, then the Kubernetes objects ``kubectl apply`` gets,
then (fake-gpu-operator only) the Helm values, preceded by comments naming what FGO cannot express.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mockgpu.backends.base import UpOptions
from mockgpu.backends.common.images import mockgpu_image
from mockgpu.backends.common.kueue import kueue_image
from mockgpu.backends.common.manifests import (
    PluginManifestOptions,
    check_gpu_management,
    dump_stream,
    namespace,
    plugin_manifests,
)
from mockgpu.backends.kind import fgo
from mockgpu.backends.kind.config import KindRenderOptions, kind_config, kind_node_names
from mockgpu.backends.kind.images import node_image
from mockgpu.backends.kind.scheduler import scheduler_config_for_kind
from mockgpu.errors import MockgpuError

DEVICE_PLUGINS = ("mockgpu", "fake-gpu-operator")


def default_state_dir(name: str) -> Path:
    """Host folder for a kind cluster's per-node fake-driver state."""
    root = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return root / "mockgpu" / "kind" / name


def render_options(opts: UpOptions, state_dir: Path | None = None) -> KindRenderOptions:
    if opts.device_plugin not in DEVICE_PLUGINS:
        raise MockgpuError(f"unknown device plugin '{opts.device_plugin}' (known: {', '.join(DEVICE_PLUGINS)})",
                           exit_code=2)
    check_gpu_management(opts.spec, device_plugin=opts.device_plugin)  # DRA pools need our driver: before anything
    state = state_dir or default_state_dir(opts.name)
    source = opts.scheduler_config or opts.spec.scheduler_config_path()
    mounted = None
    if source is not None:
        scheduler_config_for_kind(source)  # a bad file fails here, before any side effect
        mounted = state / "scheduler-config.yaml"
    # The node image is chosen here, once: preflight checks the kind version against it, the config names it.
    return KindRenderOptions(name=opts.name, state_dir=state, scheduler_config=mounted, scheduler_source=source,
                             image=node_image(), device_plugin=opts.device_plugin)


def cluster_manifests(opts: UpOptions) -> list[dict[str, Any]]:
    """The objects applied with kubectl after the cluster exists."""
    if opts.device_plugin == "fake-gpu-operator":
        return [namespace(fgo.NAMESPACE)]
    names = {node: node for node in kind_node_names(opts.spec, opts.name).values()}  # Nodes bear the spec's names
    return plugin_manifests(opts.spec, PluginManifestOptions(image=mockgpu_image(), node_names=names))


def render_all(opts: UpOptions, state_dir: Path | None = None) -> str:
    """The kind config and every manifest as one YAML stream; touches neither Docker nor the cluster."""
    kind_opts = render_options(opts, state_dir)
    source = Path(opts.spec.source).name
    out = f"# mockgpu kind cluster '{opts.name}' from {source}; device plugin: {opts.device_plugin}\n"
    out += dump_stream([kind_config(opts.spec, kind_opts), *cluster_manifests(opts)])
    if opts.device_plugin == "fake-gpu-operator":
        out += f"# Helm values: helm upgrade --install {fgo.RELEASE} {fgo.CHART} --version {fgo.CHART_VERSION}\n"
        for note in fgo.unsupported_features(opts.spec):
            out += f"# fake-gpu-operator cannot express: {note}\n"
        out += dump_stream([fgo.fgo_values(opts.spec)])
    if opts.spec.spec.kueue.enabled:  # the release manifests live in the image: up applies them (kueue.py)
        out += (f"# spec.kueue: up then installs Kueue's release manifests from the image {kueue_image()} "
                "(scripts/kind-images kueue), the manager on that image\n")
    return out
