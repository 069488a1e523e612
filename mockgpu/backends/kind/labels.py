"""The Kubernetes labels a spec node gets on a real cluster.

GPU labels come from the device plugin room's GFD-style ``gfd_labels(inventory, config)`` plus NFD's
``nvidia.com/gpu.present=true``.
"""

from __future__ import annotations

from mockgpu.config.clusterspec import ClusterSpec, NodeSpec
from mockgpu.config.inventory import node_inventory
from mockgpu.config.nodelabels import identity_labels
from mockgpu.deviceplugin.labels import gfd_labels

# Node Feature Discovery's label on nodes with NVIDIA GPUs (GFD does not write it; FGO does).
PRESENT_LABEL = "nvidia.com/gpu.present"
# Labels GFD writes that change on every run; dropped so rendered output is stable.
_VOLATILE = ("nvidia.com/gfd.timestamp",)


def gpu_labels(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    """GFD-style ``nvidia.com/*`` labels for a node ({} for a node without GPUs)."""
    if node.gpu is None or node.gpu.count == 0:
        return {}
    labels = {PRESENT_LABEL: "true", **gfd_labels(node_inventory(spec, node.name), node.gpu.devicePluginConfig)}
    return {k: str(v) for k, v in sorted(labels.items()) if k not in _VOLATILE}


def node_labels(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    """Everything a kind node is labelled with: the spec's labels, identity, GPU labels."""
    return {**node.labels, **identity_labels(node), **gpu_labels(spec, node)}
