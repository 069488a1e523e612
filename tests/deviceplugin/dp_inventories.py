"""Node inventories for the device plugin tests: workshop nodes built by ``node_inventory``, and
hand-built shapes the workshop lacks (uniform MIG, PCIe NUMA, T4).

A plain module (not conftest) so its name cannot clash with other test folders' helpers."""

from __future__ import annotations

from pathlib import Path

from mockgpu.config.clusterspec import load_spec
from mockgpu.config.inventory import node_inventory
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


WORKSHOP = Path(__file__).resolve().parents[2] / "clusters" / "workshop.yaml"


def workshop(node: str) -> NodeInventory:
    """A node of clusters/workshop.yaml, built as every mockgpu process builds it."""
    return node_inventory(load_spec(WORKSHOP), node)


def whole_node() -> NodeInventory:
    """Workshop 'whole-0': 4 x H100, NVLink pairs 0-1 and 2-3, GPUs 0-1 on NUMA 0 and 2-3 on NUMA 1."""
    return workshop("whole-0")


def mig_node() -> NodeInventory:
    """Workshop 'mig-0': A100-80GB GPU 0 as 7 x 1g.10gb, GPU 1 as 3g.40gb + 2g.20gb + 1g.10gb."""
    return workshop("mig-0")


def uniform_mig_node(name: str = "single-0") -> NodeInventory:
    return NodeInventory("workshop", name, tuple(
        make_gpu(name, i, "A100-SXM4-80GB", mig=("1g.10gb",) * 7) for i in range(2)))


def plain_node(name: str = "shared-0", count: int = 2, model: str = "A100-SXM4-80GB") -> NodeInventory:
    """Whole GPUs without topology (the workshop 'shared-0' shape when count is 2)."""
    return NodeInventory("workshop", name, tuple(make_gpu(name, i, model) for i in range(count)))
