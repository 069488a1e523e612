"""The device manager against a spec-written fake plugin: registration, health, allocation, checkpoint."""

from __future__ import annotations

import json

import grpc
import pytest

from mockgpu.apimachinery.names import is_extended_resource_name
from mockgpu.control.kubelet.checkpoint import CHECKPOINT_NAME
from mockgpu.control.kubelet.devicemanager import AdmissionError, DeviceManager

RES = "example.com/gpu"
IDS = ["d0", "d1", "d2", "d3"]


@pytest.fixture
def dm(plugin_dir):
    m = DeviceManager(plugin_dir, endpoint_grace=0.3)
    m.start()
    yield m
    m.stop()


def registered(dm: DeviceManager, resource: str, n: int) -> bool:
    return dm.node_resources()[1].get(resource) == n


@pytest.fixture
def plugin(dm, plugins, plugin_dir):
    p = plugins(plugin_dir, RES, IDS)
    p.register()
    assert dm.wait_for(lambda m: registered(m, RES, 4))
    return p


@pytest.mark.parametrize(
    "name, ok",
    [
        ("nvidia.com/gpu", True),
        ("nvidia.com/mig-1g.10gb", True),
        ("example.com/foo_bar", True),
        ("gpu", False),
        ("kubernetes.io/gpu", False),
        ("requests.example.com/gpu", False),
        ("Example.com/gpu", False),
        ("example.com/-gpu", False),
        ("example.com/" + "g" * 64, False),
    ],
    ids=[
        "nvidia",
        "mig",
        "underscore",
        "no-domain",
        "k8s-domain",
        "requests-prefix",
        "upper-domain",
        "bad-name",
        "too-long",
    ],
)
def test_extended_resource_names(name: str, ok: bool) -> None:
    assert is_extended_resource_name(name) is ok


@pytest.mark.parametrize(
    "version, resource, message",
    [
        (
            "v1alpha",
            RES,
            'requested API version "v1alpha" is not supported by kubelet. Supported version is ["v1beta1"]',
        ),
        ("v1beta1", "gpu", 'the ResourceName "gpu" is invalid'),
    ],
    ids=["bad-version", "bad-resource"],
)
def test_registration_is_validated(dm, plugins, plugin_dir, version, resource, message) -> None:
    p = plugins(plugin_dir, RES, IDS)
    with pytest.raises(grpc.RpcError) as err:
        p.register(version=version, resource=resource)
    assert err.value.details() == message
    assert dm.registrations == []


def test_register_fails_when_plugin_does_not_serve(dm, plugin_dir) -> None:
    from mockgpu.control.kubelet import endpoint

    endpoint.DIAL_TIMEOUT, old = 0.5, endpoint.DIAL_TIMEOUT
    try:
        with pytest.raises(RuntimeError, match="failed to dial device plugin"):
            dm.register("v1beta1", "absent.sock", RES)
    finally:
        endpoint.DIAL_TIMEOUT = old


def test_capacity_and_health(dm, plugin) -> None:
    assert dm.node_resources() == ({RES: 4}, {RES: 4})
    plugin.set_health("d1", "Unhealthy")
    assert dm.wait_for(lambda m: registered(m, RES, 3))
    assert dm.node_resources()[0] == {RES: 4}
    assert dm.devices(RES)["d1"] is False


def test_allocation_bookkeeping(dm, plugin) -> None:
    a = dm.allocate("pod-a", "main", {RES: 2, "cpu": 1})
    b = dm.allocate("pod-b", "main", {RES: 2})
    assert a.devices[RES] == ["d0", "d1"] and b.devices[RES] == ["d2", "d3"]
    assert a.envs["FAKE_VISIBLE"] == "d0,d1"
    assert [m.container_path for m in a.mounts] == ["/run/fake"]
    assert [d.container_path for d in a.device_specs] == ["/dev/d0", "/dev/d1"]
    assert a.annotations == {"fake/resource": RES}
    with pytest.raises(AdmissionError) as err:
        dm.allocate("pod-c", "main", {RES: 1})
    assert err.value.reason == "UnexpectedAdmissionError"
    assert err.value.message == (
        f"Allocate failed due to requested number of devices unavailable for {RES}. Requested: 1, Available: 0, "
        "which is unexpected"
    )
    # Admitting the same container again keeps what it has, without another Allocate.
    assert dm.allocate("pod-a", "main", {RES: 2}).devices[RES] == ["d0", "d1"]
    assert len(plugin.allocate_calls) == 2
    dm.remove_pod("pod-a")
    assert dm.allocate("pod-c", "main", {RES: 2}).devices[RES] == ["d0", "d1"]
    held = [set(v[RES]) for v in dm.pod_devices().values()]
    assert sum(len(h) for h in held) == len(set().union(*held)) == 4


