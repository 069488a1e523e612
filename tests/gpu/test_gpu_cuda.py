"""Fake CUDA: what a process sees (NVIDIA_ then CUDA_VISIBLE_DEVICES, renumbered) and OOM."""

from __future__ import annotations

import pytest

from mockgpu.errors import MockgpuError
from mockgpu.gpu.cuda import CudaError, CudaRuntime, cudaErrorMemoryAllocation
from mockgpu.gpu.inventory import NodeInventory
from mockgpu.gpu.visibility import container_gpus, cuda_devices


def _whole(inv: NodeInventory, i: int) -> str:
    return inv.gpus[i].uuid


# (NVIDIA_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, expected physical indices in CUDA order); None = unset.
# Values may reference GPU UUIDs as "{uuidN}" and unique prefixes as "{prefixN}".
WHOLE = [
    (None, None, [0, 1, 2, 3]),
    ("all", None, [0, 1, 2, 3]),
    ("none", None, []),
    ("void", None, []),
    ("", None, []),
    ("2,0", None, [0, 2]),
    ("{uuid3},{uuid1}", None, [1, 3]),
    ("{uuid3}::2", None, [3]),
    (None, "2,1", [2, 1]),
    (None, "0,2,-1,1", [0, 2]),
    (None, "", []),
    (None, "7", []),
    (None, "1,1,2", [1]),
    (None, "{prefix3},0", [3, 0]),
    (None, "GPU-", []),
    ("1,3", "1", [3]),
    ("1,3", "{uuid3}", [3]),
    ("1,3", "{uuid0}", []),
    (None, " 3 , 0 ", [3, 0]),
]


def _fill(s: str | None, inv: NodeInventory) -> str | None:
    if s is None:
        return None
    for i, g in enumerate(inv.gpus):
        s = s.replace(f"{{uuid{i}}}", g.uuid).replace(f"{{prefix{i}}}", g.uuid[:12])
    return s


@pytest.mark.parametrize("nvd,cvd,want", WHOLE, ids=[f"NVD={a!r},CVD={b!r}" for a, b, _ in WHOLE])
def test_visibility_whole_gpus(node_dir, nvd, cvd, want):
    drv, env = node_dir("whole-0")
    inv = drv.inventory
    assert len({g.uuid[:12] for g in inv.gpus}) == 4, "prefixes must be unique for this table"
    for k, v in (("NVIDIA_VISIBLE_DEVICES", nvd), ("CUDA_VISIBLE_DEVICES", cvd)):
        if v is not None:
            env[k] = _fill(v, inv)
    devs = cuda_devices(inv, env)
    assert [d.gpu.index for d in devs] == want
    assert [d.ordinal for d in devs] == list(range(len(want)))


def test_unknown_nvidia_visible_device_is_an_error(node_dir):
    drv, env = node_dir("whole-0")
    with pytest.raises(MockgpuError, match="nvidia-container-cli: device error: GPU-nope: unknown device"):
        container_gpus(drv.inventory, {**env, "NVIDIA_VISIBLE_DEVICES": "GPU-nope"})


def test_mig_visibility_and_renumbering(node_dir):
    drv, env = node_dir("mig-0")
    g0, g1 = drv.inventory.gpus
    every = cuda_devices(drv.inventory, env)
    assert [d.uuid for d in every] == [m.uuid for m in g0.mig] + [m.uuid for m in g1.mig]
    given = {**env, "NVIDIA_VISIBLE_DEVICES": f"{g1.mig[2].uuid},0:3"}
    devs = cuda_devices(drv.inventory, given)
    assert [d.uuid for d in devs] == [g0.mig[3].uuid, g1.mig[2].uuid]
    picked = cuda_devices(drv.inventory, {**given, "CUDA_VISIBLE_DEVICES": g1.mig[2].uuid[:10]})
    assert [(d.ordinal, d.uuid) for d in picked] == [(0, g1.mig[2].uuid)]
    legacy = f"MIG-{g1.uuid}/{g1.mig[0].gi_id}/0"
    assert [d.uuid for d in cuda_devices(drv.inventory, {**env, "CUDA_VISIBLE_DEVICES": legacy})] == [g1.mig[0].uuid]
    # a GPU UUID of a MIG-enabled GPU is not a CUDA device: the list stops there
    assert cuda_devices(drv.inventory, {**env, "CUDA_VISIBLE_DEVICES": f"{g1.uuid},0"}) == []


def test_properties_of_a_mig_device_are_the_instance(node_dir):
    drv, env = node_dir("mig-0")
    m = drv.inventory.gpus[1].mig[0]
    rt = CudaRuntime({**env, "NVIDIA_VISIBLE_DEVICES": m.uuid})
    assert rt.device_count() == 1
    p = rt.get_device_properties(0)
    assert (p.name, p.total_memory, p.multi_processor_count, p.uuid, p.major, p.minor) == (
        "NVIDIA A100-SXM4-80GB MIG 3g.40gb", 40192 << 20, 42, m.uuid, 8, 0)
    assert rt.mem_get_info(0) == (40192 << 20, 40192 << 20)


def test_out_of_memory_is_cuda_error_2_and_shared_by_time_sliced_neighbours(node_dir):
    drv, env = node_dir("whole-0")
    g = drv.inventory.gpus[0]
    env = {**env, "NVIDIA_VISIBLE_DEVICES": g.uuid}
    a, b = CudaRuntime({**env, "MOCKGPU_POD_NAME": "a"}), CudaRuntime({**env, "MOCKGPU_POD_NAME": "b"})
    try:
        big = a.malloc(0, 60 << 30)
        b.report_utilization(0, 40)
        with pytest.raises(CudaError) as exc:
            b.malloc(0, 30 << 30)
        assert exc.value.code == cudaErrorMemoryAllocation == 2
        assert str(exc.value).startswith("CUDA error: out of memory")
        free, total = b.mem_get_info(0)
        assert total - free == 60 << 30
        a.free(big)
        b.malloc(0, 30 << 30)
        snap = drv.snapshot()[g.uuid]
        assert snap["used_mib"] == 30 << 10 and snap["utilization"] == 40
    finally:
        a.shutdown()
        b.shutdown()
    assert drv.snapshot()[g.uuid]["used_mib"] == 0


def test_errors_for_bad_ordinals_and_no_driver(node_dir):
    drv, env = node_dir("whole-0")
    rt = CudaRuntime({**env, "CUDA_VISIBLE_DEVICES": "1"})
    with pytest.raises(CudaError, match="invalid device ordinal"):
        rt.malloc(1, 1)
    none = CudaRuntime({"MOCKGPU_DRIVER_DIR": str(drv.dir / "missing")})
    assert none.device_count() == 0
    with pytest.raises(CudaError) as exc:
        none.malloc(0, 1)
    assert exc.value.code == 100


def test_module_api_is_importable_as_mockgpu_cuda():
    import mockgpu.cuda as cuda

    assert {"device_count", "get_device_properties", "mem_get_info", "malloc", "free",
            "report_utilization"} <= set(dir(cuda))
