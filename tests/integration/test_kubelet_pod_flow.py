"""Step 3-4 of the pod flow without the API server: the real device plugin allocates, the process
runtime starts ``mockgpu-workload`` with the returned envs and mounts, and the workloads share (or
do not share) a time-sliced GPU's memory through the fake driver."""

from __future__ import annotations

import time

import pytest
from kubelet_harness import GPU, Node, requires_device_plugin

from mockgpu.control.kubelet.devicemanager import DeviceManager
from mockgpu.control.kubelet.runtime import ContainerSpec, ProcessRuntime

pytestmark = requires_device_plugin


@pytest.fixture
def shared(tmp_path):
    n = Node("shared-0").start()
    rt = ProcessRuntime(tmp_path / "runtime")
    try:
        n.wait_allocatable({GPU: 8})
        yield n, rt
    finally:
        rt.stop_all(grace=1)
        n.close()


def run_pod(dm: DeviceManager, rt: ProcessRuntime, uid: str, *command: str) -> str:
    """Admit one single-container pod with one GPU replica and start it; returns its GPU UUID."""
    alloc = dm.allocate(uid, "main", {GPU: 1})
    spec = ContainerSpec(
        uid, f"pod-{uid}", "default", "main", command=tuple(command), device_envs=alloc.envs, mounts=tuple(alloc.mounts)
    )
    st = rt.start(spec)
    assert st.state == "running", st
    return alloc.envs["NVIDIA_VISIBLE_DEVICES"]


def wait_log(rt: ProcessRuntime, uid: str, text: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while text not in rt.logs(uid, "main"):
        assert time.monotonic() < deadline, rt.logs(uid, "main")
        time.sleep(0.05)


def test_inspect_sees_only_its_gpu(shared) -> None:
    node, rt = shared
    uuid = run_pod(node.dm, rt, "a", "mockgpu-workload", "inspect")
    st = rt.wait("a", "main", timeout=60)
    out = rt.logs("a", "main")
    assert st.exit_code == 0, out
    assert f"NVIDIA_VISIBLE_DEVICES={uuid}" in out
    assert "CUDA devices: 1" in out
    assert f"GPU 0: NVIDIA A100-SXM4-80GB (UUID: {uuid})" in out
    assert "GPU 1:" not in out


def test_oom_on_a_shared_gpu_kills_the_neighbour_only(shared) -> None:
    node, rt = shared
    train = (
        "mockgpu-workload",
        "train",
        "--memory",
        "30GiB",
        "--retry-alloc",
        "1GiB",
        "--interval",
        "0.05",
        "--duration",
        "0",
        "--log-every",
        "1000",
    )
    gpus = {uid: run_pod(node.dm, rt, uid, *train) for uid in ("a", "b")}
    for uid in gpus:
        wait_log(rt, uid, "holds 30.00 GiB")
    # A third replica: NVIDIA's distributed policy spreads replicas, so it shares a GPU with a or b.
    uuid_c = run_pod(node.dm, rt, "c", "mockgpu-workload", "infer", "--kv-step", "10GiB", "--interval", "0.2")
    victim = next(uid for uid, g in gpus.items() if g == uuid_c)
    bystander = next(uid for uid, g in gpus.items() if g != uuid_c)
    c = rt.wait("c", "main", timeout=60)
    v = rt.wait(victim, "main", timeout=60)
    assert (c.exit_code, c.reason) == (1, "Error")
    assert "infer: step 5 KV cache 50.00 GiB; 0.00 GiB free of 80.00 GiB" in rt.logs("c", "main")
    assert (v.exit_code, v.reason) == (1, "Error")
    assert "RuntimeError: CUDA error: out of memory" in rt.logs(victim, "main")
    b = rt.status(bystander, "main")
    assert b.state == "running"
    b = rt.stop(bystander, "main", grace=10)
    assert b.exit_code == 143
    assert "received SIGTERM; releasing GPU memory" in rt.logs(bystander, "main")
