"""ResourceSlices, DeviceClasses and ResourceClaims shaped as the shared DRA contract says (test helpers).

One pool per node (pool name = node name); for MIG-capable GPUs the shared counters live in their own slice
(``gpu-<i>-counters`` with ``memory-slice-<k>`` and ``multiprocessors``), the devices in another; the whole GPU
consumes every counter of its set, a MIG placement device the slices it covers plus its multiprocessors.
"""

from __future__ import annotations

from collections.abc import Sequence

from mockgpu.gpu import catalog

DRIVER = "gpu.mockgpu.io"
GPU_CLASS = DRIVER
MIG_CLASS = f"mig.{DRIVER}"


def device_class(name: str, kind: str) -> dict:
    expr = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "{kind}"'
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expr}}]}}


CLASSES = {GPU_CLASS: device_class(GPU_CLASS, "gpu"), MIG_CLASS: device_class(MIG_CLASS, "mig")}


def _gpu_device(node: str, i: int, model: catalog.GPUModel, island: int | None) -> dict:
    attrs: dict = {"type": {"string": "gpu"}, "uuid": {"string": f"GPU-{node}-{i}"}, "index": {"int": i},
                   "model": {"string": model.key}, "productName": {"string": model.product_name},
                   "numaNode": {"int": 0}, "migCapable": {"bool": model.mig_supported},
                   "driverVersion": {"version": "550.54.15"},
                   "cudaComputeCapability": {"version": "{}.{}.0".format(*model.compute_capability)}}
    if island is not None:
        attrs["nvlinkIsland"] = {"int": island}
    dev: dict = {"name": f"gpu-{i}", "attributes": attrs, "capacity": {"memory": {"value": f"{model.memory_mib}Mi"}}}
    if model.mig_supported:
        counters = {f"memory-slice-{k}": {"value": "1"} for k in range(model.memory_slots)}
        counters["multiprocessors"] = {"value": str(model.sm_count)}
        dev["consumesCounters"] = [{"counterSet": f"gpu-{i}-counters", "counters": counters}]
    return dev


def _mig_devices(node: str, i: int, model: catalog.GPUModel) -> list[dict]:
    out = []
    for prof in model.profiles:
        if "+" in prof.name:
            continue
        for start, size in prof.placements:
            counters = {f"memory-slice-{k}": {"value": "1"} for k in range(start, start + size)}
            counters["multiprocessors"] = {"value": str(prof.sm_count)}
            out.append({
                "name": f"gpu-{i}-mig-{prof.name.replace('.', '')}-{start}",
                "attributes": {"type": {"string": "mig"}, "uuid": {"string": f"MIG-{node}-{i}-{prof.name}-{start}"},
                               "index": {"int": i}, "parentIndex": {"int": i}, "profile": {"string": prof.name},
                               "placementStart": {"int": start}, "placementSize": {"int": size},
                               "model": {"string": model.key}},
                "capacity": {"memory": {"value": f"{prof.memory_mib}Mi"},
                             "multiprocessors": {"value": str(prof.sm_count)}},
                "consumesCounters": [{"counterSet": f"gpu-{i}-counters", "counters": counters}],
            })
    return out


def node_slices(node: str, model_key: str, gpus: int, *, islands: Sequence[int | None] | None = None,
                generation: int = 1, mig: bool = True, drop_counters: bool = False) -> list[dict]:
    """The slices the driver would publish for ``node`` (``drop_counters``: the counters slice is missing)."""
    model = catalog.get_model(model_key)
    islands = list(islands) if islands is not None else [None] * gpus
    devices = []
    for i in range(gpus):
        devices.append(_gpu_device(node, i, model, islands[i]))
        if mig and model.mig_supported:
            devices.extend(_mig_devices(node, i, model))
    partitioned = model.mig_supported
    count = 2 if partitioned else 1
    pool = {"name": node, "generation": generation, "resourceSliceCount": count}
    out = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpu-devices"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": dict(pool), "devices": devices}}]
    if partitioned and not drop_counters:
        sets = []
        for i in range(gpus):
            counters = {f"memory-slice-{k}": {"value": "1"} for k in range(model.memory_slots)}
            counters["multiprocessors"] = {"value": str(model.sm_count)}
            sets.append({"name": f"gpu-{i}-counters", "counters": counters})
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"name": f"{node}-gpu-counters"},
                    "spec": {"driver": DRIVER, "pool": dict(pool), "sharedCounters": sets}})
    return out


def request(name: str, class_name: str = GPU_CLASS, *, count: int | None = None, mode: str | None = None,
            selectors: Sequence[str] = (), tolerations: Sequence[dict] = ()) -> dict:
    exactly: dict = {"deviceClassName": class_name}
    if tolerations:
        exactly["tolerations"] = list(tolerations)
    if mode:
        exactly["allocationMode"] = mode
    if count is not None:
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def claim(name: str, *requests: dict, constraints: Sequence[dict] = (), allocated: Sequence[tuple[str, str, str]] = (),
          node: str = "", namespace: str = "default") -> dict:
    """A ResourceClaim; ``allocated`` = ``[(request, pool, device)]`` gives it a ``status.allocation`` on ``node``."""
    c: dict = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
               "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
               "spec": {"devices": {"requests": list(requests)}}}
    if constraints:
        c["spec"]["devices"]["constraints"] = list(constraints)
    if allocated:
        c["status"] = {"allocation": {
            "devices": {"results": [{"request": r, "driver": DRIVER, "pool": p, "device": d} for r, p, d in allocated]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node or allocated[0][1]]}]}]}}}
    return c


def claim_pod(name: str, *claim_names: str, template: str = "") -> dict:
    """A pod referencing claims by name (``template``: one claim from a ResourceClaimTemplate)."""
    refs = [{"name": f"c{i}", "resourceClaimName": n} for i, n in enumerate(claim_names)]
    if template:
        refs.append({"name": "t", "resourceClaimTemplateName": template})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"claims": [{"name": r["name"]} for r in refs]}}],
                     "resourceClaims": refs}}
