"""Build a node's fake hardware (``mockgpu.gpu.inventory.NodeInventory``) from a cluster spec.

The spec has already been checked (``mockgpu.config.semantic``), so models exist and MIG layouts
place; everything here is deterministic, so every process that builds the same node's inventory
(device plugin, kubelet, nvidia-smi's driver directory) agrees on UUIDs and MIG placements.
"""

from __future__ import annotations

from dataclasses import replace

from mockgpu.config.clusterspec import ClusterSpec, GPUSpec
from mockgpu.gpu.catalog import get_model
from mockgpu.gpu.inventory import MigInstance, NodeInventory, PhysicalGPU
from mockgpu.gpu.mig import place_layout
from mockgpu.gpu.uuids import gpu_uuid, mig_uuid, pci_bus_id


def _nvlink_peers(gpu: GPUSpec, index: int) -> tuple[int, ...]:
    peers: set[int] = set()
    for group in gpu.topology.nvlink:
        if index in group:
            peers.update(i for i in group if i != index)
    return tuple(sorted(peers))


def node_inventory(spec: ClusterSpec, node: str) -> NodeInventory:
    """The GPUs (and MIG instances) of ``node``; ConfigError if the spec has no such node."""
    n = spec.node(node)
    gpus: list[PhysicalGPU] = []
    if n.gpu is not None:
        model = get_model(n.gpu.model)
        for i in range(n.gpu.count):
            uuid = gpu_uuid(spec.name, n.name, i)
            layout = n.gpu.mig_layout_of(i)
            mig: tuple[MigInstance, ...] = ()
            if layout is not None:
                mig = tuple(
                    MigInstance(
                        uuid=mig_uuid(spec.name, n.name, i, p.gi_id, p.ci_id), profile=p.profile.name,
                        profile_id=p.profile.id, parent_index=i, parent_uuid=uuid, mig_index=p.mig_index,
                        gi_id=p.gi_id, ci_id=p.ci_id, placement_start=p.start, placement_size=p.size,
                        memory_mib=p.profile.memory_mib, sm_count=p.profile.sm_count,
                    )
                    for p in place_layout(model, layout, f"GPU {i}")
                )
            gpus.append(PhysicalGPU(
                index=i, uuid=uuid, model=model.key, product_name=model.product_name, memory_mib=model.memory_mib,
                sm_count=model.sm_count, numa_node=n.gpu.numa_of(i), nvlink_peers=_nvlink_peers(n.gpu, i),
                pci_bus_id=pci_bus_id(spec.name, n.name, i), mig=mig,
            ))
    return NodeInventory(cluster=spec.name, node=n.name, gpus=tuple(gpus))


def only_gpus(inventory: NodeInventory, indices: list[int]) -> NodeInventory:
    """``inventory`` with only the GPUs whose index is in ``indices`` (indices and UUIDs unchanged)."""
    keep = set(indices)
    return replace(inventory, gpus=tuple(g for g in inventory.gpus if g.index in keep))


def device_plugin_inventory(spec: ClusterSpec, node: str) -> NodeInventory:
    """The GPUs of ``node`` the device plugin advertises (all, unless the pool gives some to DRA)."""
    inv = node_inventory(spec, node)
    gpu = spec.node(node).gpu
    return only_gpus(inv, gpu.device_plugin_gpus()) if gpu is not None else inv


def dra_gpus(spec: ClusterSpec, node: str) -> list[int]:
    """Indices of the GPUs of ``node`` the DRA driver publishes ([] for device-plugin-only pools)."""
    gpu = spec.node(node).gpu
    return gpu.dra_gpus() if gpu is not None else []
