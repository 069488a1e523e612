"""The plugin over real Unix sockets, against a fake kubelet Registration server."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from dp_inventories import plain_node, whole_node
from fake_kubelet import FakeKubelet

from mockgpu.config.nvidia import DevicePluginConfig
from mockgpu.deviceplugin.allocate import AllocateSettings
from mockgpu.deviceplugin.api import api_pb2 as pb
from mockgpu.deviceplugin.api import api_pb2_grpc as pb_grpc
from mockgpu.deviceplugin.command import _health_source
from mockgpu.deviceplugin.resources import resource_managers
from mockgpu.deviceplugin.server import NodePlugins
from mockgpu.gpu.driver import Driver, write_node_driver


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A plugin dir with a short path (Unix socket paths are limited to 107 bytes)."""
    d = Path(tempfile.mkdtemp(prefix="dp-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def kubelet(short_dir: Path) -> Iterator[FakeKubelet]:
    k = FakeKubelet(short_dir).start()
    yield k
    k.stop()


def stub(plugin_dir: Path, sock: str = "nvidia-gpu.sock") -> tuple[grpc.Channel, pb_grpc.DevicePluginStub]:
    ch = grpc.insecure_channel(f"unix://{plugin_dir / sock}")
    return ch, pb_grpc.DevicePluginStub(ch)


def wait_until(cond, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def whole_plugins(plugin_dir: Path, **kw) -> NodePlugins:
    inv = whole_node()
    driver = plugin_dir / "driver"
    write_node_driver(driver, inv)
    return NodePlugins(resource_managers(inv, DevicePluginConfig()), plugin_dir, AllocateSettings(driver_dir=driver),
                       health=_health_source(driver), health_interval=0.1, retry_interval=0.2, **kw)


def test_register_then_list_and_watch(short_dir: Path, kubelet: FakeKubelet) -> None:
    inv = whole_node()
    with whole_plugins(short_dir):
        req, opts = kubelet.next_registration()
        assert (req.version, req.endpoint, req.resource_name) == ("v1beta1", "nvidia-gpu.sock", "nvidia.com/gpu")
        assert req.options.get_preferred_allocation_available and not req.options.pre_start_required
        assert opts == req.options
        ch, s = stub(short_dir)
        with ch:
            stream = s.ListAndWatch(pb.Empty(), timeout=20)
            first = next(stream)
            stream.cancel()
        assert [d.ID for d in first.devices] == [g.uuid for g in inv.gpus]
        assert {d.health for d in first.devices} == {"Healthy"}
        assert [[n.ID for n in d.topology.nodes] for d in first.devices] == [[0], [0], [1], [1]]


def test_allocate_and_preferred_allocation(short_dir: Path, kubelet: FakeKubelet) -> None:
    inv = whole_node()
    u = [g.uuid for g in inv.gpus]
    with whole_plugins(short_dir):
        kubelet.next_registration()
        ch, s = stub(short_dir)
        with ch:
            pref = s.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
                pb.ContainerPreferredAllocationRequest(available_deviceIDs=u[1:], allocation_size=2)]), timeout=5)
            assert list(pref.container_responses[0].deviceIDs) == [u[2], u[3]]  # the free NVLink pair
            resp = s.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=[u[2], u[3]])]), timeout=5)
    (c,) = resp.container_responses
    assert dict(c.envs) == {"NVIDIA_VISIBLE_DEVICES": f"{u[2]},{u[3]}", "MOCKGPU_DRIVER_DIR": "/run/mockgpu/driver"}
    assert [(m.container_path, m.host_path, m.read_only) for m in c.mounts] == [
        ("/run/mockgpu/driver", str(short_dir / "driver"), False),
        ("/run/mockgpu/faults", str(short_dir / "faults"), True)]  # the injected faults: read-only
    assert "CUDA_VISIBLE_DEVICES" not in c.envs


UNKNOWN_ID_CALLS = {
    "allocate": lambda s: s.Allocate(pb.AllocateRequest(container_requests=[
        pb.ContainerAllocateRequest(devices_ids=["GPU-not-here"])]), timeout=5),
    "preferred": lambda s: s.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
        pb.ContainerPreferredAllocationRequest(available_deviceIDs=["GPU-not-here"], allocation_size=1)]), timeout=5),
}