def test_unhealthy_devices_are_not_allocated(dm, plugin) -> None:
    plugin.set_health("d0", "Unhealthy")
    assert dm.wait_for(lambda m: registered(m, RES, 3))
    assert dm.allocate("p", "c", {RES: 3}).devices[RES] == ["d1", "d2", "d3"]


def test_active_pods_garbage_collects(plugin_dir, plugins) -> None:
    active = {"pod-a"}
    m = DeviceManager(plugin_dir, active_pods=lambda: active)
    m.start()
    try:
        plugins(plugin_dir, RES, ["d0"]).register()
        assert m.wait_for(lambda x: registered(x, RES, 1))
        m.allocate("pod-a", "c", {RES: 1})
        active.clear()
        active.add("pod-b")
        assert m.allocate("pod-b", "c", {RES: 1}).devices[RES] == ["d0"]
    finally:
        m.stop()


def test_preferred_allocation_is_used(dm, plugins, plugin_dir) -> None:
    p = plugins(plugin_dir, RES, IDS, preferred=True)
    p.prefer = ["d3", "d1"]
    p.register()
    assert dm.wait_for(lambda m: registered(m, RES, 4))
    got = dm.allocate("p", "c", {RES: 2})
    assert sorted(got.devices[RES]) == ["d1", "d3"]
    assert p.preferred_calls == [(IDS, 2)]


def test_preferred_answer_is_topped_up_from_free_devices(dm, plugins, plugin_dir) -> None:
    p = plugins(plugin_dir, RES, IDS, preferred=True)
    p.prefer = ["d2", "not-a-device"]
    p.register()
    assert dm.wait_for(lambda m: registered(m, RES, 4))
    assert sorted(dm.allocate("p", "c", {RES: 2}).devices[RES]) == ["d0", "d2"]


@pytest.mark.parametrize(
    "attr, want",
    [
        ("fail_allocate", "Allocate failed due to rpc error: code = Unknown desc = boom, which is unexpected"),
        (
            "fail_preferred",
            "Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: "
            "rpc error: code = Internal desc = boom, which is unexpected",
        ),
    ],
    ids=["allocate", "preferred"],
)
def test_rpc_failures_fail_admission(dm, plugins, plugin_dir, attr, want) -> None:
    p = plugins(plugin_dir, RES, IDS, preferred=True)
    setattr(p, attr, "boom")
    p.register()
    assert dm.wait_for(lambda m: registered(m, RES, 4))
    with pytest.raises(AdmissionError) as err:
        dm.allocate("p", "c", {RES: 1})
    assert err.value.message == want
    assert dm.pod_devices() == {}


def test_plugin_gone_zeroes_allocatable_then_capacity(dm, plugin) -> None:
    plugin.stop()
    assert dm.wait_for(lambda m: m.node_resources()[1].get(RES) == 0)
    with pytest.raises(AdmissionError, match="no healthy devices present; cannot allocate unhealthy devices"):
        dm.allocate("p", "c", {RES: 1})
    # After the grace period the resource is dropped: reported as 0 capacity, not deleted.
    assert dm.wait_for(lambda m: m.node_resources() == ({RES: 0}, {RES: 0}), timeout=5)


def test_unregistered_resource_is_skipped(dm, plugin) -> None:
    assert dm.allocate("p", "c", {"other.com/thing": 1}).devices == {}


