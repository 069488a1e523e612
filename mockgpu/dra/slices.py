"""A node's ResourceSlices (``resource.k8s.io/v1``) for the driver ``gpu.mockgpu.io``: pure, from the node's
hardware (``NodeInventory``) and the GPU catalog.

One pool per node (pool name = node name). What it holds (the contract the scheduler and the labs rely on):

* every GPU the driver manages is a device ``gpu-<index>`` with attributes ``type: gpu``, ``uuid`` (the
  UUID the device plugin reports), ``index``, ``model``, ``productName``, ``numaNode``, ``nvlinkIsland``
  (only when the GPU has NVLink peers), ``migCapable``, ``driverVersion``, ``cudaComputeCapability`` and
  capacity ``memory``;
* a MIG-capable GPU also gets one device per (MIG profile, allowed placement start) from the catalog,
  ``gpu-<index>-mig-<profile without dots>-<start>`` (``gpu-0-mig-3g40gb-4``), type ``mig``, with the MIG
  UUID the device plugin would report for an instance at that placement (the GPU-instance ID is a
  function of the placement, ``mockgpu.gpu.mig.gi_id_for``; two profiles on the same slots, e.g.
  3g.40gb and 4g.40gb at 0, therefore share a UUID, as they would on the card, and never coexist),
  ``profile``, ``parentUUID``, ``parentIndex``, ``placementStart``, ``placementSize``
  and capacity ``memory`` and ``multiprocessors``; ``index`` is the parent GPU's index (a MIG device has
  no index of its own until it exists);
* partitionable devices as Kubernetes v1.37 models them: one CounterSet per MIG-capable GPU,
  ``gpu-<index>-counters``, with ``memory-slice-<k>: 1`` per memory slot and ``multiprocessors`` (the
  GPU's SMs). The whole GPU consumes all of them; a MIG device consumes the slots its placement covers
  and its profile's SMs. So a whole GPU and its MIG devices exclude each other, and two placements fit
  together exactly when their slots do not overlap. Counter sets live in their own slices, devices in
  others (v1.37: a slice has ``sharedCounters`` or ``devices``, never both); all carry the same pool
  generation and ``resourceSliceCount``.

Simplified: the ``+me`` (media extension) profiles are not published, because their one-per-GPU limit
(the GPU has one set of media engines) is not expressible with the contract's counters; the fake driver's
version ``550.107.02`` is published as the semantic version ``550.107.2`` (semver forbids leading zeros).
Slices are split at upstream's limits: 8 counter sets per slice, 64 devices per slice when devices consume
counters (``ResourceSliceMaxDevicesWithAdvancedFeatures``), 128 otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mockgpu.gpu.catalog import GPUModel, MigProfile, get_model
from mockgpu.gpu.driver import DRIVER_VERSION
from mockgpu.gpu.inventory import NodeInventory, PhysicalGPU
from mockgpu.gpu.mig import gi_id_for
from mockgpu.gpu.uuids import mig_uuid

DRIVER = "gpu.mockgpu.io"
API_VERSION = "resource.k8s.io/v1"
MAX_COUNTER_SETS = 8  # ResourceSliceMaxCounterSets
MAX_DEVICES = 128  # ResourceSliceMaxDevices
MAX_DEVICES_WITH_COUNTERS = 64  # ResourceSliceMaxDevicesWithAdvancedFeatures
MULTIPROCESSORS = "multiprocessors"


def semver(version: str) -> str:
    """``550.107.02`` -> ``550.107.2``: numeric parts without leading zeros, padded to three."""
    parts = [str(int(p)) for p in version.split(".")][:3]
    return ".".join(parts + ["0"] * (3 - len(parts)))


def memory_quantity(mib: int) -> str:
    """MiB as a Kubernetes quantity in the largest binary unit that keeps it whole (``40Gi``, ``9728Mi``)."""
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def memory_slice(k: int) -> str:
    return f"memory-slice-{k}"


def counter_set_name(index: int) -> str:
    return f"gpu-{index}-counters"


def gpu_device_name(index: int) -> str:
    return f"gpu-{index}"


def mig_device_name(index: int, profile: str, start: int) -> str:
    return f"gpu-{index}-mig-{profile.replace('.', '')}-{start}"


def published_profiles(model: GPUModel) -> tuple[MigProfile, ...]:
    """The MIG profiles published as devices (every profile but the ``+me`` ones; see the module docstring)."""
    return tuple(p for p in model.profiles if "+me" not in p.name)


def nvlink_islands(inventory: NodeInventory) -> dict[int, int]:
    """GPU index -> NVLink island: the connected groups of the NVLink graph, numbered from 0 by their lowest
    GPU index. GPUs without NVLink peers are in no island."""
    peers = {g.index: set(g.nvlink_peers) for g in inventory.gpus}
    island: dict[int, int] = {}
    n = 0
    for start in sorted(peers):
        if start in island or not peers[start]:
            continue
        todo = [start]
        while todo:
            i = todo.pop()
            if i in island:
                continue
            island[i] = n
            todo.extend(peers.get(i, ()))
        n += 1
    return island


@dataclass(frozen=True)
class MigPlacement:
    """One MIG device of the slices: a profile at an allowed placement of one GPU."""

    name: str
    uuid: str
    gpu: PhysicalGPU
    profile: MigProfile
    start: int
    size: int

    @property
    def slots(self) -> range:
        return range(self.start, self.start + self.size)


def mig_placements(inventory: NodeInventory, gpu: PhysicalGPU) -> list[MigPlacement]:
    """Every published (profile, placement) of ``gpu``; [] when its model has no MIG."""
    model = get_model(gpu.model)
    if not model.mig_supported:
        return []
    out = []
    for p in published_profiles(model):
        for start, size in p.placements:
            gi = gi_id_for(model.memory_slots, start, size)
            out.append(MigPlacement(mig_device_name(gpu.index, p.name, start),
                                    mig_uuid(inventory.cluster, inventory.node, gpu.index, gi, 0),
                                    gpu, p, start, size))
    return out


def _attrs(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, v in values.items():
        if isinstance(v, bool):
            out[name] = {"bool": v}
        elif isinstance(v, int):
            out[name] = {"int": v}
        elif isinstance(v, tuple):  # ("version", "8.0.0")
            out[name] = {v[0]: v[1]}
        else:
            out[name] = {"string": v}
    return out


def _gpu_attrs(gpu: PhysicalGPU, model: GPUModel, islands: dict[int, int]) -> dict[str, Any]:
    cc = model.compute_capability
    attrs: dict[str, Any] = {
        "index": gpu.index, "model": model.key, "productName": gpu.product_name, "numaNode": gpu.numa_node,
        "migCapable": model.mig_supported, "driverVersion": ("version", semver(DRIVER_VERSION)),
        "cudaComputeCapability": ("version", f"{cc[0]}.{cc[1]}.0"),
    }
    if gpu.index in islands:
        attrs["nvlinkIsland"] = islands[gpu.index]
    return attrs


def _counters(model: GPUModel, slots: Iterable[int], multiprocessors: int) -> dict[str, dict[str, str]]:
    out = {memory_slice(k): {"value": "1"} for k in slots}
    out[MULTIPROCESSORS] = {"value": str(multiprocessors)}
    return out


def counter_set(gpu: PhysicalGPU) -> dict[str, Any]:
    """The shared counters of one MIG-capable GPU."""
    model = get_model(gpu.model)
    return {"name": counter_set_name(gpu.index), "counters": _counters(model, range(model.memory_slots), gpu.sm_count)}


def gpu_device(gpu: PhysicalGPU, islands: dict[int, int]) -> dict[str, Any]:
    model = get_model(gpu.model)
    dev: dict[str, Any] = {
        "name": gpu_device_name(gpu.index),
        "attributes": _attrs({"type": "gpu", "uuid": gpu.uuid, **_gpu_attrs(gpu, model, islands)}),
        "capacity": {"memory": {"value": memory_quantity(gpu.memory_mib)}},
    }
    if model.mig_supported:
        dev["consumesCounters"] = [{"counterSet": counter_set_name(gpu.index),
                                    "counters": _counters(model, range(model.memory_slots), gpu.sm_count)}]
    return dev


def mig_device(m: MigPlacement, islands: dict[int, int]) -> dict[str, Any]:
    model = get_model(m.gpu.model)
    attrs = {"type": "mig", "uuid": m.uuid, **_gpu_attrs(m.gpu, model, islands), "profile": m.profile.name,
             "parentUUID": m.gpu.uuid, "parentIndex": m.gpu.index, "placementStart": m.start,
             "placementSize": m.size}
    return {
        "name": m.name,
        "attributes": _attrs(attrs),
        "capacity": {"memory": {"value": memory_quantity(m.profile.memory_mib)},
                     MULTIPROCESSORS: {"value": str(m.profile.sm_count)}},
        "consumesCounters": [{"counterSet": counter_set_name(m.gpu.index),
                              "counters": _counters(model, m.slots, m.profile.sm_count)}],
    }


def node_devices(inventory: NodeInventory, gpus: Iterable[int] | None = None) -> list[dict[str, Any]]:
    """The devices of the GPUs with indices ``gpus`` (default: all), each GPU followed by its MIG devices."""
    wanted = set(gpus) if gpus is not None else {g.index for g in inventory.gpus}
    islands = nvlink_islands(inventory)
    out = []
    for g in inventory.gpus:
        if g.index not in wanted:
            continue
        out.append(gpu_device(g, islands))
        out.extend(mig_device(m, islands) for m in mig_placements(inventory, g))
    return out


def device_uuids(inventory: NodeInventory, gpus: Iterable[int] | None = None) -> dict[str, str]:
    """Device name -> UUID (what NVIDIA_VISIBLE_DEVICES carries for it)."""
    return {d["name"]: d["attributes"]["uuid"]["string"] for d in node_devices(inventory, gpus)}


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def slice_name(node: str, kind: str, k: int) -> str:
    """Deterministic names, so the driver can create-or-update: ``<node>-gpu.mockgpu.io-devices-0``."""
    return f"{node}-{DRIVER}-{kind}-{k}"


def node_slices(inventory: NodeInventory, gpus: Iterable[int] | None = None, generation: int = 1
                ) -> list[dict[str, Any]]:
    """The pool's ResourceSlice objects (JSON-ready dicts), counter slices first; [] when no GPU is managed."""
    wanted = set(gpus) if gpus is not None else {g.index for g in inventory.gpus}
    managed = [g for g in inventory.gpus if g.index in wanted]
    if not managed:
        return []
    sets = [counter_set(g) for g in managed if get_model(g.model).mig_supported]
    devices = node_devices(inventory, wanted)
    per_slice = MAX_DEVICES_WITH_COUNTERS if sets else MAX_DEVICES
    bodies = [("counters", {"sharedCounters": c}) for c in _chunks(sets, MAX_COUNTER_SETS)]
    bodies += [("devices", {"devices": d}) for d in _chunks(devices, per_slice)]
    node = inventory.node
    out = []
    counts: dict[str, int] = {}
    for kind, body in bodies:
        k = counts[kind] = counts.get(kind, -1) + 1
        out.append({
            "apiVersion": API_VERSION, "kind": "ResourceSlice",
            "metadata": {"name": slice_name(node, kind, k)},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": generation, "resourceSliceCount": len(bodies)},
                     **body},
        })
    return out
