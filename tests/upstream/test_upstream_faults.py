"""Injected faults on the real control plane (issue 21): mockgpu's kubelets and device plugin, the real
kube-apiserver v1.37.2 storing what they report. Xid 79 -> the device plugin's ListAndWatch says Unhealthy within
2 s -> the Node's allocatable drops by one -> the real API server accepts (validates and stores) our kubelet's
``allocatedResourcesStatus`` Unhealthy on the pod holding the GPU; clearing gives it back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polling
import pytest
from faults_scenario import GPU, NODE, SPEC, seconds_until_unhealthy
from kubernetes import client

from mockgpu.backends.common.state import node_root
from mockgpu.backends.upstream import UpstreamCluster
from mockgpu.control.kubelet.kubelet import plugin_dir_for

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def faults_upstream(upstream_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamCluster]:
    home = tmp_path_factory.mktemp("up-faults")
    spec = home / "faults.yaml"
    spec.write_text(SPEC)
    with UpstreamCluster(spec, home=home, delete_on_exit=True) as c:
        yield c


def _pod() -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "holder", "namespace": "default"},
            "spec": {"nodeName": NODE, "restartPolicy": "Never", "containers": [
                {"name": "main", "image": "mockgpu/workload", "command": ["sleep", "120"],
                 "resources": {"limits": {GPU: "1"}}}]}}


def _health(core: client.CoreV1Api) -> list[dict] | None:
    raw = json.loads(core.read_namespaced_pod("holder", "default", _preload_content=False).data)
    statuses = raw["status"].get("containerStatuses") or []
    return statuses[0].get("allocatedResourcesStatus") if statuses else None


def test_xid_79_through_the_real_api_server(faults_upstream: UpstreamCluster) -> None:
    c = faults_upstream
    core = client.CoreV1Api(c.api_client())

    def alloc() -> str | None:
        return core.read_node(NODE).status.allocatable.get(GPU)
    assert polling.wait_for(lambda: alloc() == "2", timeout=60, what="allocatable 2")
    core.create_namespaced_pod("default", _pod())
    (entry,) = polling.wait_for(lambda: _health(core), timeout=60, what="allocatedResourcesStatus")
    assert entry["name"] == GPU and [r["health"] for r in entry["resources"]] == ["Healthy"]
    held = entry["resources"][0]["resourceID"]

    plugin_dir = plugin_dir_for(node_root(c.state, NODE))
    elapsed = seconds_until_unhealthy(plugin_dir, held, lambda: c.inject_fault(NODE, held, 79))
    assert elapsed < 2.0, f"ListAndWatch reported it after {elapsed:.2f} s"
    polling.wait_for(lambda: alloc() == "1", timeout=30, what="allocatable 1")
    assert core.read_node(NODE).status.capacity[GPU] == "2"
    unhealthy = [{"name": GPU, "resources": [{"resourceID": held, "health": "Unhealthy"}]}]
    polling.wait_for(lambda: _health(core) == unhealthy, timeout=30, what="Unhealthy on the pod, in the real API")

    assert c.clear_faults() == 1
    polling.wait_for(lambda: alloc() == "2", timeout=30, what="allocatable 2 again")
    healthy = [{"name": GPU, "resources": [{"resourceID": held, "health": "Healthy"}]}]
    polling.wait_for(lambda: _health(core) == healthy, timeout=30, what="Healthy again")
    core.delete_namespaced_pod("holder", "default", grace_period_seconds=0)
