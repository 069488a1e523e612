"""Which extended resources a node advertises, and which device IDs each one carries.

This is the gRPC-free core of the device plugin, shaped like NVIDIA's ``internal/rm``: one
resource manager per resource name, computed from the node's hardware (``NodeInventory``) and the
pool's NVIDIA device plugin config (``version: v1``):

* whole GPUs are ``nvidia.com/gpu`` with the GPU UUIDs as IDs;
* ``migStrategy: single`` advertises the MIG devices as ``nvidia.com/gpu`` (IDs = MIG UUIDs);
  ``mixed`` advertises ``nvidia.com/mig-<profile>`` ('+' becomes '.') and keeps non-MIG GPUs as
  ``nvidia.com/gpu``; ``none`` advertises every physical GPU, MIG or not;
* time-slicing replicates each device ``replicas`` times with IDs ``<ID>::<n>``; with
  ``renameByDefault`` the resource becomes ``<name>.shared``.

Simplified against upstream: the ``rename`` and ``devices`` fields of a time-slicing entry are
ignored with a warning (NVIDIA's plugin v0.20 does the same: "not yet supported"); a node that
violates ``migStrategy: single`` (MIG and non-MIG GPUs, or several profiles) is refused with a
MockgpuError instead of advertising nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from mockgpu.config.nvidia import DevicePluginConfig
from mockgpu.deviceplugin.devices import (  # noqa: F401  (re-exported: the plugin's names, as before)
    GPU_RESOURCE,
    HEALTHY,
    REPLICA_SEPARATOR,
    UNHEALTHY,
    Device,
    InvalidRequestError,
    RequestTooLargeError,
    UnknownDeviceError,
    mig_resource_name,
    socket_name,
    strip_replica,
)
from mockgpu.deviceplugin.preferred import preferred_allocation
from mockgpu.errors import MockgpuError
from mockgpu.gpu.inventory import MigInstance, NodeInventory, PhysicalGPU

log = logging.getLogger(__name__)

class ResourceManager(Protocol):
    """What a DevicePlugin server needs from its resource (cf. NVIDIA's ``rm.ResourceManager``)."""

    @property
    def resource(self) -> str: ...

    @property
    def replicas(self) -> int: ...

    def devices(self) -> tuple[Device, ...]: ...

    def validate_request(self, ids: Sequence[str]) -> None: ...

    def visible_ids(self, ids: Sequence[str]) -> list[str]: ...

    def preferred_allocation(self, available: Sequence[str], required: Sequence[str], size: int) -> list[str]: ...

    def set_unhealthy(self, uuids: Iterable[str]) -> bool: ...


@dataclass
class NodeResourceManager:
    """The devices of one resource name on one node, with their health."""

    resource: str
    _devices: tuple[Device, ...]
    inventory: NodeInventory
    replicas: int = 1
    fail_requests_greater_than_one: bool = False
    shared_policy: str = "distributed"
    _by_id: dict[str, Device] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {d.id: d for d in self._devices}

    @property
    def socket_name(self) -> str:
        return socket_name(self.resource)

    def devices(self) -> tuple[Device, ...]:
        return self._devices

    def device(self, device_id: str) -> Device:
        try:
            return self._by_id[device_id]
        except KeyError:
            raise UnknownDeviceError(
                f"invalid allocation request for '{self.resource}': unknown device: {device_id}") from None

    def validate_request(self, ids: Sequence[str]) -> None:
        """Refuse IDs this resource does not own, and oversized shared requests (upstream's texts)."""
        if self.fail_requests_greater_than_one and self.replicas > 1 and len(ids) > 1:
            raise RequestTooLargeError(
                f"request for '{self.resource}: {len(ids)}' too large: maximum request size for shared resources is 1")
        for i in ids:
            self.device(i)

    def visible_ids(self, ids: Sequence[str]) -> list[str]:
        """The de-duplicated device IDs without replica suffixes, in request order."""
        self.validate_request(ids)
        return list(dict.fromkeys(strip_replica(i) for i in ids))

    def preferred_allocation(self, available: Sequence[str], required: Sequence[str], size: int) -> list[str]:
        return preferred_allocation(self, available, required, size)

    def set_unhealthy(self, uuids: Iterable[str]) -> bool:
        """Mark devices whose own or parent GPU UUID is in ``uuids`` unhealthy (others healthy).

        Returns True when any device's health changed.
        """
        bad = set(uuids)
        changed = False
        new = []
        parents = {g.index: g.uuid for g in self.inventory.gpus}  # the inventory may hold only some GPUs
        for d in self._devices:
            parent = parents[d.gpu_index]
            health = UNHEALTHY if (d.uuid in bad or parent in bad) else HEALTHY
            changed |= health != d.health
            new.append(replace(d, health=health) if health != d.health else d)
        if changed:
            self._devices = tuple(new)
            self.__post_init__()
        return changed


def _gpu_device(gpu: PhysicalGPU, id_strategy: str) -> Device:
    return Device(
        id=gpu.uuid if id_strategy == "uuid" else str(gpu.index), uuid=gpu.uuid, gpu_index=gpu.index,
        index=str(gpu.index), numa_node=gpu.numa_node,
    )


def _mig_device(gpu: PhysicalGPU, mig: MigInstance, id_strategy: str) -> Device:
    index = f"{gpu.index}:{mig.mig_index}"
    return Device(
        id=mig.uuid if id_strategy == "uuid" else index, uuid=mig.uuid, gpu_index=gpu.index, index=index,
        numa_node=gpu.numa_node, mig_profile=mig.profile,
    )


def _base_resources(inventory: NodeInventory, config: DevicePluginConfig) -> dict[str, list[Device]]:
    """Resource name → devices before sharing, per the MIG strategy."""
    strategy = config.flags.migStrategy
    id_strategy = config.flags.plugin.deviceIDStrategy
    out: dict[str, list[Device]] = {}
    if strategy == "none":
        for g in inventory.gpus:
            out.setdefault(GPU_RESOURCE, []).append(_gpu_device(g, id_strategy))
        return out
    mig_gpus = [g for g in inventory.gpus if g.mig_enabled]
    if strategy == "single" and mig_gpus:
        if len(mig_gpus) != len(inventory.gpus):
            raise MockgpuError(f"node {inventory.node}: migStrategy single needs MIG on every GPU "
                               "(devices with MIG enabled and disabled detected); use mixed", exit_code=2)
        profiles = {m.profile for g in mig_gpus for m in g.mig}
        if len(profiles) != 1:
            raise MockgpuError(f"node {inventory.node}: migStrategy single needs one MIG profile on the node, "
                               f"found {', '.join(sorted(profiles))}; use mixed", exit_code=2)
    for g in inventory.gpus:
        if not g.mig_enabled:
            out.setdefault(GPU_RESOURCE, []).append(_gpu_device(g, id_strategy))
            continue
        for m in g.mig:
            name = GPU_RESOURCE if strategy == "single" else mig_resource_name(m.profile)
            out.setdefault(name, []).append(_mig_device(g, m, id_strategy))
    return out


def _replicate(devices: list[Device], replicas: int) -> list[Device]:
    return [replace(d, id=f"{d.id}{REPLICA_SEPARATOR}{n}", replica=n) for d in devices for n in range(replicas)]


def resource_managers(inventory: NodeInventory, config: DevicePluginConfig) -> list[NodeResourceManager]:
    """One resource manager per advertised resource name, sorted by name."""
    ts = config.sharing.timeSlicing
    shared = {r.name: r for r in ts.resources} if ts else {}
    for r in shared.values():
        if r.rename or r.devices not in (None, "all"):
            log.warning("time-slicing resource %s: 'rename' and 'devices' are not yet supported; ignoring them", r.name)
    managers = []
    for name, devices in _base_resources(inventory, config).items():
        entry = shared.get(name)
        replicas = entry.replicas if entry else 1
        if replicas > 1:
            devices = _replicate(devices, replicas)
            if ts and ts.renameByDefault:
                name = f"{name}.shared"
        managers.append(NodeResourceManager(
            resource=name, _devices=tuple(devices), inventory=inventory, replicas=replicas,
            fail_requests_greater_than_one=bool(ts and ts.failRequestsGreaterThanOne),
            shared_policy=config.flags.plugin.sharedDevicesAllocationPolicy,
        ))
    return sorted(managers, key=lambda m: m.resource)
