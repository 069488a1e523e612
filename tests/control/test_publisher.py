"""The GPU-state document, its DCGM metrics, the OOM log, the publisher's write policy and the standalone
command's inputs (kubelet checkpoint + node labels)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from mockgpu.config import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.control.kubelet.publish_command import ClusterInputs
from mockgpu.control.kubelet.publisher import GpuStatePublisher
from mockgpu.gpu.cuda import CudaError, CudaRuntime
from mockgpu.gpu.dcgm import metrics_text
from mockgpu.gpu.driver import ENV_DRIVER_DIR, Driver, write_node_driver
from mockgpu.gpu.oomlog import read_ooms
from mockgpu.gpu.state import DeviceAllocation, StateInputs, device_uuid, gpu_state

ROOT = Path(__file__).resolve().parents[2]
SPEC = load_spec(ROOT / "clusters" / "workshop.yaml")
GIB = 1 << 30


def driver_of(tmp_path: Path, node: str) -> Driver:
    write_node_driver(tmp_path / node, node_inventory(SPEC, node))
    return Driver(tmp_path / node)


def cuda_as(driver: Driver, pod: str, visible: str) -> CudaRuntime:
    return CudaRuntime({ENV_DRIVER_DIR: str(driver.dir), "NVIDIA_VISIBLE_DEVICES": visible,
                        "MOCKGPU_POD_NAMESPACE": "ns", "MOCKGPU_POD_NAME": pod, "MOCKGPU_CONTAINER_NAME": "c"})


def test_document_shape_with_a_process_and_an_oom(tmp_path: Path) -> None:
    drv = driver_of(tmp_path, "shared-0")
    g0 = drv.inventory.gpus[0].uuid
    a = cuda_as(drv, "greedy", g0)
    b = cuda_as(drv, "victim", g0)
    a.malloc(0, 70 * GIB)
    a.report_utilization(0, 55)
    with pytest.raises(CudaError, match="out of memory"):
        b.malloc(0, 20 * GIB)
    alloc = DeviceAllocation("ns", "greedy", "c", "nvidia.com/gpu", (f"{g0}::1",), (g0,))
    doc = gpu_state(drv, StateInputs((alloc,), {g0: 4}))
    assert set(doc) == {"node", "cluster", "time", "gpus", "processes", "allocations", "oomEvents"}
    gpu = doc["gpus"][0]
    assert (gpu["uuid"], gpu["memoryUsedMiB"], gpu["utilization"], gpu["replicas"]) == (g0, 70 * 1024, 55, 4)
    assert doc["gpus"][1]["replicas"] == 1 and gpu["mig"] == [] and gpu["healthy"] is True
    procs = {p["pod"]: p for p in doc["processes"]}
    assert procs["greedy"]["usedMiB"] == 70 * 1024 and procs["greedy"]["gpuIndex"] == 0
    (oom,) = doc["oomEvents"]
    assert (oom["pod"], oom["device"], oom["gpuIndex"], oom["requestedMiB"]) == ("victim", g0, 0, 20 * 1024)
    assert oom["freeMiB"] == (81920 - 70 * 1024) and oom["time"].endswith("Z")
    assert doc["allocations"] == [alloc.to_json()]
    text = metrics_text(doc)
    used = [ln for ln in text.splitlines() if ln.startswith("DCGM_FI_DEV_FB_USED{")]
    assert len(used) == 2
    bus = drv.inventory.gpus[0].pci_bus_id  # prometheus_client writes labels sorted by name
    assert used[0] == (f'DCGM_FI_DEV_FB_USED{{Hostname="shared-0",UUID="{g0}",container="c",device="nvidia0",gpu="0",'
                       f'modelName="NVIDIA A100-SXM4-80GB",namespace="ns",pci_bus_id="{bus}",pod="greedy"}} '
                       f'{70 * 1024}.0')
    assert 'pod="' not in used[1]
    assert "# TYPE DCGM_FI_DEV_GPU_UTIL gauge" in text and "# HELP DCGM_FI_DEV_FB_FREE" in text


def test_mig_gpus_report_their_instances(tmp_path: Path) -> None:
    drv = driver_of(tmp_path, "mig-0")
    doc = gpu_state(drv)
    g1 = doc["gpus"][1]
    assert g1["utilization"] is None and g1["replicas"] == 1
    assert sorted(m["profile"] for m in g1["mig"]) == ["1g.10gb", "2g.20gb", "3g.40gb"]
    m = g1["mig"][0]
    assert set(m) == {"uuid", "profile", "migIndex", "gpuInstanceId", "start", "size", "memoryTotalMiB",
                      "memoryUsedMiB", "utilization", "healthy", "xids"}
    rows = [ln for ln in metrics_text(doc).splitlines() if ln.startswith("DCGM_FI_DEV_FB_USED{")]
    assert len(rows) == 10 and all("GPU_I_PROFILE=" in r for r in rows)
    assert not any(ln.startswith("DCGM_FI_DEV_GPU_UTIL{") for ln in metrics_text(doc).splitlines())


@pytest.mark.parametrize(("device_id", "want"), [
    ("GPU-x::3", "GPU-x"), ("0", "gpu0"), ("1:2", "mig1.2"), ("MIG-y", "MIG-y"),
], ids=["replica", "index", "mig-index", "mig-uuid"])
def test_device_uuid(tmp_path: Path, device_id: str, want: str) -> None:
    inv = node_inventory(SPEC, "mig-0")
    expect = {"gpu0": inv.gpus[0].uuid, "mig1.2": next(m.uuid for m in inv.gpus[1].mig if m.mig_index == 2)}
    assert device_uuid(inv, device_id) == expect.get(want, want)


class FakeCore:
    def __init__(self) -> None:
        self.writes: list[dict] = []

    def replace_namespaced_config_map(self, name: str, ns: str, body: dict) -> None:
        self.writes.append(body)


def test_publisher_writes_only_on_change(tmp_path: Path) -> None:
    drv = driver_of(tmp_path, "whole-0")
    core = FakeCore()
    pub = GpuStatePublisher(core, "whole-0", drv.dir)
    assert pub.publish_once() is True
    assert pub.publish_once() is False  # nothing changed
    cuda_as(drv, "p", drv.inventory.gpus[2].uuid).malloc(0, GIB)
    assert pub.publish_once() is True
    body = core.writes[-1]
    assert body["metadata"] == {"name": "gpu-state-whole-0", "namespace": "mockgpu-system",
                                "labels": {"mockgpu.io/gpu-state": "true", "mockgpu.io/node": "whole-0"}}
    assert json.loads(body["data"]["state.json"])["gpus"][2]["memoryUsedMiB"] == 1024
    assert len(core.writes) == 2


def test_oom_log_skips_torn_lines(tmp_path: Path) -> None:
    (tmp_path / "oom.log").write_text('{"device": "GPU-a", "time": 1}\n{"dev\nnot json\n')
    assert read_ooms(tmp_path) == [{"device": "GPU-a", "time": 1}]


def test_cluster_inputs_from_a_kubelet_checkpoint(tmp_path: Path) -> None:
    drv = driver_of(tmp_path, "shared-0")
    g1 = drv.inventory.gpus[1].uuid
    ckpt = tmp_path / "kubelet_internal_checkpoint"
    ckpt.write_text(json.dumps({"Data": {"PodDeviceEntries": [
        {"PodUID": "u1", "ContainerName": "main", "ResourceName": "nvidia.com/gpu",
         "DeviceIDs": {"-1": [f"{g1}::2"]}, "AllocResp": ""},
        {"PodUID": "gone", "ContainerName": "main", "ResourceName": "nvidia.com/gpu",
         "DeviceIDs": {"-1": [f"{g1}::3"]}, "AllocResp": ""}],
        "RegisteredDevices": {}}, "Checksum": 1}))
    pod = SimpleNamespace(metadata=SimpleNamespace(uid="u1", namespace="default", name="job"),
                          status=SimpleNamespace(phase="Running"))
    node = SimpleNamespace(metadata=SimpleNamespace(labels={"nvidia.com/gpu.replicas": "4"}))
    core = SimpleNamespace(list_pod_for_all_namespaces=lambda field_selector: SimpleNamespace(items=[pod]),
                           read_node=lambda name: node)
    inputs = ClusterInputs(core, "kind-worker", ckpt, drv.dir)()
    assert inputs.allocations == (DeviceAllocation("default", "job", "main", "nvidia.com/gpu", (f"{g1}::2",), (g1,)),)
    assert set(inputs.replicas.values()) == {4}


# --- DRA on a real kubelet (kind): the devices of prepared claims, as the embedded kubelet lists them ----------
def _dra_pod(claims=(("gpu", "one-40g", None),), containers=(("main", (("gpu", ""),)),), generated=()):
    """claims: (entry, resourceClaimName or None, template); containers: (name, ((entry, request), ...))."""
    return {"metadata": {"namespace": "default", "name": "p", "uid": "pod-1"},
            "spec": {"resourceClaims": [{"name": e, **({"resourceClaimName": n} if n else
                                                       {"resourceClaimTemplateName": t})} for e, n, t in claims],
                     "containers": [{"name": c, "resources": {"claims": [
                         {"name": e, **({"request": r} if r else {})} for e, r in refs]}} for c, refs in containers]},
            "status": {"resourceClaimStatuses": [{"name": e, "resourceClaimName": n} for e, n in generated]}}


def _dra_claim(name, uid, results, pool="dra-0"):
    return {"metadata": {"name": name, "uid": uid}, "status": {"allocation": {"devices": {"results": [
        {"request": r, "driver": "gpu.mockgpu.io", "pool": pool, "device": d} for r, d in results]}}}}


UUIDS = {"gpu-0": "GPU-0", "gpu-1": "GPU-1", "gpu-3-mig-1g10gb-0": "MIG-3"}


@pytest.mark.parametrize(("pod", "claims", "prepared", "want"), [
    (_dra_pod(), {"one-40g": _dra_claim("one-40g", "u1", [("gpu", "gpu-0")])}, {"u1"},
     [("main", "resourceclaims/one-40g", ("gpu-0",), ("GPU-0",))]),
    (_dra_pod(), {"one-40g": _dra_claim("one-40g", "u1", [("gpu", "gpu-0")])}, set(), []),  # not prepared (yet)
    (_dra_pod(), {"one-40g": _dra_claim("one-40g", "u1", [("gpu", "gpu-0")], pool="both-0")}, {"u1"}, []),
    (_dra_pod(claims=(("mig", None, "t"),), containers=(("main", (("mig", ""),)),), generated=(("mig", "p-mig-x"),)),
     {"p-mig-x": _dra_claim("p-mig-x", "u2", [("mig", "gpu-3-mig-1g10gb-0")])}, {"u2"},
     [("main", "resourceclaims/p-mig-x", ("gpu-3-mig-1g10gb-0",), ("MIG-3",))]),
    (_dra_pod(containers=(("a", (("gpu", "x"),)), ("b", (("gpu", "y"),)), ("c", ()))),
     {"one-40g": _dra_claim("one-40g", "u1", [("x", "gpu-0"), ("y", "gpu-1")])}, {"u1"},
     [("a", "resourceclaims/one-40g", ("gpu-0",), ("GPU-0",)),
      ("b", "resourceclaims/one-40g", ("gpu-1",), ("GPU-1",))]),
], ids=["prepared", "unprepared", "other-node", "template", "per-request"])
def test_claim_allocations_are_the_prepared_devices_per_container(pod, claims, prepared, want):
    from mockgpu.control.kubelet.publish_command import claim_allocations

    got = claim_allocations(pod, claims, prepared, "dra-0", UUIDS)
    assert [(a.container, a.resource, a.device_ids, a.uuids) for a in got] == want
    assert all((a.namespace, a.pod) == ("default", "p") for a in got)


def test_prepared_claims_are_the_uids_of_the_drivers_cdi_specs(tmp_path):
    from mockgpu.control.kubelet.publish_command import prepared_claims
    from mockgpu.dra.prepare import CDIDir

    CDIDir(tmp_path).write("2f9c-uid", {"cdiVersion": "0.6.0"})
    (tmp_path / "other-vendor.json").write_text("{}")
    (tmp_path / "gpu.mockgpu.io-gpu_half.json.tmp").write_text("")
    assert prepared_claims(tmp_path) == {"2f9c-uid"}
