"""Hand-built node inventories (the workshop nodes' shapes) for the device plugin tests.

A plain module (not conftest) so its name cannot clash with other test folders' helpers."""

from __future__ import annotations

from mockgpu.gpu.catalog import get_model
from mockgpu.gpu.inventory import MigInstance, NodeInventory, PhysicalGPU


def gpu_uuid(node: str, index: int) -> str:
    n = sum(map(ord, node))
    return f"GPU-{n:08x}-0000-4000-8000-{index:012x}"


def make_gpu(node: str, index: int, model: str, *, numa: int = 0, peers: tuple[int, ...] = (),
             mig: tuple[str, ...] = ()) -> PhysicalGPU:
    m = get_model(model)
    uuid = gpu_uuid(node, index)
    instances = []
    for k, profile in enumerate(mig):
        p = m.profile(profile)
        instances.append(MigInstance(
            uuid=f"MIG-{sum(map(ord, node)):08x}-{index:04x}-4000-8000-{k:012x}", profile=profile, profile_id=p.id,
            parent_index=index, parent_uuid=uuid, mig_index=k, gi_id=k + 1, ci_id=0, placement_start=0,
            placement_size=p.memory_slots, memory_mib=p.memory_mib, sm_count=p.sm_count,
        ))
    return PhysicalGPU(
        index=index, uuid=uuid, model=model, product_name=m.product_name, memory_mib=m.memory_mib,
        sm_count=m.sm_count, numa_node=numa, nvlink_peers=peers, pci_bus_id=f"00000000:{index + 7:02x}:00.0",
        mig=tuple(instances),
    )


def whole_node(name: str = "whole-0") -> NodeInventory:
    """Workshop 'whole': 4 x H100, NVLink pairs 0-1 and 2-3, GPUs 0-1 on NUMA 0 and 2-3 on NUMA 1."""
    peers = {0: (1,), 1: (0,), 2: (3,), 3: (2,)}
    return NodeInventory("workshop", name, tuple(
        make_gpu(name, i, "H100-SXM5-80GB", numa=i // 2, peers=peers[i]) for i in range(4)))


def mig_node(name: str = "mig-0") -> NodeInventory:
    """Workshop 'mig': A100-80GB GPU 0 as 7 x 1g.10gb, GPU 1 as 3g.40gb + 2g.20gb + 1g.10gb."""
    return NodeInventory("workshop", name, (
        make_gpu(name, 0, "A100-SXM4-80GB", mig=("1g.10gb",) * 7),
        make_gpu(name, 1, "A100-SXM4-80GB", mig=("3g.40gb", "2g.20gb", "1g.10gb")),
    ))


def uniform_mig_node(name: str = "single-0") -> NodeInventory:
    return NodeInventory("workshop", name, tuple(
        make_gpu(name, i, "A100-SXM4-80GB", mig=("1g.10gb",) * 7) for i in range(2)))


def plain_node(name: str = "shared-0", count: int = 2, model: str = "A100-SXM4-80GB") -> NodeInventory:
    return NodeInventory("workshop", name, tuple(make_gpu(name, i, model) for i in range(count)))
