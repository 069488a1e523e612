"""run.ai fake-gpu-operator (FGO) as an alternative device plugin on kind: Helm values from a spec.

FGO advertises whole ``nvidia.com/gpu`` devices per node pool (old "flat" ``topology`` format:
``gpuProduct``, ``gpuCount``, ``gpuMemory`` MiB; nodes are matched by ``run.ai/simulated-gpu-node-pool``).
It cannot express MIG layouts, time-slicing replicas, NVLink groups or per-GPU NUMA placement;
``unsupported_features`` names each one the spec uses so ``up`` can say so.
Installed into namespace ``gpu-operator`` because FGO's nvidia-smi hardcodes that namespace.
"""

from __future__ import annotations

import re
from typing import Any

from mockgpu.backends.kind.config import FGO_POOL_LABEL
from mockgpu.config.clusterspec import ClusterSpec, NodeSpec
from mockgpu.config.inventory import node_inventory

CHART = "oci://ghcr.io/run-ai/fake-gpu-operator/fake-gpu-operator"
CHART_VERSION = "0.2.0"  # tag v0.2.0, 2026-07-01 (the newest the reference saw); pinned, never latest
RELEASE = "gpu-operator"
NAMESPACE = "gpu-operator"


def _gpu_facts(spec: ClusterSpec, node: NodeSpec) -> tuple[str, int]:
    """(product label value, memory MiB) of the node's GPU model.

    Uses the hardware model when present; otherwise derives both from the model name
    (``A100-SXM4-80GB`` -> ``NVIDIA-A100-SXM4-80GB``, 81920 MiB), a documented simplification.
    """
    assert node.gpu is not None
    try:
        gpu = node_inventory(spec, node.name).gpus[0]
        return re.sub(r"[^A-Za-z0-9._-]", "-", gpu.product_name)[:63], gpu.memory_mib
    except ImportError:
        m = re.search(r"(\d+)GB", node.gpu.model)
        return f"NVIDIA-{node.gpu.model}", int(m.group(1)) * 1024 if m else 0


def _first_nodes(spec: ClusterSpec) -> dict[str, NodeSpec]:
    """The first node of every pool that has GPUs."""
    out: dict[str, NodeSpec] = {}
    for node in spec.nodes():
        if node.gpu is not None and node.gpu.count and node.pool not in out:
            out[node.pool] = node
    return out


def fgo_values(spec: ClusterSpec) -> dict[str, Any]:
    """Helm values for the FGO chart: one FGO node pool per spec pool with GPUs, whole GPUs only."""
    pools: dict[str, Any] = {}
    for pool, node in _first_nodes(spec).items():
        assert node.gpu is not None
        product, memory = _gpu_facts(spec, node)
        pools[pool] = {"gpuProduct": product, "gpuCount": node.gpu.count, "gpuMemory": memory}
    return {"topology": {"nodePoolLabelKey": FGO_POOL_LABEL, "migStrategy": "none", "nodePools": pools}}


def unsupported_features(spec: ClusterSpec) -> list[str]:
    """One line per spec feature FGO cannot express (what it does instead)."""
    notes: list[str] = []
    for pool, node in _first_nodes(spec).items():
        g = node.gpu
        assert g is not None
        if any(g.mig_layout_of(i) for i in range(g.count)):
            notes.append(f"pool {pool}: MIG layout not expressible; FGO advertises {g.count} whole nvidia.com/gpu")
        replicas = g.devicePluginConfig.replicas_for("nvidia.com/gpu")
        if replicas > 1:
            notes.append(f"pool {pool}: time-slicing (replicas {replicas}) not expressible; "
                         f"FGO advertises {g.count} nvidia.com/gpu, not {g.count * replicas}")
        if g.topology.nvlink:
            notes.append(f"pool {pool}: NVLink groups not expressible (no GPU topology in FGO's device plugin)")
        if g.topology.numa and len(set(g.topology.numa)) > 1:
            notes.append(f"pool {pool}: per-GPU NUMA placement not expressible (FGO devices carry no TopologyInfo)")
    return notes


def helm_install_args(values_file: str, kube_context: str) -> list[str]:
    return ["helm", "upgrade", "--install", RELEASE, CHART, "--version", CHART_VERSION,
            "--namespace", NAMESPACE, "--kube-context", kube_context, "--values", values_file, "--wait"]
