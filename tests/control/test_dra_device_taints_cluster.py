"""Device health through DRA device taints, end to end on the embedded backend (clusters/dra.yaml with kubelets,
scheduler and controllers): an Xid injected into a GPU's fake driver makes the DRA driver republish its
ResourceSlice with ``gpu.mockgpu.io/xid=79:NoExecute`` on that GPU (and its MIG devices); the device taint eviction
controller evicts the pod whose claim holds the GPU (DisruptionTarget, event), its replacement claim is allocated
another GPU, and a pod whose request tolerates the taint keeps running on it."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import polling
import pytest
import yaml
from kubernetes import client

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.gpu.driver import Driver

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "clusters" / "dra.yaml"
KEY = "gpu.mockgpu.io/xid"
GPU_0_OR_1 = 'device.attributes["gpu.mockgpu.io"].index in [0, 1]'
pytestmark = pytest.mark.timeout(240)
wait_for = functools.partial(polling.wait_for, timeout=60.0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    with EmbeddedCluster(SPEC, home=tmp_path_factory.mktemp("home"), kubelets=True, scheduler=True,
                         controllers=True, delete_on_exit=True) as c:
        rapi = client.ResourceV1Api(c.api_client())
        for doc in yaml.safe_load_all((ROOT / "clusters" / "dra" / "deviceclasses.yaml").read_text()):
            rapi.create_device_class(doc, _preload_content=False)
        yield c


def _claim_pod(core: Any, rapi: Any, name: str, tolerations: list[dict[str, Any]] | None = None) -> None:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.mockgpu.io", "selectors": [{"cel": {"expression": GPU_0_OR_1}}]}
    if tolerations:
        exactly["tolerations"] = tolerations
    rapi.create_namespaced_resource_claim("default", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}, _preload_content=False)
    core.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": "dra-0"}, "terminationGracePeriodSeconds": 1,
                 "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                 "containers": [{"name": "main", "image": "mockgpu/workload", "command": ["sleep", "300"],
                                 "resources": {"claims": [{"name": "gpu"}]}}]}})


def _device(rapi: Any, claim: str) -> str:
    c = json.loads(rapi.read_namespaced_resource_claim(claim, "default", _preload_content=False).data)
    results = (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return results[0]["device"] if results else ""


def _taints(rapi: Any, device: str) -> list[dict[str, Any]]:
    items = json.loads(rapi.list_resource_slice(field_selector="spec.nodeName=dra-0", _preload_content=False).data)
    return [t for s in items["items"] for d in s["spec"].get("devices") or [] if d["name"] == device
            for t in d.get("taints") or []]


def test_xid_taints_the_gpu_evicts_its_pod_and_spares_the_tolerating_one(cluster: EmbeddedCluster) -> None:
    api = cluster.api_client()
    core, rapi = client.CoreV1Api(api), client.ResourceV1Api(api)
    _claim_pod(core, rapi, "victim")
    wait_for(lambda: core.read_namespaced_pod("victim", "default").status.phase == "Running", what="victim Running")
    device = _device(rapi, "victim")
    _claim_pod(core, rapi, "tolerant", tolerations=[{"key": KEY, "operator": "Exists", "effect": "NoExecute"}])
    wait_for(lambda: core.read_namespaced_pod("tolerant", "default").status.phase == "Running",
             what="tolerant Running")
    other = _device(rapi, "tolerant")
    assert {device, other} == {"gpu-0", "gpu-1"}
    victim_uid = core.read_namespaced_pod("victim", "default").metadata.uid

    driver = Driver(cluster.control_plane.kubelets["dra-0"].driver_dir)
    driver.inject_xid(driver.inventory.gpus[0].uuid, 79)  # both GPUs the pods hold fall off the bus
    driver.inject_xid(driver.inventory.gpus[1].uuid, 79)
    for d in (device, other):
        (taint,) = wait_for(lambda d=d: _taints(rapi, d), what=f"a taint on {d}")
        assert (taint["key"], taint["value"], taint["effect"]) == (KEY, "79", "NoExecute") and taint["timeAdded"]
    assert _taints(rapi, "gpu-2") == []

    def evicted() -> Any:
        pod = core.list_namespaced_pod("default", field_selector="metadata.name=victim").items
        if not pod:
            return True  # gone already: its events tell the rest
        return pod[0].metadata.deletion_timestamp is not None and pod[0]

    seen = wait_for(evicted, what="the victim evicted")
    if seen is not True:
        cond = next(c for c in seen.status.conditions if c.type == "DisruptionTarget")
        assert (cond.reason, cond.message) == ("DeletionByDeviceTaintManager",
                                               "Device Taint manager: deleting due to NoExecute taint")
    events = [(e.reason, e.message, e.source.component) for e in core.list_namespaced_event(
        "default", field_selector=f"involvedObject.uid={victim_uid}").items]
    assert ("DeviceTaintManagerEviction", "Marking for deletion", "device-taint-eviction-controller") in events
    tolerant = core.read_namespaced_pod("tolerant", "default")
    assert tolerant.metadata.deletion_timestamp is None and tolerant.status.phase == "Running"

    # a new claim that may only use GPU 0 or 1 waits: both are tainted (and the tolerant pod holds one)
    wait_for(lambda: not core.list_namespaced_pod("default", field_selector="metadata.name=victim").items,
             what="the victim gone")
    rapi.delete_namespaced_resource_claim("victim", "default")
    _claim_pod(core, rapi, "again")
    cond = wait_for(lambda: next((c for c in core.read_namespaced_pod("again", "default").status.conditions or []
                                  if c.type == "PodScheduled" and c.status == "False"), None),
                    what="again unschedulable")
    assert "cannot allocate all claims" in cond.message
    driver.clear_xids()  # a GPU reset: the taints go and the pending pod gets the free GPU
    wait_for(lambda: not _taints(rapi, device) and not _taints(rapi, other), what="the taints removed")
    wait_for(lambda: _device(rapi, "again") == device, what="again allocated the reset GPU")
