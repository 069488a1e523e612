"""Node labels as NVIDIA GPU Feature Discovery (GFD) writes them, from a node's fake hardware.

The keys and values follow GFD's resource labeler (``internal/lm``): ``<resource>.<suffix>`` keys
such as ``nvidia.com/gpu.product`` and ``nvidia.com/mig-1g.10gb.count``; products have spaces
replaced by '-', ``-MIG-<profile>`` for MIG devices, and ``-SHARED`` when time-sliced without
renaming; ``replicas`` is 0 for MIG-enabled GPUs (sharing does not apply to them), else 1 or the
configured replicas. ``mig.strategy`` appears only for ``single``/``mixed``.

Simplified: no ``cuda.*`` / driver-version, ``gfd.timestamp``, ``gpu.machine`` or MIG
``engines.*`` labels (the catalog has no engine counts); ``sharing-strategy`` is ``time-slicing``
when any resource has more than one replica, else ``none`` (mockgpu has no MPS).
"""

from __future__ import annotations

from mockgpu.config.nvidia import DevicePluginConfig
from mockgpu.deviceplugin.resources import GPU_RESOURCE, mig_resource_name
from mockgpu.errors import MockgpuError
from mockgpu.gpu.catalog import get_model
from mockgpu.gpu.inventory import MigInstance, NodeInventory, PhysicalGPU

_FAMILIES = {1: "tesla", 2: "fermi", 3: "kepler", 5: "maxwell", 6: "pascal", 8: "ampere", 9: "hopper"}


def _family(major: int, minor: int) -> str:
    if major == 7:
        return "volta" if minor < 5 else "turing"
    return _FAMILIES.get(major, "undefined")


def _product(*parts: str, shared: bool = False) -> str:
    words = [p.replace(" ", "-") for p in parts if p]
    if shared:
        words.append("SHARED")
    return "-".join(words)


def _replicas(config: DevicePluginConfig, resource: str) -> int:
    return config.replicas_for(resource)


def _is_shared(config: DevicePluginConfig, resource: str) -> bool:
    return _replicas(config, resource) > 1


def _renamed(config: DevicePluginConfig) -> bool:
    ts = config.sharing.timeSlicing
    return bool(ts and ts.renameByDefault)


def _resource_labels(resource: str, values: dict[str, object]) -> dict[str, str]:
    return {f"{resource}.{k}": str(v) for k, v in values.items()}


def _gpu_labels(gpus: list[PhysicalGPU], config: DevicePluginConfig) -> dict[str, str]:
    """``nvidia.com/gpu.*`` for the node's physical GPUs (GFD's full-GPU labeler)."""
    first = gpus[0]
    full = [g for g in gpus if not g.mig_enabled]
    shared = bool(full) and _is_shared(config, GPU_RESOURCE) and not _renamed(config)
    if full:
        replicas = _replicas(config, GPU_RESOURCE)
    else:  # only MIG-enabled GPUs: GFD labels them "without sharing"
        replicas = 0
    major, minor = _compute_capability(first)
    values: dict[str, object] = {
        "product": _product(first.product_name, shared=shared), "count": len(gpus), "replicas": replicas,
        "memory": first.memory_mib,
    }
    if major:
        values |= {"family": _family(major, minor), "compute.major": major, "compute.minor": minor}
    return _resource_labels(GPU_RESOURCE, values)


def _compute_capability(gpu: PhysicalGPU) -> tuple[int, int]:
    try:
        return get_model(gpu.model).compute_capability
    except MockgpuError:
        return (0, 0)


def _mig_capable(gpus: list[PhysicalGPU]) -> bool:
    for g in gpus:
        try:
            if get_model(g.model).mig_supported:
                return True
        except MockgpuError:
            continue
    return any(g.mig_enabled for g in gpus)


def _mig_device_labels(
    resource: str, parent: PhysicalGPU, migs: list[MigInstance], config: DevicePluginConfig
) -> dict[str, str]:
    """Labels of one MIG resource (GFD's MIG labeler): product, count, replicas and attributes."""
    m = migs[0]
    slices = int(m.profile.split("g.", 1)[0]) if "g." in m.profile else m.placement_size
    shared = _is_shared(config, resource) and not _renamed(config)
    return _resource_labels(resource, {
        "product": _product(parent.product_name, "MIG", m.profile, shared=shared), "count": len(migs),
        "replicas": _replicas(config, resource), "memory": m.memory_mib, "multiprocessors": m.sm_count,
        "slices.gi": slices, "slices.ci": slices,
    })


def _invalid_single(first: PhysicalGPU) -> dict[str, str]:
    return _resource_labels(GPU_RESOURCE, {
        "product": _product(first.product_name, "MIG", "INVALID"), "count": 0, "replicas": 0, "memory": 0})


def gfd_labels(inventory: NodeInventory, config: DevicePluginConfig) -> dict[str, str]:
    """The GFD labels of a node; empty when the node has no GPUs (as GFD)."""
    gpus = list(inventory.gpus)
    if not gpus:
        return {}
    strategy = config.flags.migStrategy
    ts = config.sharing.timeSlicing
    sharing = "time-slicing" if ts and any(r.replicas > 1 for r in ts.resources) else "none"
    labels = _gpu_labels(gpus, config)
    labels[f"{GPU_RESOURCE}.sharing-strategy"] = sharing
    labels["nvidia.com/mig.capable"] = str(_mig_capable(gpus)).lower()
    if strategy == "none":
        return labels
    labels["nvidia.com/mig.strategy"] = strategy
    by_profile: dict[str, list[MigInstance]] = {}
    parent_of: dict[str, PhysicalGPU] = {}
    for g in gpus:
        for m in g.mig:
            by_profile.setdefault(m.profile, []).append(m)
            parent_of.setdefault(m.profile, g)
    mig_gpus = [g for g in gpus if g.mig_enabled]
    if strategy == "single":
        if not mig_gpus:
            return labels
        if len(mig_gpus) != len(gpus) or len(by_profile) != 1:
            return labels | _invalid_single(mig_gpus[0])
        (profile, migs), = by_profile.items()
        return labels | _mig_device_labels(GPU_RESOURCE, parent_of[profile], migs, config)
    for profile, migs in sorted(by_profile.items()):
        labels |= _mig_device_labels(mig_resource_name(profile), parent_of[profile], migs, config)
    return labels
