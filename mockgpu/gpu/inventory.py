"""What one node's fake hardware is: its physical GPUs and their MIG instances.

These types are the contract between the hardware model and everything above it (device plugin,
kubelet, widgets, kind manifests). They are built from a cluster spec by
``mockgpu.config.inventory.node_inventory``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class MigInstance:
    """One MIG GPU instance (with its single default compute instance)."""

    uuid: str  # MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
    profile: str  # e.g. "1g.10gb"
    profile_id: int  # nvidia-smi GPU-instance profile ID, e.g. 19
    parent_index: int  # index of the physical GPU on the node
    parent_uuid: str
    mig_index: int  # the "Device N" number nvidia-smi -L prints under its GPU
    gi_id: int
    ci_id: int
    placement_start: int  # memory slot where the instance starts
    placement_size: int  # memory slots it occupies
    memory_mib: int
    sm_count: int


@dataclass(frozen=True)
class PhysicalGPU:
    """One physical GPU of a node."""

    index: int
    uuid: str  # GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
    model: str  # catalog key, e.g. "A100-SXM4-80GB"
    product_name: str  # as nvidia-smi prints it, e.g. "NVIDIA A100-SXM4-80GB"
    memory_mib: int
    sm_count: int
    numa_node: int
    nvlink_peers: tuple[int, ...]  # indices of GPUs joined to this one by NVLink
    pci_bus_id: str  # e.g. "00000000:07:00.0"
    mig: tuple[MigInstance, ...] = field(default=())  # empty when MIG is disabled

    @property
    def mig_enabled(self) -> bool:
        return bool(self.mig)


@dataclass(frozen=True)
class NodeInventory:
    """All fake GPUs of one node of one cluster."""

    cluster: str
    node: str
    gpus: tuple[PhysicalGPU, ...]

    def device(self, uuid: str) -> PhysicalGPU | MigInstance:
        """The physical GPU or MIG instance with this UUID (KeyError if the node has none)."""
        for g in self.gpus:
            if g.uuid == uuid:
                return g
            for m in g.mig:
                if m.uuid == uuid:
                    return m
        raise KeyError(uuid)


def inventory_to_dict(inv: NodeInventory) -> dict[str, Any]:
    """A JSON-ready form of ``inv`` (the driver directory's ``inventory.json``)."""
    return asdict(inv)


def inventory_from_dict(d: dict[str, Any]) -> NodeInventory:
    """The inverse of :func:`inventory_to_dict`."""
    gpus = []
    for g in d["gpus"]:
        mig = tuple(MigInstance(**m) for m in g.get("mig", ()))
        fields = {k: v for k, v in g.items() if k != "mig"}
        fields["nvlink_peers"] = tuple(fields["nvlink_peers"])
        gpus.append(PhysicalGPU(**fields, mig=mig))
    return NodeInventory(cluster=d["cluster"], node=d["node"], gpus=tuple(gpus))
