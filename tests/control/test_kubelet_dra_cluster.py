"""The DRA driver in an embedded cluster (clusters/dra.yaml, kubelets, no scheduler): the kubelet runs the driver
only where the pool asks for DRA, the driver publishes the node's ResourceSlices through the real API server
(validated there), the DeviceClasses apply, and a bound pod waits until its claim is allocated and reserved, then
gets the claim's device through a CDI spec, which is removed again when the pod goes.

Needs the embedded API server's ``resource.k8s.io/v1`` (skipped, saying so, on a server without it)."""

from __future__ import annotations

import functools
import json
import signal
from pathlib import Path

import polling
import pytest
import yaml
from kubernetes import client

from mockgpu.backends.common.state import node_root
from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.config import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.control.kubelet.kubelet import KubeletOptions, dra_dir_for
from mockgpu.control.kubelet.pluginproc import BackOff
from mockgpu.dra.slices import device_uuids

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "clusters" / "dra.yaml"
UUIDS = device_uuids(node_inventory(load_spec(SPEC), "dra-0"))
pytestmark = pytest.mark.timeout(180)
wait_for = functools.partial(polling.wait_for, timeout=30.0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("home")
    with EmbeddedCluster(SPEC, home=home, kubelets=True, scheduler=False, delete_on_exit=True,
                         kubelet_options=KubeletOptions(plugin_backoff=BackOff(initial=1.0))) as c:
        groups = {g.name for g in client.ApisApi(c.api_client()).get_api_versions().groups}
        if "resource.k8s.io" not in groups:
            pytest.skip("this API server has no resource.k8s.io/v1 (built on branch dra-api)")
        yield c


@pytest.fixture(scope="module")
def api(cluster: EmbeddedCluster) -> client.ApiClient:
    return cluster.api_client()


def slices(api: client.ApiClient, node: str) -> list[dict]:
    resp = client.ResourceV1Api(api).list_resource_slice(field_selector=f"spec.nodeName={node}",
                                                         _preload_content=False)
    return json.loads(resp.data)["items"]


def test_device_plugin_only_where_it_has_gpus(api: client.ApiClient) -> None:
    nodes = {n.metadata.name: n for n in client.CoreV1Api(api).list_node().items}
    assert nodes["both-0"].status.allocatable.get("nvidia.com/gpu") == "2"
    assert "nvidia.com/gpu" not in (nodes["dra-0"].status.allocatable or {})


# (node, slices, devices, counter sets)
POOLS = [("dra-0", 3, 4 * 19, 4), ("both-0", 2, 2 * 19, 2)]


@pytest.mark.parametrize(("node", "count", "devices", "sets"), POOLS, ids=[p[0] for p in POOLS])
def test_slices_published(api: client.ApiClient, node: str, count: int, devices: int, sets: int) -> None:
    got = wait_for(lambda: (s := slices(api, node)) and len(s) == count and s, what=f"{count} slices of {node}")
    uid = client.CoreV1Api(api).read_node(node).metadata.uid
    assert sum(len(s["spec"].get("devices") or []) for s in got) == devices
    assert sum(len(s["spec"].get("sharedCounters") or []) for s in got) == sets
    for s in got:
        assert s["spec"]["driver"] == "gpu.mockgpu.io" and s["spec"]["pool"]["name"] == node
        assert s["spec"]["pool"]["resourceSliceCount"] == count
        assert [(o["kind"], o["uid"]) for o in s["metadata"]["ownerReferences"]] == [("Node", uid)]


def test_device_classes_apply(api: client.ApiClient) -> None:
    rapi = client.ResourceV1Api(api)
    for doc in yaml.safe_load_all((ROOT / "clusters" / "dra" / "deviceclasses.yaml").read_text()):
        rapi.create_device_class(doc, _preload_content=False)
    names = {d["metadata"]["name"] for d in json.loads(rapi.list_device_class(_preload_content=False).data)["items"]}
    assert {"gpu.mockgpu.io", "mig.gpu.mockgpu.io"} <= names


def _events(core: client.CoreV1Api, pod: str) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={pod}").items]


def test_pod_waits_for_its_claim_then_gets_its_device(cluster: EmbeddedCluster, api: client.ApiClient) -> None:
    core, rapi = client.CoreV1Api(api), client.ResourceV1Api(api)
    rapi.create_namespaced_resource_claim("default", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "one-mig"},
        "spec": {"devices": {"requests": [{"name": "mig", "exactly": {"deviceClassName": "mig.gpu.mockgpu.io"}}]}}},
        _preload_content=False)
    pod = core.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mig-user"},
        "spec": {"nodeName": "dra-0", "restartPolicy": "Always",
                 "resourceClaims": [{"name": "mig", "resourceClaimName": "one-mig"}],
                 "containers": [{"name": "main", "image": "mockgpu/workload",
                                 "command": ["sh", "-c", "mockgpu-workload inspect; sleep 300"],
                                 "resources": {"claims": [{"name": "mig"}]}}]}})
    wait_for(lambda: any(r == "FailedPrepareDynamicResources" for r, _ in _events(core, "mig-user")),
             what="FailedPrepareDynamicResources")
    (msg,) = {m for r, m in _events(core, "mig-user") if r == "FailedPrepareDynamicResources"}
    assert msg.startswith("Failed to prepare dynamic resources: prepare dynamic resources: pod mig-user")
    claim = json.loads(rapi.read_namespaced_resource_claim("one-mig", "default", _preload_content=False).data)
    claim["status"] = {
        "allocation": {"devices": {"results": [{"request": "mig", "driver": "gpu.mockgpu.io", "pool": "dra-0",
                                                "device": "gpu-1-mig-3g40gb-4"}]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": ["dra-0"]}]}]}},
        "reservedFor": [{"resource": "pods", "name": "mig-user", "uid": pod.metadata.uid}]}
    rapi.replace_namespaced_resource_claim_status("one-mig", "default", claim, _preload_content=False)
    cdi = dra_dir_for(node_root(cluster.state, "dra-0")) / "cdi" / f"gpu.mockgpu.io-gpu_{claim['metadata']['uid']}.json"
    spec = json.loads(wait_for(lambda: cdi.exists() and cdi.read_text(), what="the claim's CDI spec"))
    assert spec["devices"][0]["containerEdits"]["env"] == [f"NVIDIA_VISIBLE_DEVICES={UUIDS['gpu-1-mig-3g40gb-4']}"]
    state = wait_for(lambda: [a for a in json.loads(core.read_namespaced_config_map(
        "gpu-state-dra-0", "mockgpu-system").data["state.json"]).get("allocations") or []
        if a["pod"] == "mig-user"], what="the claim in the node's GPU state")
    assert [(a["resource"], a["deviceIds"], a["uuids"]) for a in state] == [
        ("resourceclaims/one-mig", ["gpu-1-mig-3g40gb-4"], [UUIDS["gpu-1-mig-3g40gb-4"]])]
    # the workload sees its MIG device: the CDI env names it, and the fake driver made the instance on prepare
    # `inspect` flushes line by line: wait for its last section (nvidia-smi's output), not its first line
    log = wait_for(lambda: (t := core.read_namespaced_pod_log("mig-user", "default")).partition("$ nvidia-smi -L\n")[2]
                   and t, what="the workload's whole output")
    uuid = UUIDS["gpu-1-mig-3g40gb-4"]
    assert f"NVIDIA_VISIBLE_DEVICES={uuid}" in log and "CUDA devices: 1" in log
    assert f"NVIDIA A100-SXM4-80GB MIG 3g.40gb  {uuid}" in log
    core.delete_namespaced_pod("mig-user", "default", grace_period_seconds=0)
    wait_for(lambda: not cdi.exists(), what="the CDI spec removed with the pod")


def test_killed_driver_is_restarted_and_registers_again(cluster: EmbeddedCluster, api: client.ApiClient) -> None:
    k = cluster.control_plane.kubelets["dra-0"]
    before = {p: r.key for p, r in k.plugin_watcher.plugins.items()}
    old_pid = k.dra_driver.pid
    k.dra_driver.kill(signal.SIGKILL)
    # started again after the back-off, its new registration socket is registered again by the plugin watcher
    wait_for(lambda: k.dra_driver.restarts == 1 and k.dra_driver.alive(), what="the driver restarted")
    wait_for(lambda: (now := {p: r.key for p, r in k.plugin_watcher.plugins.items() if r.ok}).keys() == before.keys()
             and now != before, what="the driver registered again")
    assert k.dra_driver.pid != old_pid and k.dra.registered() == ["gpu.mockgpu.io"]
    assert len(slices(api, "dra-0")) > 0
