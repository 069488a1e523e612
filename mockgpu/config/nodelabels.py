"""The labels a spec node's Node object carries, in one place for every backend.

``kubelet_labels`` are what upstream's kubelet puts on the Node it registers (``initialNode`` in
``pkg/kubelet/kubelet_node_status.go``: ``kubernetes.io/hostname``, ``kubernetes.io/os``, ``kubernetes.io/arch``
and their deprecated ``beta.`` twins), after the spec's own labels, plus mockgpu's identity labels:
``mockgpu.io/pool`` and ``mockgpu.io/node``, whose value is the spec node's name (``<pool>-<n>``) wherever the
node comes from (the embedded kubelet, the embedded API server's placeholder Nodes, kind's nodes), so that a
cluster node can be mapped back to its spec node. GPU labels (GFD's ``nvidia.com/*``) are the device plugin's.
"""

from __future__ import annotations

from mockgpu.config.specmodel import NodeSpec

NODE_LABEL = "mockgpu.io/node"  # value: the spec node name
POOL_LABEL = "mockgpu.io/pool"


def identity_labels(node: NodeSpec) -> dict[str, str]:
    """The labels that tie a cluster node to its spec node."""
    return {NODE_LABEL: node.name, POOL_LABEL: node.pool}


def kubelet_labels(node: NodeSpec) -> dict[str, str]:
    """The spec's labels, the well-known labels a kubelet registers its Node with, and the identity labels."""
    return {**node.labels, "kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
            POOL_LABEL: node.pool, NODE_LABEL: node.name}
