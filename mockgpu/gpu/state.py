"""The GPU-state document of one node: what each GPU holds, who uses it, and when allocations failed.

``gpu_state(driver, ...)`` builds the JSON document both backends publish (the embedded kubelet's
publisher and the kind DaemonSet's ``gpu-state-publisher`` container) from the driver's snapshot and
inventory; ``mockgpu.gpu.dcgm`` serves it as dcgm-exporter's metrics. The hardware layer knows no Kubernetes:
allocations (which container holds which device IDs) and time-slicing replicas are passed in by the caller.

Document (the contract widgets read)::

    {"node", "cluster", "time": RFC3339,
     "gpus": [{"index", "uuid", "pciBusId", "product", "model", "memoryTotalMiB", "memoryUsedMiB", "utilization",
               "healthy", "xids", "numa", "nvlinkPeers", "replicas",
               "mig": [{"uuid", "profile", "migIndex", "gpuInstanceId", "start", "size", "memoryTotalMiB",
                        "memoryUsedMiB", "utilization", "healthy", "xids"}]}],
     "processes": [{"device", "gpuIndex", "pid", "namespace", "pod", "container", "usedMiB"}],
     "allocations": [{"namespace", "pod", "container", "resource", "deviceIds", "uuids"}],
     "oomEvents": [{"time", "device", "gpuIndex", "namespace", "pod", "container", "requestedMiB", "freeMiB"}]}

``utilization`` of a MIG-enabled GPU is null (nvidia-smi prints N/A). Simplified: dcgm-exporter gives a
time-shared device's series to every pod that holds a replica of it; so do we, with the same value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.gpu.driver import Driver
from mockgpu.gpu.inventory import NodeInventory
from mockgpu.gpu.oomlog import read_ooms

MIB = 1 << 20
MAX_OOM_EVENTS = 50  # the newest ones; the log on disk keeps all


@dataclass(frozen=True)
class DeviceAllocation:
    """Devices one container holds, as the kubelet's device manager records them."""

    namespace: str
    pod: str
    container: str
    resource: str
    device_ids: tuple[str, ...]
    uuids: tuple[str, ...]  # GPU or MIG UUIDs behind the IDs (replica suffixes and index IDs resolved)

    def to_json(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "pod": self.pod, "container": self.container,
                "resource": self.resource, "deviceIds": list(self.device_ids), "uuids": list(self.uuids)}


@dataclass(frozen=True)
class StateInputs:
    """What the caller knows beyond the driver: allocations and time-slicing replicas per GPU UUID."""

    allocations: tuple[DeviceAllocation, ...] = ()
    replicas: Mapping[str, int] = field(default_factory=dict)


def device_uuid(inventory: NodeInventory, device_id: str) -> str:
    """The GPU or MIG UUID behind a device plugin ID: ``<UUID>[::n]``, or NVIDIA's index form ``i`` / ``i:j``."""
    base = device_id.split("::", 1)[0]
    if base.startswith(("GPU-", "MIG-")):
        return base
    gpu, _, mig = base.partition(":")
    for g in inventory.gpus:
        if str(g.index) == gpu:
            if not mig:
                return g.uuid
            for m in g.mig:
                if str(m.mig_index) == mig:
                    return m.uuid
    return base





def gpu_state(driver: Driver, inputs: StateInputs | None = None, *, now: float | None = None) -> dict[str, Any]:
    """The node's GPU-state document (see the module docstring)."""
    inputs = inputs or StateInputs()
    inv = driver.inventory
    snap = driver.snapshot()
    gpus, processes = [], []
    index_of: dict[str, int] = {}
    for g in inv.gpus:
        s = snap[g.uuid]
        index_of[g.uuid] = g.index
        migs = []
        for m in g.mig:
            ms = snap[m.uuid]
            index_of[m.uuid] = g.index
            migs.append({"uuid": m.uuid, "profile": m.profile, "migIndex": m.mig_index, "gpuInstanceId": m.gi_id,
                         "start": m.placement_start, "size": m.placement_size, "memoryTotalMiB": m.memory_mib,
                         "memoryUsedMiB": ms["used_mib"], "utilization": ms["utilization"],
                         "healthy": ms["healthy"], "xids": list(ms["xids"])})
        leaves = [snap[m.uuid] for m in g.mig] if g.mig else [s]
        for leaf in leaves:
            for p in leaf["processes"]:
                processes.append({"device": leaf["uuid"], "gpuIndex": g.index, "pid": p["pid"],
                                  "namespace": p["namespace"], "pod": p["pod"], "container": p["container"],
                                  "usedMiB": p["used_mib"]})
        gpus.append({
            "index": g.index, "uuid": g.uuid, "pciBusId": g.pci_bus_id, "product": g.product_name, "model": g.model,
            "memoryTotalMiB": g.memory_mib, "memoryUsedMiB": s["used_mib"], "utilization": s["utilization"],
            "healthy": s["healthy"], "xids": list(s["xids"]), "numa": g.numa_node,
            "nvlinkPeers": list(g.nvlink_peers), "replicas": 1 if g.mig else int(inputs.replicas.get(g.uuid, 1)),
            "mig": migs,
        })
    ooms = [{"time": rfc3339(e.get("time", 0)), "device": e["device"], "gpuIndex": index_of.get(e["device"]),
             "namespace": e.get("namespace", ""), "pod": e.get("pod", ""), "container": e.get("container", ""),
             "requestedMiB": -(-int(e.get("requested_bytes", 0)) // MIB), "freeMiB": int(e.get("free_bytes", 0)) // MIB}
            for e in read_ooms(driver.dir)[-MAX_OOM_EVENTS:]]
    return {"node": inv.node, "cluster": inv.cluster, "time": rfc3339(now), "gpus": gpus, "processes": processes,
            "allocations": [a.to_json() for a in inputs.allocations], "oomEvents": ooms}