@pytest.mark.parametrize("rpc", list(UNKNOWN_ID_CALLS))
def test_unknown_id_is_invalid_argument(short_dir: Path, kubelet: FakeKubelet, rpc: str) -> None:
    with whole_plugins(short_dir):
        kubelet.next_registration()
        ch, s = stub(short_dir)
        with ch:
            with pytest.raises(grpc.RpcError) as exc:
                UNKNOWN_ID_CALLS[rpc](s)
            assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "unknown device: GPU-not-here" in exc.value.details()
            assert s.GetDevicePluginOptions(pb.Empty(), timeout=5).get_preferred_allocation_available  # still serving


def test_shared_request_too_large_uses_upstream_error(short_dir: Path, kubelet: FakeKubelet) -> None:
    inv = plain_node()
    cfg = DevicePluginConfig.model_validate({"sharing": {"timeSlicing": {
        "failRequestsGreaterThanOne": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}})
    with NodePlugins(resource_managers(inv, cfg), short_dir):
        kubelet.next_registration()
        ch, s = stub(short_dir)
        with ch, pytest.raises(grpc.RpcError) as exc:
            s.Allocate(pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(
                devices_ids=[f"{inv.gpus[0].uuid}::0", f"{inv.gpus[0].uuid}::1"])]), timeout=5)
    assert exc.value.code() == grpc.StatusCode.UNKNOWN
    assert exc.value.details() == (
        "request for 'nvidia.com/gpu: 2' too large: maximum request size for shared resources is 1")


def test_health_change_is_pushed(short_dir: Path, kubelet: FakeKubelet) -> None:
    inv = whole_node()
    with whole_plugins(short_dir):
        kubelet.next_registration()
        ch, s = stub(short_dir)
        with ch:
            stream = s.ListAndWatch(pb.Empty(), timeout=20)
            next(stream)
            Driver(short_dir / "driver").inject_xid(inv.gpus[2].uuid, 79)  # GPU has fallen off the bus
            update = next(stream)
            assert {d.ID: d.health for d in update.devices if d.health != "Healthy"} == {inv.gpus[2].uuid: "Unhealthy"}
            assert len(update.devices) == 4  # always the full list
            Driver(short_dir / "driver").clear_xids()
            assert {d.health for d in next(stream).devices} == {"Healthy"}
            stream.cancel()


def test_application_xid_keeps_device_healthy(short_dir: Path, kubelet: FakeKubelet) -> None:
    inv = whole_node()
    with whole_plugins(short_dir) as plugins:
        kubelet.next_registration()
        Driver(short_dir / "driver").inject_xid(inv.gpus[0].uuid, 13)  # graphics engine exception: app error
        plugins._poll_health()
        assert {d.health for d in plugins.servers[0].rm.devices()} == {"Healthy"}


def test_reregisters_after_kubelet_restart(short_dir: Path, kubelet: FakeKubelet) -> None:
    with whole_plugins(short_dir) as plugins:
        kubelet.next_registration()
        kubelet.stop()  # kubelet.sock disappears
        restarted = FakeKubelet(short_dir).start(clear_sockets=True)  # the new kubelet also wipes plugin sockets
        try:
            req, opts = restarted.next_registration()
            assert req.endpoint == "nvidia-gpu.sock" and opts.get_preferred_allocation_available
            ch, s = stub(short_dir)
            with ch:
                stream = s.ListAndWatch(pb.Empty(), timeout=20)
                assert len(next(stream).devices) == 4
                stream.cancel()
            assert wait_until(lambda: plugins.registrations == 2)
        finally:
            restarted.stop()


def test_registers_when_kubelet_appears_later(short_dir: Path) -> None:
    with whole_plugins(short_dir) as plugins:
        assert plugins.registrations == 0
        late = FakeKubelet(short_dir).start()
        try:
            req, _ = late.next_registration()
            assert req.resource_name == "nvidia.com/gpu"
        finally:
            late.stop()


def test_stop_removes_sockets(short_dir: Path, kubelet: FakeKubelet) -> None:
    with whole_plugins(short_dir):
        kubelet.next_registration()
        assert (short_dir / "nvidia-gpu.sock").is_socket()
    assert not (short_dir / "nvidia-gpu.sock").exists()


def test_own_socket_deleted_restarts_and_registers_again(short_dir: Path, kubelet: FakeKubelet) -> None:
    with whole_plugins(short_dir) as plugins:
        kubelet.next_registration()
        (short_dir / "nvidia-gpu.sock").unlink()
        req, _ = kubelet.next_registration()
        assert req.endpoint == "nvidia-gpu.sock" and (short_dir / "nvidia-gpu.sock").is_socket()
        assert wait_until(lambda: plugins.registrations == 2)  # counted once Register has returned
