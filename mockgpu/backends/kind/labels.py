"""The Kubernetes labels a spec node gets on a real cluster.

GPU labels come from the device plugin room's GFD-style ``gfd_labels(inventory, config)`` plus NFD's
``nvidia.com/gpu.present=true``. If that module cannot be imported (a trimmed install), a small
fallback derived from the spec alone is used. This module is the one place that knows about that seam.
"""

from __future__ import annotations

from mockgpu.config.clusterspec import ClusterSpec, NodeSpec
from mockgpu.config.nodelabels import identity_labels

# Node Feature Discovery's label on nodes with NVIDIA GPUs (GFD does not write it; FGO does).
PRESENT_LABEL = "nvidia.com/gpu.present"
# Labels GFD writes that change on every run; dropped so rendered output is stable.
_VOLATILE = ("nvidia.com/gfd.timestamp",)


def gpu_labels(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    """GFD-style ``nvidia.com/*`` labels for a node ({} for a node without GPUs)."""
    if node.gpu is None or node.gpu.count == 0:
        return {}
    try:
        from mockgpu.config.inventory import node_inventory
        from mockgpu.deviceplugin.labels import gfd_labels
    except ImportError:
        return _fallback_gpu_labels(node)
    labels = {PRESENT_LABEL: "true", **gfd_labels(node_inventory(spec, node.name), node.gpu.devicePluginConfig)}
    return {k: str(v) for k, v in sorted(labels.items()) if k not in _VOLATILE}


def _fallback_gpu_labels(node: NodeSpec) -> dict[str, str]:
    """What can be said without the hardware model: presence, count, sharing and MIG strategy.

    Simplified on purpose: no product name or memory (those need the GPU catalog).
    """
    assert node.gpu is not None
    cfg = node.gpu.devicePluginConfig
    replicas = cfg.replicas_for("nvidia.com/gpu")
    labels = {
        PRESENT_LABEL: "true",
        "nvidia.com/gpu.count": str(node.gpu.count),
        "nvidia.com/gpu.replicas": str(replicas),
        "nvidia.com/gpu.sharing-strategy": "time-slicing" if replicas > 1 else "none",
    }
    if any(node.gpu.mig_layout_of(i) for i in range(node.gpu.count)):
        labels["nvidia.com/mig.strategy"] = cfg.flags.migStrategy
    return dict(sorted(labels.items()))


def node_labels(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    """Everything a kind node is labelled with: the spec's labels, identity, GPU labels."""
    return {**node.labels, **identity_labels(node), **gpu_labels(spec, node)}
