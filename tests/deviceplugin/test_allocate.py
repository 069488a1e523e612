"""Allocate's envs and mounts, without gRPC."""

from __future__ import annotations

from pathlib import Path

import pytest
from dp_inventories import mig_node, plain_node

from mockgpu.config.nvidia import DevicePluginConfig
from mockgpu.deviceplugin.allocate import AllocateSettings, container_response
from mockgpu.deviceplugin.resources import UnknownDeviceError, resource_managers


def shared_rm():
    inv = plain_node()
    cfg = DevicePluginConfig.model_validate({"sharing": {"timeSlicing": {"resources": [
        {"name": "nvidia.com/gpu", "replicas": 4}]}}})
    (rm,) = resource_managers(inv, cfg)
    return inv, rm


def test_replicas_are_deduplicated_in_request_order() -> None:
    inv, rm = shared_rm()
    u0, u1 = inv.gpus[0].uuid, inv.gpus[1].uuid
    r = container_response(rm, [f"{u1}::2", f"{u0}::0", f"{u1}::3"], AllocateSettings())
    assert dict(r.envs) == {"NVIDIA_VISIBLE_DEVICES": f"{u1},{u0}"}
    assert list(r.mounts) == []


@pytest.mark.parametrize(("settings", "envs", "mounts"), [
    (AllocateSettings(), {"NVIDIA_VISIBLE_DEVICES"}, []),
    (AllocateSettings(inject_cuda_visible_devices=True), {"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"}, []),
    (AllocateSettings(driver_dir=Path("/n/driver")), {"NVIDIA_VISIBLE_DEVICES", "MOCKGPU_DRIVER_DIR"},
     [("/run/mockgpu/driver", "/n/driver", False), ("/run/mockgpu/faults", "/n/faults", True)]),
    (AllocateSettings(nvidia_smi=Path("/bin/smi")), {"NVIDIA_VISIBLE_DEVICES"},
     [("/usr/bin/nvidia-smi", "/bin/smi", True)]),
], ids=["plain", "inject-cuda-visible-devices", "driver-dir", "nvidia-smi"])
def test_settings(settings, envs, mounts) -> None:
    inv, rm = shared_rm()
    r = container_response(rm, [f"{inv.gpus[0].uuid}::1"], settings)
    assert set(r.envs) == envs
    assert [(m.container_path, m.host_path, m.read_only) for m in r.mounts] == mounts
    if "CUDA_VISIBLE_DEVICES" in envs:
        assert r.envs["CUDA_VISIBLE_DEVICES"] == r.envs["NVIDIA_VISIBLE_DEVICES"] == inv.gpus[0].uuid


def test_mig_device_is_its_mig_uuid() -> None:
    inv = mig_node()
    rms = {rm.resource: rm for rm in resource_managers(
        inv, DevicePluginConfig.model_validate({"flags": {"migStrategy": "mixed"}}))}
    m = next(m for m in inv.gpus[1].mig if m.profile == "3g.40gb")
    r = container_response(rms["nvidia.com/mig-3g.40gb"], [m.uuid], AllocateSettings())
    assert r.envs["NVIDIA_VISIBLE_DEVICES"] == m.uuid


def test_device_of_another_resource_is_unknown() -> None:
    inv = mig_node()
    rms = {rm.resource: rm for rm in resource_managers(
        inv, DevicePluginConfig.model_validate({"flags": {"migStrategy": "mixed"}}))}
    m = next(m for m in inv.gpus[1].mig if m.profile == "3g.40gb")
    with pytest.raises(UnknownDeviceError, match="invalid allocation request for 'nvidia.com/mig-1g.10gb'"):
        container_response(rms["nvidia.com/mig-1g.10gb"], [m.uuid], AllocateSettings())
