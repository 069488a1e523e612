"""Which devices each (pod, container) holds, their Allocate responses, and the checkpoint of both.

Like upstream's ``podDevices``: the source of truth for devices in use; a device ID is in use
while any container entry lists it, and entries go when the pod is removed.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from mockgpu.control.kubelet.checkpoint import CheckpointData, PodDeviceEntry, write_checkpoint
from mockgpu.control.kubelet.container import Mount
from mockgpu.deviceplugin.api import api_pb2 as pb

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeviceSpec:
    container_path: str
    host_path: str
    permissions: str


@dataclass
class ContainerAllocation:
    """What the device plugins asked the kubelet to give one container, merged over resources."""

    devices: dict[str, list[str]] = field(default_factory=dict)  # resource -> device IDs
    envs: dict[str, str] = field(default_factory=dict)
    mounts: list[Mount] = field(default_factory=list)
    device_specs: list[DeviceSpec] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    cdi_devices: list[str] = field(default_factory=list)


@dataclass
class _Entry:
    ids_by_numa: dict[str, list[str]]
    resp: pb.ContainerAllocateResponse

    def ids(self) -> list[str]:
        return sorted({i for ids in self.ids_by_numa.values() for i in ids})


class PodDevices:
    def __init__(self, checkpoint_path: Path) -> None:
        self.path = checkpoint_path
        self._lock = threading.RLock()
        self._entries: dict[tuple[str, str], dict[str, _Entry]] = {}

    def load(self, data: CheckpointData) -> None:
        with self._lock:
            for e in data.entries:
                resp = pb.ContainerAllocateResponse.FromString(e.alloc_resp)
                self._entries.setdefault((e.pod_uid, e.container), {})[e.resource] = _Entry(e.device_ids, resp)

    def write(self, registered: dict[str, list[str]]) -> None:
        with self._lock:
            entries = [
                PodDeviceEntry(uid, c, res, e.ids_by_numa, e.resp.SerializeToString())
                for (uid, c), by_res in self._entries.items()
                for res, e in by_res.items()
            ]
            write_checkpoint(self.path, CheckpointData(entries, registered))

    def insert(self, uid: str, container: str, resource: str, ids_by_numa: dict[str, list[str]], resp) -> None:
        with self._lock:
            self._entries.setdefault((uid, container), {})[resource] = _Entry(ids_by_numa, resp)

    def has_resource(self, resource: str) -> bool:
        with self._lock:
            return any(resource in by_res for by_res in self._entries.values())

    def devices_in_use(self, resource: str) -> set[str]:
        with self._lock:
            return {i for by_res in self._entries.values() if resource in by_res for i in by_res[resource].ids()}

    def container_devices(self, uid: str, container: str) -> dict[str, list[str]]:
        with self._lock:
            return {res: e.ids() for res, e in self._entries.get((uid, container), {}).items()}

    def remove_pod(self, uid: str) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == uid]:
                del self._entries[key]

    def retain(self, active: set[str]) -> None:
        """Drop the devices of pods that are no longer active (upstream UpdateAllocatedDevices)."""
        with self._lock:
            for uid in {k[0] for k in self._entries} - active:
                self.remove_pod(uid)

    def all(self) -> dict[tuple[str, str], dict[str, list[str]]]:
        with self._lock:
            return {k: {res: e.ids() for res, e in v.items()} for k, v in self._entries.items()}

    def container_allocation(self, uid: str, container: str) -> ContainerAllocation | None:
        """Merge the stored responses; on conflicts the first resource (by name) wins, as upstream skips
        an env/mount/device/annotation that is already set."""
        with self._lock:
            by_res = self._entries.get((uid, container))
            if not by_res:
                return None
            out = ContainerAllocation()
            mounts: dict[str, Mount] = {}
            specs: dict[str, DeviceSpec] = {}
            for res in sorted(by_res):
                e = by_res[res]
                out.devices[res] = e.ids()
                _merge(out.envs, dict(e.resp.envs), "env")
                _merge(out.annotations, dict(e.resp.annotations), "annotation")
                for m in e.resp.mounts:
                    mounts.setdefault(m.container_path, Mount(m.container_path, m.host_path, m.read_only))
                for d in e.resp.devices:
                    specs.setdefault(d.container_path, DeviceSpec(d.container_path, d.host_path, d.permissions))
                out.cdi_devices += [c.name for c in e.resp.cdi_devices if c.name not in out.cdi_devices]
            out.mounts, out.device_specs = list(mounts.values()), list(specs.values())
            return out


def _merge(into: dict[str, str], new: dict[str, str], what: str) -> None:
    for k, v in new.items():
        if k in into:
            if into[k] != v:
                log.error("%s %s has conflicting setting: expected %r, got %r", what, k, v, into[k])
            continue
        into[k] = v
