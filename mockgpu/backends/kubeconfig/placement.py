"""Which nodes of an existing cluster play which spec node: pure functions over ``kubectl get nodes -o json``.

The rule (also in docs/kind.md): a node may carry fake GPUs only if it has no real ones, i.e.
it is not labelled ``nvidia.com/gpu.present=true`` (GPU Feature Discovery's label) and shows no
``nvidia.com/gpu`` in allocatable, and it is not a control-plane node. A node already labelled
``mockgpu.io/node=<spec node>`` by an earlier run keeps that spec node (its ``nvidia.com/gpu`` then
comes from mockgpu itself). The remaining spec nodes take the remaining eligible nodes in name order.
The DaemonSet repeats the label half of the rule as node affinity, so it can never land on a node
that GFD marks as having real GPUs.
"""

from __future__ import annotations

from typing import Any

from mockgpu.config.clusterspec import ClusterSpec
from mockgpu.config.nodelabels import NODE_LABEL, identity_labels
from mockgpu.errors import MockgpuError

REAL_GPU_LABEL = "nvidia.com/gpu.present"
CONTROL_PLANE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")

# ANDed into the DaemonSet's node affinity (NotIn also matches nodes without the label).
NOT_REAL_GPU = {"key": REAL_GPU_LABEL, "operator": "NotIn", "values": ["true"]}


def _labels(node: dict[str, Any]) -> dict[str, str]:
    return node.get("metadata", {}).get("labels") or {}


def ineligible_reason(node: dict[str, Any]) -> str | None:
    """Why this node must not get fake GPUs, or None when it may."""
    labels = _labels(node)
    if labels.get(REAL_GPU_LABEL) == "true":
        return f"real GPUs ({REAL_GPU_LABEL}=true)"
    if any(k in labels for k in CONTROL_PLANE_LABELS):
        return "control-plane node"
    if NODE_LABEL in labels:
        return None  # ours from an earlier run; its nvidia.com/gpu is fake
    alloc = node.get("status", {}).get("allocatable") or {}
    if str(alloc.get("nvidia.com/gpu", "0")) not in ("0", ""):
        return f"real GPUs (allocatable nvidia.com/gpu={alloc['nvidia.com/gpu']})"
    return None


def assign_nodes(spec: ClusterSpec, nodes: list[dict[str, Any]]) -> dict[str, str]:
    """cluster node name -> spec node name; MockgpuError when the cluster has too few eligible nodes."""
    wanted = [n.name for n in spec.nodes()]
    eligible: list[str] = []
    refused: list[str] = []
    out: dict[str, str] = {}
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        reason = ineligible_reason(node)
        if reason:
            refused.append(f"{name}: {reason}")
            continue
        current = _labels(node).get(NODE_LABEL)
        if current in wanted and current not in out.values():
            out[name] = current
        else:
            eligible.append(name)
    free = [w for w in wanted if w not in out.values()]
    if len(free) > len(eligible):
        found = len(eligible) + len(out)
        why = f"; not used: {'; '.join(refused)}" if refused else ""
        raise MockgpuError(f"spec '{spec.name}' needs {len(wanted)} nodes without real GPUs, "
                           f"the cluster has {found}{why}")
    out.update(zip(eligible, free, strict=False))
    return dict(sorted(out.items()))


def label_args(spec: ClusterSpec, node_map: dict[str, str]) -> list[list[str]]:
    """``kubectl label`` argument lists (after ``kubectl``) that tie each node to its spec node.

    Only the spec's own labels and mockgpu's identity labels are set; GFD-style GPU labels are not,
    since ``nvidia.com/gpu.present=true`` is what marks *real* GPU nodes here. Taints are not applied
    to someone else's cluster.
    """
    args = []
    for cluster_node, spec_node in node_map.items():
        node = spec.node(spec_node)
        labels = {**node.labels, **identity_labels(node)}
        args.append(["label", "node", cluster_node, "--overwrite", *(f"{k}={v}" for k, v in labels.items())])
    return args
