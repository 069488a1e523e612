"""Resource computation: names, device IDs, NUMA and request validation, per sharing config."""

from __future__ import annotations

import pytest
from dp_inventories import mig_node, plain_node, uniform_mig_node, whole_node

from mockgpu.config.nvidia import DevicePluginConfig
from mockgpu.deviceplugin.resources import (
    RequestTooLargeError,
    UnknownDeviceError,
    resource_managers,
    socket_name,
)
from mockgpu.errors import MockgpuError
from mockgpu.gpu.inventory import NodeInventory


def cfg(**data) -> DevicePluginConfig:
    return DevicePluginConfig.model_validate({"version": "v1", **data})


def ts(replicas: int, name: str = "nvidia.com/gpu", **flags) -> dict:
    return {"sharing": {"timeSlicing": {**flags, "resources": [{"name": name, "replicas": replicas}]}}}


# (id, inventory, config, {resource: count})
CASES = [
    ("whole-gpus", whole_node(), cfg(), {"nvidia.com/gpu": 4}),
    ("mig-none-advertises-parents", mig_node(), cfg(), {"nvidia.com/gpu": 2}),
    ("mig-single", uniform_mig_node(), cfg(flags={"migStrategy": "single"}), {"nvidia.com/gpu": 14}),
    ("mig-single-without-mig-is-none", plain_node(), cfg(flags={"migStrategy": "single"}), {"nvidia.com/gpu": 2}),
    ("mig-mixed", mig_node(), cfg(flags={"migStrategy": "mixed"}),
     {"nvidia.com/mig-1g.10gb": 8, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1}),
    ("time-slicing", plain_node(), cfg(**ts(4)), {"nvidia.com/gpu": 8}),
    ("time-slicing-rename", plain_node(), cfg(**ts(4, renameByDefault=True)), {"nvidia.com/gpu.shared": 8}),
    ("time-slicing-mig-mixed", mig_node(), cfg(flags={"migStrategy": "mixed"}, **ts(3, "nvidia.com/mig-1g.10gb")),
     {"nvidia.com/mig-1g.10gb": 24, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1}),
    ("replicas-one-is-unshared", plain_node(), cfg(**ts(1)), {"nvidia.com/gpu": 2}),
]


@pytest.mark.parametrize(("inv", "config", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_resource_names_and_counts(inv, config, expected) -> None:
    got = {rm.resource: len(rm.devices()) for rm in resource_managers(inv, config)}
    assert got == expected


def test_whole_gpu_ids_are_uuids_with_numa() -> None:
    inv = whole_node()
    (rm,) = resource_managers(inv, cfg())
    assert [d.id for d in rm.devices()] == [g.uuid for g in inv.gpus]
    assert [d.numa_node for d in rm.devices()] == [0, 0, 1, 1]
    assert {d.health for d in rm.devices()} == {"Healthy"}


def test_mig_ids_are_mig_uuids() -> None:
    inv = mig_node()
    rms = {rm.resource: rm for rm in resource_managers(inv, cfg(flags={"migStrategy": "mixed"}))}
    ids = [d.id for d in rms["nvidia.com/mig-1g.10gb"].devices()]
    expected = [m.uuid for g in inv.gpus for m in g.mig if m.profile == "1g.10gb"]
    assert ids == expected and all(i.startswith("MIG-") for i in ids)
    assert rms["nvidia.com/mig-3g.40gb"].devices()[0].index == "1:0"


def test_index_id_strategy() -> None:
    inv = mig_node()
    rms = {rm.resource: rm for rm in resource_managers(
        inv, cfg(flags={"migStrategy": "mixed", "plugin": {"deviceIDStrategy": "index"}}))}
    assert [d.id for d in rms["nvidia.com/mig-2g.20gb"].devices()] == ["1:1"]


def test_replica_ids() -> None:
    inv = plain_node()
    (rm,) = resource_managers(inv, cfg(**ts(4)))
    u0 = inv.gpus[0].uuid
    assert [d.id for d in rm.devices()[:4]] == [f"{u0}::{n}" for n in range(4)]
    assert rm.visible_ids([f"{u0}::1", f"{u0}::3", f"{inv.gpus[1].uuid}::0"]) == [u0, inv.gpus[1].uuid]


def test_fail_requests_greater_than_one_uses_upstream_text() -> None:
    inv = plain_node()
    (rm,) = resource_managers(inv, cfg(**ts(4, failRequestsGreaterThanOne=True)))
    ids = [d.id for d in rm.devices()[:2]]
    with pytest.raises(RequestTooLargeError) as exc:
        rm.validate_request(ids)
    assert str(exc.value) == (
        "request for 'nvidia.com/gpu: 2' too large: maximum request size for shared resources is 1")
    rm.validate_request(ids[:1])  # one replica is fine


def test_fail_requests_greater_than_one_off_allows_two() -> None:
    inv = plain_node()
    (rm,) = resource_managers(inv, cfg(**ts(4)))
    rm.validate_request([d.id for d in rm.devices()[:2]])


def test_unknown_device() -> None:
    (rm,) = resource_managers(whole_node(), cfg())
    with pytest.raises(UnknownDeviceError, match="unknown device: GPU-nope"):
        rm.validate_request(["GPU-nope"])


@pytest.mark.parametrize("inv", [
    NodeInventory("c", "n", (mig_node().gpus[0], plain_node().gpus[1])),
    mig_node(),
], ids=["mig-and-non-mig", "two-profiles"])
def test_mig_single_refuses_inconsistent_node(inv) -> None:
    with pytest.raises(MockgpuError, match="migStrategy single"):
        resource_managers(inv, cfg(flags={"migStrategy": "single"}))


def test_health_follows_parent_gpu() -> None:
    inv = mig_node()
    rms = resource_managers(inv, cfg(flags={"migStrategy": "mixed"}))
    rm = next(r for r in rms if r.resource == "nvidia.com/mig-1g.10gb")
    assert rm.set_unhealthy([inv.gpus[0].uuid]) is True
    bad = [d.id for d in rm.devices() if d.health == "Unhealthy"]
    assert bad == [m.uuid for m in inv.gpus[0].mig]
    assert rm.set_unhealthy([inv.gpus[0].uuid]) is False  # no change, no update
    assert rm.set_unhealthy([]) is True and {d.health for d in rm.devices()} == {"Healthy"}


@pytest.mark.parametrize(("resource", "sock"), [
    ("nvidia.com/gpu", "nvidia-gpu.sock"), ("nvidia.com/mig-1g.10gb", "nvidia-mig-1g.10gb.sock"),
    ("nvidia.com/gpu.shared", "nvidia-gpu.shared.sock"),
], ids=["gpu", "mig", "shared"])
def test_socket_names(resource: str, sock: str) -> None:
    assert socket_name(resource) == sock
