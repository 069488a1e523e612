"""Choosing and allocating devices for one container, as the kubelet's ``devicesToAllocate`` and
``allocateContainerResources`` do (without NUMA alignment: every candidate has "no affinity")."""

from __future__ import annotations

import re
from typing import Any, Protocol

import grpc

from mockgpu.apimachinery.quantity import int_value
from mockgpu.control.kubelet.endpoint import Endpoint, go_rpc_error
from mockgpu.control.kubelet.podevices import ContainerAllocation, PodDevices

NO_NUMA = "-1"


class AdmissionError(Exception):
    """A pod the kubelet refuses at admission: ``reason`` and ``message`` go on the pod status."""

    def __init__(self, err: str, reason: str = "UnexpectedAdmissionError") -> None:
        self.err = err
        self.reason = reason
        self.message = f"Allocate failed due to {err}, which is unexpected"
        super().__init__(self.message)


class DeviceManager(Protocol):
    """What allocation reads and writes of the device manager (``devicemanager.DeviceManager`` is one)."""

    pods: PodDevices

    def is_device_plugin_resource(self, name: str) -> bool: ...

    def endpoint(self, resource: str) -> Endpoint | None: ...

    def healthy_devices(self, resource: str) -> set[str] | None: ...

    def numa_of(self, resource: str) -> dict[str, tuple[int, ...]]: ...

    def record_allocation(
        self, uid: str, container: str, resource: str, by_numa: dict[str, list[str]], resp: Any
    ) -> None: ...

    def get_allocation(self, pod_uid: str, container: str) -> ContainerAllocation | None: ...


def natural_key(device_id: str) -> list:
    """Sort GPU-x::2 before GPU-x::10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", device_id)]


def allocate_container(
    dm: DeviceManager, uid: str, container: str, limits: dict[str, int | str]
) -> ContainerAllocation:
    for resource in sorted(limits):
        if not dm.is_device_plugin_resource(resource):
            continue  # not ours: extended resources nobody registered are not allocated
        chosen = devices_to_allocate(dm, uid, container, resource, int_value(limits[resource]))
        if not chosen:
            continue
        ep = dm.endpoint(resource)
        if ep is None:
            raise AdmissionError(f"unknown Device Plugin {resource}")
        if ep.is_stopped():
            raise AdmissionError(f"endpoint {ep} has been stopped")
        try:
            resp = ep.allocate(chosen)
        except grpc.RpcError as exc:
            raise AdmissionError(go_rpc_error(exc)) from None
        if not resp.container_responses:
            raise AdmissionError(f"no containers return in allocation response {resp}")
        numa = dm.numa_of(resource)
        by_numa: dict[str, list[str]] = {}
        for d in chosen:
            for node in numa.get(d) or (NO_NUMA,):
                by_numa.setdefault(str(node), []).append(d)
        dm.record_allocation(uid, container, resource, by_numa, resp.container_responses[0])
    return dm.get_allocation(uid, container) or ContainerAllocation()


def devices_to_allocate(dm: DeviceManager, uid: str, container: str, resource: str, needed: int) -> list[str]:
    """The device IDs to give; [] when nothing (more) is needed. Raises AdmissionError."""
    have = dm.pods.container_devices(uid, container).get(resource)
    if have is not None:
        if len(have) != needed:
            raise AdmissionError(
                f'pod "{uid}" container "{container}" changed request for resource "{resource}" '
                f"from {len(have)} to {needed}"
            )
        return []
    if needed == 0:
        return []
    healthy = dm.healthy_devices(resource)
    if healthy is None:
        raise AdmissionError(f"cannot allocate unregistered device {resource}")
    if not healthy:
        raise AdmissionError(f"no healthy devices present; cannot allocate unhealthy devices {resource}")
    available = healthy - dm.pods.devices_in_use(resource)
    if len(available) < needed:
        raise AdmissionError(
            f"requested number of devices unavailable for {resource}. Requested: {needed}, Available: {len(available)}"
        )
    chosen: list[str] = []

    def fill(candidates: list[str]) -> bool:
        for d in candidates:
            if len(chosen) == needed:
                break
            if d in available and d not in chosen:
                chosen.append(d)
        return len(chosen) == needed

    ep = dm.endpoint(resource)
    if ep is not None and ep.options.get_preferred_allocation_available:
        try:
            preferred = ep.preferred(sorted(available, key=natural_key), [], needed)
        except grpc.RpcError as exc:
            raise AdmissionError(
                f"device plugin GetPreferredAllocation rpc failed with err: {go_rpc_error(exc)}"
            ) from None
        if fill(preferred):
            return chosen
    fill(sorted(available, key=natural_key))
    return chosen
