"""Injected faults (mockgpu.gpu.faults) through the one read path, ``Driver.health()``, and what each Xid does to
fake CUDA and fake nvidia-smi (docs/faults.md)."""

from __future__ import annotations

import json

import pytest

from mockgpu.gpu import smi
from mockgpu.gpu.cuda import CudaError, CudaRuntime
from mockgpu.gpu.faults import XIDS, FaultLog, faults_dir_for

# xid -> (healthy, lost, ecc_uncorrectable), per NVIDIA's Xid catalog and k8s-device-plugin's health.go
XID_EFFECTS = [
    (79, False, True, False),  # GPU has fallen off the bus
    (48, False, False, True),  # DBE (Double Bit Error) ECC Error
    (13, True, False, False),  # application errors: the plugin keeps the GPU healthy
    (31, True, False, False),
    (43, True, False, False),
    (45, True, False, False),
    (68, True, False, False),
    (109, True, False, False),
    (94, False, False, False),  # any other Xid: unhealthy for the plugin, no CUDA effect modelled
]


@pytest.mark.parametrize(("xid", "healthy", "lost", "ecc"), XID_EFFECTS, ids=[f"xid-{r[0]}" for r in XID_EFFECTS])
def test_what_each_xid_does_to_health(node_dir, xid: int, healthy: bool, lost: bool, ecc: bool) -> None:
    drv, _ = node_dir("whole-0")
    g0, g1 = drv.inventory.gpus[:2]
    drv.inject_xid(g0.uuid, xid)
    h = drv.health()
    assert (h[g0.uuid].healthy, h[g0.uuid].lost, h[g0.uuid].ecc_uncorrectable) == (healthy, lost, ecc)
    assert h[g0.uuid].xids == (xid,) and h[g1.uuid].healthy and h[g1.uuid].xids == ()


def test_a_lost_gpu_takes_its_mig_instances(node_dir) -> None:
    drv, _ = node_dir("mig-0")
    g0 = drv.inventory.gpus[0]
    drv.inject_xid(g0.uuid, 79)
    h = drv.health()
    assert all(h[m.uuid].lost and not h[m.uuid].healthy for m in g0.mig)
    assert all(h[m.uuid].healthy for m in drv.inventory.gpus[1].mig)


def test_the_log_is_beside_the_driver_dir_and_clear_is_a_reset(node_dir) -> None:
    drv, _ = node_dir("whole-0")
    g = drv.inventory.gpus
    drv.inject_xid(g[0].uuid, 79)
    drv.inject_xid(g[1].uuid, 48)
    assert faults_dir_for(drv.dir) == drv.dir.parent / "faults"
    doc = json.loads((drv.dir.parent / "faults" / XIDS).read_text())
    assert [(e["uuid"], e["xid"]) for e in doc] == [(g[0].uuid, 79), (g[1].uuid, 48)]
    assert not (drv.dir / "health.json").exists()
    assert drv.clear_xids(g[0].uuid) == 1
    assert [(e.uuid, e.xid) for e in drv.faults.events()] == [(g[1].uuid, 48)]
    assert drv.clear_xids() == 1 and all(h.healthy for h in drv.health().values())


@pytest.mark.parametrize("content", [b"not json", b"{}", b'[{"uuid": 1, "xid": 79}, {"uuid": "x", "xid": true}]'],
                         ids=["garbage", "not-a-list", "wrong-shapes"])
def test_entries_of_the_wrong_shape_are_ignored(tmp_path, content: bytes) -> None:
    (tmp_path / XIDS).write_bytes(content)
    assert FaultLog(tmp_path).events() == []


@pytest.mark.parametrize("xid", [0, -79, True, "79"], ids=["zero", "negative", "bool", "str"])
def test_an_xid_is_a_positive_integer(tmp_path, xid) -> None:
    with pytest.raises(ValueError):
        FaultLog(tmp_path).inject("GPU-x", xid)


# xid -> the CUDA error code every context call gives afterwards (None: calls still work)
CUDA_EFFECTS = [(79, 719, "unspecified launch failure"), (48, 214, "uncorrectable ECC error encountered"),
                (13, None, "")]


@pytest.mark.parametrize(("xid", "code", "text"), CUDA_EFFECTS, ids=[f"xid-{r[0]}" for r in CUDA_EFFECTS])
def test_cuda_calls_on_a_faulty_gpu_fail_and_stay_failed(node_dir, xid: int, code: int | None, text: str) -> None:
    drv, env = node_dir("whole-0")
    g0 = drv.inventory.gpus[0]
    rt = CudaRuntime({**env, "NVIDIA_VISIBLE_DEVICES": g0.uuid})
    a = rt.malloc(0, 1 << 30)
    drv.inject_xid(g0.uuid, xid)
    calls = [lambda: rt.report_utilization(0, 50), lambda: rt.mem_get_info(0), lambda: rt.malloc(0, 1),
             lambda: rt.free(a)]
    if code is None:
        for call in calls:
            call()
        return
    for call in calls:
        with pytest.raises(CudaError) as err:
            call()
        assert err.value.code == code and str(err.value).startswith(f"CUDA error: {text}")
    drv.clear_xids()  # the GPU is reset; this process's context stays broken (sticky), a new one works
    with pytest.raises(CudaError):
        rt.report_utilization(0, 50)
    CudaRuntime({**env, "NVIDIA_VISIBLE_DEVICES": g0.uuid}).report_utilization(0, 50)
    rt.shutdown()


def test_nvidia_smi_cannot_reach_a_lost_gpu(node_dir) -> None:
    drv, env = node_dir("whole-0")
    g = drv.inventory.gpus
    drv.inject_xid(g[1].uuid, 79)
    bus = g[1].pci_bus_id.split(":", 1)[1]
    line = f"Unable to determine the device handle for GPU 0000:{bus}: GPU is lost.  Reboot the system to recover " \
           f"this GPU"
    assert smi.run(["-L"], {**env, "NVIDIA_VISIBLE_DEVICES": g[1].uuid}) == (15, [line])
    code, lines = smi.run(["-L"], {**env, "NVIDIA_VISIBLE_DEVICES": f"{g[0].uuid},{g[1].uuid}"})
    assert (code, lines) == (15, [line, f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {g[0].uuid})"])
    drv.inject_xid(g[0].uuid, 48)  # ECC: nvidia-smi still reaches it
    assert smi.run(["-L"], {**env, "NVIDIA_VISIBLE_DEVICES": g[0].uuid})[0] == 0
