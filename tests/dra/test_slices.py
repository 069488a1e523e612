"""The node's ResourceSlices, table-driven: devices, counters, consumption, UUIDs, slice layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockgpu.config.clusterspec import parse_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.deviceplugin.resources import resource_managers
from mockgpu.dra.slices import DRIVER, node_slices
from mockgpu.gpu.inventory import NodeInventory

WORKSHOP = Path(__file__).resolve().parents[2] / "clusters" / "workshop.yaml"


def inventory(model: str, count: int, *, nvlink: list[list[int]] | None = None, mig: list | None = None,
              node: str = "n-0") -> NodeInventory:
    gpu: dict = {"model": model, "count": count, "topology": {"nvlink": nvlink or []}}
    if mig:
        gpu["mig"] = mig
        gpu["devicePluginConfig"] = {"version": "v1", "flags": {"migStrategy": "mixed"}}
    spec = parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "t"},
                       "spec": {"nodePools": [{"name": "n", "gpu": gpu}]}})
    return node_inventory(spec, node)


def devices(slices: list[dict]) -> dict[str, dict]:
    return {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}


def counter_sets(slices: list[dict]) -> dict[str, dict]:
    return {c["name"]: c for s in slices for c in s["spec"].get("sharedCounters", [])}


def attr(dev: dict, name: str):  # noqa: ANN201
    return next(iter(dev["attributes"][name].values()))


def consumed(dev: dict) -> dict[str, str]:
    (c,) = dev["consumesCounters"]
    return {k: v["value"] for k, v in c["counters"].items()}


def slots(dev: dict) -> set[str]:
    return {k for k in consumed(dev) if k.startswith("memory-slice-")}


# A100 80GB, published profiles (no +me): 1g.10gb x7, 1g.20gb x4, 2g.20gb x3, 3g.40gb x2, 4g.40gb x1, 7g.80gb x1
NODES = [
    # (id, model, gpus, devices per GPU, counter sets, device slices)
    ("a100x1", "A100-SXM4-80GB", 1, 1 + 18, 1, 1),
    ("a100x8", "A100-SXM4-80GB", 8, 1 + 18, 1, 3),  # 152 devices: 64 per slice when devices consume counters
    ("h100x2", "H100-SXM5-80GB", 2, 1 + 18, 1, 1),
    ("l4x4", "L4", 4, 1, 0, 1),  # no MIG: no counter slice
    ("t4x200", "T4", 200, 1, 0, 2),  # 128 devices per slice without counters
]


@pytest.mark.parametrize(("model", "count", "per_gpu", "counter_slices", "device_slices"),
                         [r[1:] for r in NODES], ids=[r[0] for r in NODES])
def test_slice_layout(model: str, count: int, per_gpu: int, counter_slices: int, device_slices: int) -> None:
    slices = node_slices(inventory(model, count))
    kinds = ["counters" if "sharedCounters" in s["spec"] else "devices" for s in slices]
    assert kinds == ["counters"] * counter_slices + ["devices"] * device_slices
    assert len(devices(slices)) == count * per_gpu
    assert len(counter_sets(slices)) == (count if counter_slices else 0)
    for s in slices:
        spec = s["spec"]
        assert s["apiVersion"] == "resource.k8s.io/v1" and s["kind"] == "ResourceSlice"
        assert spec["driver"] == DRIVER and spec["nodeName"] == "n-0"
        assert spec["pool"] == {"name": "n-0", "generation": 1, "resourceSliceCount": len(slices)}
        assert ("sharedCounters" in spec) != ("devices" in spec)
        assert len(spec.get("devices", [])) <= (64 if counter_slices else 128)
        assert len(spec.get("sharedCounters", [])) <= 8
    assert len({s["metadata"]["name"] for s in slices}) == len(slices)


def test_a100_counter_set() -> None:
    sets = counter_sets(node_slices(inventory("A100-SXM4-80GB", 2)))
    assert sorted(sets) == ["gpu-0-counters", "gpu-1-counters"]
    assert {k: v["value"] for k, v in sets["gpu-0-counters"]["counters"].items()} == {
        **{f"memory-slice-{k}": "1" for k in range(8)}, "multiprocessors": "108"}


# (device, consumed memory slices, consumed multiprocessors, memory capacity)
A100_CONSUMPTION = [
    ("gpu-0", range(8), "108", "80Gi"),
    ("gpu-0-mig-1g10gb-3", [3], "14", "9728Mi"),
    ("gpu-0-mig-1g10gb-0", [0], "14", "9728Mi"),
    ("gpu-0-mig-3g40gb-4", [4, 5, 6, 7], "42", "40192Mi"),
    ("gpu-0-mig-3g40gb-0", [0, 1, 2, 3], "42", "40192Mi"),
    ("gpu-0-mig-1g20gb-6", [6, 7], "14", "19968Mi"),
    ("gpu-0-mig-7g80gb-0", range(8), "98", "79Gi"),
]


@pytest.mark.parametrize(("name", "mem_slots", "sms", "memory"), A100_CONSUMPTION, ids=[r[0] for r in A100_CONSUMPTION])
def test_a100_consumption(name: str, mem_slots, sms: str, memory: str) -> None:  # noqa: ANN001
    dev = devices(node_slices(inventory("A100-SXM4-80GB", 1)))[name]
    assert dev["consumesCounters"][0]["counterSet"] == "gpu-0-counters"
    assert consumed(dev) == {**{f"memory-slice-{k}": "1" for k in mem_slots}, "multiprocessors": sms}
    assert dev["capacity"]["memory"] == {"value": memory}


# (device a, device b, allocatable together: their memory slices are disjoint)
PAIRS = [
    ("gpu-0-mig-1g10gb-3", "gpu-0-mig-3g40gb-4", True),
    ("gpu-0-mig-3g40gb-0", "gpu-0-mig-1g10gb-0", False),
    ("gpu-0-mig-3g40gb-0", "gpu-0-mig-3g40gb-4", True),
    ("gpu-0", "gpu-0-mig-1g10gb-6", False),
    ("gpu-0-mig-4g40gb-0", "gpu-0-mig-2g20gb-2", False),
    ("gpu-0-mig-1g20gb-6", "gpu-0-mig-1g10gb-6", False),
]


@pytest.mark.parametrize(("a", "b", "together"), PAIRS, ids=[f"{a}+{b}" for a, b, _ in PAIRS])
def test_a100_overlap(a: str, b: str, together: bool) -> None:
    devs = devices(node_slices(inventory("A100-SXM4-80GB", 1)))
    assert (not (slots(devs[a]) & slots(devs[b]))) is together


def test_a100_attributes() -> None:
    inv = inventory("A100-SXM4-80GB", 4, nvlink=[[0, 1], [2]])
    devs = devices(node_slices(inv))
    gpu, mig = devs["gpu-1"], devs["gpu-1-mig-3g40gb-4"]
    assert {k: attr(gpu, k) for k in gpu["attributes"]} == {
        "type": "gpu", "uuid": inv.gpus[1].uuid, "index": 1, "model": "A100-SXM4-80GB",
        "productName": "NVIDIA A100-SXM4-80GB", "numaNode": 0, "nvlinkIsland": 0, "migCapable": True,
        "driverVersion": "550.107.2", "cudaComputeCapability": "8.0.0"}
    assert gpu["attributes"]["driverVersion"] == {"version": "550.107.2"}
    assert "nvlinkIsland" not in devs["gpu-2"]["attributes"]  # a group of one has no NVLink peer
    assert {k: attr(mig, k) for k in ("type", "profile", "parentUUID", "parentIndex", "placementStart",
                                       "placementSize", "index")} == {
        "type": "mig", "profile": "3g.40gb", "parentUUID": inv.gpus[1].uuid, "parentIndex": 1,
        "placementStart": 4, "placementSize": 4, "index": 1}
    assert attr(mig, "uuid").startswith("MIG-")
    assert mig["capacity"]["multiprocessors"] == {"value": "42"}
    assert not any("+me" in n or "me-" in n for n in devs)


def test_nvlink_islands_number_components() -> None:
    devs = devices(node_slices(inventory("H100-SXM5-80GB", 6, nvlink=[[0, 1], [1, 2], [4, 5]])))
    assert {n: attr(d, "nvlinkIsland") for n, d in devs.items() if d["attributes"]["type"] == {"string": "gpu"}
            and "nvlinkIsland" in d["attributes"]} == {"gpu-0": 0, "gpu-1": 0, "gpu-2": 0, "gpu-4": 1, "gpu-5": 1}


def test_h100_profiles_and_counters() -> None:
    slices = node_slices(inventory("H100-SXM5-80GB", 1))
    devs = devices(slices)
    assert consumed(devs["gpu-0-mig-1g20gb-4"]) == {"memory-slice-4": "1", "memory-slice-5": "1",
                                                     "multiprocessors": "26"}
    assert counter_sets(slices)["gpu-0-counters"]["counters"]["multiprocessors"] == {"value": "132"}
    assert attr(devs["gpu-0"], "cudaComputeCapability") == "9.0.0"


def test_no_mig_node_has_no_counters() -> None:
    slices = node_slices(inventory("L4", 2))
    assert len(slices) == 1 and "sharedCounters" not in slices[0]["spec"]
    for d in devices(slices).values():
        assert "consumesCounters" not in d and attr(d, "migCapable") is False


def test_only_managed_gpus() -> None:
    slices = node_slices(inventory("A100-SXM4-80GB", 4), gpus=[2, 3])
    assert sorted(counter_sets(slices)) == ["gpu-2-counters", "gpu-3-counters"]
    assert {n.split("-mig")[0] for n in devices(slices)} == {"gpu-2", "gpu-3"}
    assert node_slices(inventory("A100-SXM4-80GB", 4), gpus=[]) == []


def test_uuids_equal_the_device_plugins() -> None:
    """The workshop's MIG node: every GPU and MIG UUID the device plugin advertises is a DRA device's UUID,
    at the same GPU, profile and placement."""
    from mockgpu.config.clusterspec import load_spec

    spec = load_spec(WORKSHOP)
    inv = node_inventory(spec, "mig-0")
    devs = devices(node_slices(inv))
    # placements of two profiles on the same slots get the same GI ID, hence the same UUID (they exclude each
    # other through the counters, so no two allocated devices ever share one)
    by_uuid = {(attr(d, "uuid"), attr(d, "profile") if "profile" in d["attributes"] else None): d
               for d in devs.values()}
    advertised = {d.uuid for rm in resource_managers(inv, spec.node("mig-0").gpu.devicePluginConfig)
                  for d in rm.devices()}
    assert advertised and advertised <= {u for u, _ in by_uuid}
    for g in inv.gpus:
        assert attr(devs[f"gpu-{g.index}"], "uuid") == g.uuid
        for m in g.mig:
            d = by_uuid[m.uuid, m.profile]
            assert (attr(d, "parentIndex"), attr(d, "profile"), attr(d, "placementStart")) == (
                g.index, m.profile, m.placement_start)
