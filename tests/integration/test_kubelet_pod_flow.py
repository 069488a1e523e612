"""Step 3-4 of the pod flow without the API server: the real device plugin allocates, the process
runtime starts ``mockgpu-workload`` with the returned envs and mounts, and the workloads share (or
do not share) a time-sliced GPU's memory through the fake driver."""

from __future__ import annotations

import time

import pytest
from kubelet_harness import GPU, Node, requires_device_plugin

from mockgpu.control.kubelet.devicemanager import DeviceManager
from mockgpu.control.kubelet.podworker import PodWorker
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
        "0.5",
        "--duration",
        "0",
        "--log-every",
        "1000",
    )
    gpus = {uid: run_pod(node.dm, rt, uid, *train) for uid in ("a", "b")}
    for uid in gpus:
        wait_log(rt, uid, "holds 30.00 GiB")
    # A third replica: NVIDIA's distributed policy spreads replicas, so it shares a GPU with a or b.
    # The third fills its GPU and holds it (an inference server at its cache limit), so the neighbour's
    # next step meets a full GPU whenever it runs: ordered, not a race against a short window. Steps
    # every 0.5 s keep the neighbour's step buffer (1 GiB, held for one ledger write) out of the way
    # of the fill all but a fraction of a percent of the time.
    uuid_c = run_pod(
        node.dm, rt, "c", "mockgpu-workload", "infer", "--kv-step", "50GiB", "--max-steps", "1", "--interval", "600"
    )
    victim = next(uid for uid, g in gpus.items() if g == uuid_c)
    bystander = next(uid for uid, g in gpus.items() if g != uuid_c)
    wait_log(rt, "c", "infer: step 1 KV cache 50.00 GiB; 0.00 GiB free of 80.00 GiB")
    v = rt.wait(victim, "main", timeout=60)
    assert (v.exit_code, v.reason) == (1, "Error")
    assert "RuntimeError: CUDA error: out of memory" in rt.logs(victim, "main")
    assert rt.status("c", "main").state == "running"
    b = rt.status(bystander, "main")
    assert b.state == "running"
    b = rt.stop(bystander, "main", grace=10)
    assert b.exit_code == 143
    assert "received SIGTERM; releasing GPU memory" in rt.logs(bystander, "main")


def gpu_pod(uid: str, n: int, *command: str) -> dict:
    return {
        "metadata": {"name": f"pod-{uid}", "namespace": "default", "uid": uid},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "mockgpu/workload",
                    "command": list(command),
                    "resources": {"limits": {GPU: str(n)}},
                }
            ],
        },
    }


def test_pod_worker_runs_a_gpu_pod_end_to_end(shared) -> None:
    node, rt = shared
    statuses: list[dict] = []
    w = PodWorker(
        gpu_pod("a", 2, "mockgpu-workload", "inspect"),
        node_name="shared-0",
        runtime=rt,
        devices=node.dm,
        on_status=statuses.append,
    )
    w.start()
    try:
        st = w.wait(lambda s: s["phase"] in ("Succeeded", "Failed"), timeout=60)
        assert st["phase"] == "Succeeded", (st, rt.logs("a", "main"))
        held = node.dm.pod_devices()[("a", "main")][GPU]
        uuids = sorted({d.partition("::")[0] for d in held})
        out = rt.logs("a", "main")
        assert f"CUDA devices: {len(uuids)}" in out
        for u in uuids:
            assert u in out
        assert statuses[-1]["phase"] == "Succeeded"
    finally:
        w.terminate(grace=1)
    assert ("a", "main") not in node.dm.pod_devices()


def test_pod_worker_reports_unexpected_admission_error(shared) -> None:
    node, rt = shared
    w = PodWorker(gpu_pod("big", 9, "true"), node_name="shared-0", runtime=rt, devices=node.dm)
    w.start()
    try:
        st = w.wait(lambda s: s["phase"] == "Failed", timeout=30)
    finally:
        w.terminate(grace=0)
    assert st["reason"] == "UnexpectedAdmissionError"
    assert st["message"] == (
        "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 9, "
        "Available: 8, which is unexpected"
    )
