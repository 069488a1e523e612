"""From a cluster spec to a kind ``Cluster`` config (``kind.x-k8s.io/v1alpha4``): pure functions.

One kind node per spec node, in ``spec.nodes()`` order: the first spec node is kind's control-plane node
(so the cluster's Nodes are exactly the spec's, and kube-scheduler's ``0/N nodes are available`` counts the
same N as on the other backends), the rest are workers. kind names the node *containers*
``<cluster>-control-plane``, ``<cluster>-worker``, ``<cluster>-worker2``, ... in config order, which is what
``kind_node_names`` relies on; the *Nodes* are named as the spec's nodes (kubeadm ``nodeRegistration.name``,
which the node image's CNI service reads back from the kubelet's ``--hostname-override``) and carry the
spec node's taints and nothing else (``nodeRegistration.taints`` replaces kubeadm's control-plane taint).
Per node: the spec's labels plus ``mockgpu.io/node`` and GFD-style GPU labels (applied by kind through
the kubelet), taints through the same ``JoinConfiguration`` patch, and the node's fake-driver state
directory bind-mounted at ``DRIVER_DIR``. kube-scheduler logs as JSON at ``-v=10`` (``SCHEDULER_LOG_ARGS``,
a kubeadm ``ClusterConfiguration`` patch) so its scores can be read back (``schedresults``). A
KubeSchedulerConfiguration is mounted into the control-plane node and handed to kube-scheduler with the
same patch (``scheduler.extraArgs.config`` + ``extraVolumes``).

Two patches depend on the machine and the node image rather than the spec (the backend fills them in):
``cgroup_v1`` (Docker reports cgroup v1: kubelet >= 1.35 refuses to start there unless its
KubeletConfiguration says ``failCgroupV1: false``) and ``skip_phases`` (kubeadm init phases the node
image cannot serve, e.g. ``addon/coredns`` for scripts/kind-node-image's offline image, which has no
CoreDNS image; ``preflight`` stays skipped, as kind always does).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mockgpu.backends.common.manifests import check_gpu_management
from mockgpu.backends.common.nodepaths import DRIVER_DIR
from mockgpu.backends.kind.images import NodeImage, node_image
from mockgpu.backends.kind.labels import node_labels
from mockgpu.config.clusterspec import ClusterSpec, NodeSpec
from mockgpu.config.nodelabels import identity_labels
from mockgpu.errors import ConfigError

KIND_API_VERSION = "kind.x-k8s.io/v1alpha4"
SCHEDULER_CONFIG = "/etc/kubernetes/mockgpu/scheduler-config.yaml"  # inside the control-plane node
FGO_POOL_LABEL = "run.ai/simulated-gpu-node-pool"  # fake-gpu-operator's nodePoolLabelKey
# the scheduler's per-node scores are only in its log at -v=10; JSON so schedlog can parse it
SCHEDULER_LOG_ARGS = {"v": "10", "logging-format": "json"}

# kubelet refuses to set labels in these namespaces on itself, except the allowed ones below
# (NodeRestriction rules); kind applies node labels through the kubelet, so catch them early.
_RESTRICTED = ("kubernetes.io/", "k8s.io/")
_ALLOWED_PREFIXES = ("kubelet.kubernetes.io/", "node.kubernetes.io/")
_ALLOWED_KEYS = {
    "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os", "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region", "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
}


@dataclass(frozen=True)
class KindRenderOptions:
    """Everything besides the spec that the rendered config depends on (so tests can pin it)."""

    name: str
    state_dir: Path  # host folder holding <node>/driver for every spec node
    scheduler_config: Path | None = None  # host path of the KubeSchedulerConfiguration to mount
    scheduler_source: Path | None = None  # the spec's file it is generated from (see scheduler.py)
    image: NodeImage | None = None
    device_plugin: str = "mockgpu"  # or "fake-gpu-operator"
    cgroup_v1: bool = False  # the Docker host runs cgroup v1: tell the kubelet not to refuse it
    skip_phases: tuple[str, ...] = ()  # more kubeadm init phases to skip, e.g. ("addon/coredns",)

    @property
    def node_image(self) -> NodeImage:
        return self.image or node_image()


def kind_node_names(spec: ClusterSpec, name: str) -> dict[str, str]:
    """kind's node (container) name -> spec node name (the Node's name too), for every node."""
    out: dict[str, str] = {}
    for i, node in enumerate(spec.nodes()):
        out[f"{name}-control-plane" if i == 0 else f"{name}-worker{i if i > 1 else ''}"] = node.name
    return out


def driver_host_dir(state_dir: Path, node: str) -> Path:
    """Host folder bind-mounted at ``DRIVER_DIR`` in the kind node for spec node ``node``."""
    return state_dir / node / "driver"


def check_labels(spec: ClusterSpec) -> None:
    """ConfigError for a spec label the kubelet may not set on its own node."""
    for i, pool in enumerate(spec.spec.nodePools):
        for key in pool.labels:
            prefix = key.split("/", 1)[0] + "/" if "/" in key else ""
            restricted = any(prefix == r or prefix.endswith("." + r) for r in _RESTRICTED)
            if restricted and key not in _ALLOWED_KEYS and not key.startswith(_ALLOWED_PREFIXES):
                raise ConfigError(
                    spec.source, f"spec.nodePools[{i}].labels",
                    f"'{key}' is in a kubernetes.io namespace the kubelet may not set "
                    "(kind labels nodes through the kubelet)",
                )


def _patch(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


# kubeadm's taint on a control-plane node; kind itself removes it from a one-node cluster (and fails if absent)
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def _node(spec: ClusterSpec, node: NodeSpec, opts: KindRenderOptions, control_plane: bool,
          alone: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {"role": "control-plane" if control_plane else "worker", "image": opts.node_image.ref}
    mounts: list[dict[str, Any]] = []
    if opts.device_plugin == "fake-gpu-operator":
        # FGO's status exporter writes its own GFD-style labels; it only needs the pool label.
        labels = {**node.labels, **identity_labels(node)}
        if node.gpu is not None and node.gpu.count:
            labels[FGO_POOL_LABEL] = node.pool
    else:
        labels = node_labels(spec, node)
        mounts.append({"hostPath": str(driver_host_dir(opts.state_dir, node.name)), "containerPath": DRIVER_DIR})
    if control_plane and opts.scheduler_config is not None:
        mounts.append({"hostPath": str(opts.scheduler_config.absolute()), "containerPath": SCHEDULER_CONFIG,
                       "readOnly": True})
    entry["labels"] = labels
    if mounts:
        entry["extraMounts"] = mounts
    # The Node is named as the spec node and ends up with exactly the spec's taints: an empty list drops
    # kubeadm's control-plane taint, except on a one-node cluster, where kind's own `kubectl taint ... -` does
    taints = [t.model_dump(exclude_defaults=False) for t in node.taints]
    if alone:
        taints.insert(0, dict(CONTROL_PLANE_TAINT))
    registration = {"kind": "InitConfiguration" if control_plane else "JoinConfiguration",
                    "nodeRegistration": {"name": node.name, "taints": taints}}
    entry["kubeadmConfigPatches"] = [_patch(registration)]
    return entry


def _scheduler_patch(config: bool) -> str:
    """kube-scheduler's flags (map form: kind >= v0.32 converts it to kubeadm v1beta4's list for >= 1.36)."""
    scheduler: dict[str, Any] = {"extraArgs": dict(SCHEDULER_LOG_ARGS)}
    if config:
        volume = {"name": "mockgpu-scheduler-config", "hostPath": SCHEDULER_CONFIG, "mountPath": SCHEDULER_CONFIG,
                  "readOnly": True, "pathType": "File"}
        scheduler = {"extraArgs": {"config": SCHEDULER_CONFIG, **SCHEDULER_LOG_ARGS}, "extraVolumes": [volume]}
    return _patch({"kind": "ClusterConfiguration", "scheduler": scheduler})


def kind_config(spec: ClusterSpec, opts: KindRenderOptions) -> dict[str, Any]:
    """The kind ``Cluster`` config for ``spec`` as a dict (dump it with ``yaml.safe_dump``)."""
    check_labels(spec)
    check_gpu_management(spec, device_plugin=opts.device_plugin)
    config: dict[str, Any] = {"kind": "Cluster", "apiVersion": KIND_API_VERSION, "name": opts.name}
    gates = spec.feature_gates()
    if gates.explicit:
        # kind passes them to every component (kubeadm's extraArgs and the KubeletConfiguration)
        config["featureGates"] = gates.as_dict()
    if gates.runtime_config():
        config["runtimeConfig"] = dict(item.split("=", 1) for item in gates.runtime_config().split(","))
    patches = config.setdefault("kubeadmConfigPatches", [_scheduler_patch(opts.scheduler_config is not None)])
    if opts.cgroup_v1:
        patches.append(_patch({"kind": "KubeletConfiguration", "failCgroupV1": False}))
    if opts.skip_phases:
        # a merge patch replaces the list: keep kind's own "preflight"
        phases = ["preflight", *[p for p in opts.skip_phases if p != "preflight"]]
        patches.append(_patch({"kind": "InitConfiguration", "skipPhases": phases}))
    spec_nodes = list(spec.nodes())
    nodes = [_node(spec, n, opts, control_plane=i == 0, alone=len(spec_nodes) == 1) for i, n in enumerate(spec_nodes)]
    if not nodes:  # a spec without nodes: kind's own control-plane node, tainted as kubeadm does
        nodes = [{"role": "control-plane", "image": opts.node_image.ref}]
        if opts.scheduler_config is not None:
            nodes[0]["extraMounts"] = [{"hostPath": str(opts.scheduler_config.absolute()),
                                        "containerPath": SCHEDULER_CONFIG, "readOnly": True}]
    config["nodes"] = nodes
    return config