def test_reregistration_replaces_endpoint(dm, plugin, plugins, plugin_dir) -> None:
    plugin.stop()
    p2 = plugins(plugin_dir, RES, ["e0", "e1"])
    p2.register()
    assert dm.wait_for(lambda m: m.node_resources() == ({RES: 2}, {RES: 2}))
    assert dm.allocate("p", "c", {RES: 1}).envs["FAKE_VISIBLE"] == "e0"


def test_envs_merge_over_resources(dm, plugins, plugin_dir) -> None:
    a = plugins(plugin_dir, "a.com/x", ["x0"])
    b = plugins(plugin_dir, "b.com/y", ["y0"])
    a.register()
    b.register()
    assert dm.wait_for(lambda m: registered(m, "a.com/x", 1) and registered(m, "b.com/y", 1))
    got = dm.allocate("p", "c", {"a.com/x": 1, "b.com/y": 1})
    assert got.devices == {"a.com/x": ["x0"], "b.com/y": ["y0"]}
    assert got.envs["SHARED"] == "a.com/x"  # first resource wins, the conflict is logged
    assert len(got.mounts) == 1 and len(got.device_specs) == 2


def test_checkpoint_survives_restart(plugin_dir, plugins) -> None:
    m = DeviceManager(plugin_dir)
    m.start()
    p = plugins(plugin_dir, RES, IDS)
    p.numa = {"d0": 0, "d1": 1}
    p.register()
    assert m.wait_for(lambda x: registered(x, RES, 4))
    m.allocate("pod-a", "main", {RES: 2})
    m.stop()
    doc = json.loads((plugin_dir / CHECKPOINT_NAME).read_text())
    entry = doc["Data"]["PodDeviceEntries"][0]
    assert (entry["PodUID"], entry["ContainerName"], entry["ResourceName"]) == ("pod-a", "main", RES)
    assert entry["DeviceIDs"] == {"0": ["d0"], "1": ["d1"]}
    assert sorted(doc["Data"]["RegisteredDevices"][RES]) == IDS
    assert isinstance(doc["Checksum"], int)

    m2 = DeviceManager(plugin_dir)
    m2.start()
    try:
        assert not (plugin_dir / p.endpoint).exists()  # stale plugin sockets are removed at start
        assert m2.node_resources() == ({RES: 0}, {RES: 0})
        assert m2.get_allocation("pod-a", "main").envs["FAKE_VISIBLE"] == "d0,d1"
        p.stop()
        p2 = plugins(plugin_dir, RES, IDS)
        p2.register()
        assert m2.wait_for(lambda x: registered(x, RES, 4))
        assert m2.allocate("pod-b", "main", {RES: 2}).devices[RES] == ["d2", "d3"]
    finally:
        m2.stop()


def test_corrupt_checkpoint_is_ignored(plugin_dir) -> None:
    (plugin_dir / CHECKPOINT_NAME).write_text(
        '{"Data": {"PodDeviceEntries": null, "RegisteredDevices": {}}, "Checksum": 1}'
    )
    m = DeviceManager(plugin_dir)
    m.start()
    try:
        assert m.pod_devices() == {} and m.node_resources() == ({}, {})
    finally:
        m.stop()


@pytest.mark.parametrize("required", [True, False], ids=["required", "not-required"])
def test_pre_start_container_only_when_asked(dm, plugins, plugin_dir, required: bool) -> None:
    p = plugins(plugin_dir, RES, IDS)
    p.pre_start_required = required
    p.register()
    assert dm.wait_for(lambda m: registered(m, RES, 4))
    dm.allocate("p", "c", {RES: "2"})  # limits are quantities; strings work as in a pod spec
    dm.pre_start("p", "c")
    assert p.pre_start_calls == ([["d0", "d1"]] if required else [])


def test_zero_request_allocates_nothing(dm, plugin) -> None:
    assert dm.allocate("p", "c", {RES: 0}).devices == {}
    assert plugin.allocate_calls == []


def test_too_long_socket_path_is_a_clear_error(plugin_dir) -> None:
    from mockgpu.errors import MockgpuError

    m = DeviceManager(plugin_dir / ("x" * 100))
    with pytest.raises(MockgpuError, match="at most 107: use a shorter device plugin directory"):
        m.start()
