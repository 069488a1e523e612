"""End to end on a real kind cluster: the workshop spec, the real kubelets' device managers, real containers.

Needs a Docker engine, kind and kubectl (skipped elsewhere, saying which). kind comes from ``PATH`` or from
the upstream build (``scripts/upstream-build``); where no registry can be reached, the node image and the
mockgpu image's Python base are the ones ``scripts/kind-images`` builds (``$MOCKGPU_KIND_NODE_IMAGE``,
``$MOCKGPU_PYTHON_BASE``; taken automatically when those local images exist). One cluster for the module:
creating it takes minutes.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mockgpu.backends.kind.config import kind_node_names
from mockgpu.config.inventory import node_inventory
from mockgpu.deviceplugin.api import api_pb2 as pb

from .kind_live import kubectl, live_cluster, wait_for

pytestmark = pytest.mark.kind

NAME = "mockgpu-e2e"


@pytest.fixture(scope="module")
def kind_cluster(tmp_path_factory) -> Iterator[dict[str, Any]]:
    yield from live_cluster(NAME, "workshop.yaml", tmp_path_factory.mktemp("kind"), "kind end-to-end")


def workload_pod(name: str, node: str, resource: str, count: int, *args: str) -> dict[str, Any]:
    """A pod running ``mockgpu-workload`` in the mockgpu image (loaded into the nodes by ``up``)."""
    from mockgpu.backends.common.images import mockgpu_image

    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"mockgpu.io/e2e": "true"}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"mockgpu.io/node": node},
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main", "image": mockgpu_image(), "imagePullPolicy": "Never",
                "command": ["mockgpu-workload", *args],
                "resources": {"limits": {resource: str(count)}},
            }],
        },
    }


def create(c: dict[str, Any], *pods: dict[str, Any]) -> None:
    kubectl(c, "apply", "-f", "-", input="\n---\n".join(json.dumps(p) for p in pods))


def pod(c: dict[str, Any], name: str) -> dict[str, Any]:
    return json.loads(kubectl(c, "get", "pod", name, "-o", "json"))


def logs(c: dict[str, Any], name: str) -> str:
    return kubectl(c, "logs", name, check=False)


def phase_is(c: dict[str, Any], name: str, *phases: str) -> Callable[[], bool]:
    return lambda: pod(c, name)["status"].get("phase") in phases


def log_has(c: dict[str, Any], name: str, text: str) -> Callable[[], bool]:
    return lambda: text in logs(c, name)


def kind_node_of(c: dict[str, Any], spec_node: str) -> str:
    """The kind node *container* of a spec node (the Node itself bears the spec node's name)."""
    assert kubectl(c, "get", "node", spec_node, "-o", "name").strip() == f"node/{spec_node}"
    (container,) = [k for k, v in kind_node_names(c["spec"], NAME).items() if v == spec_node]
    return container


@pytest.fixture
def clean(kind_cluster) -> Iterator[dict[str, Any]]:
    yield kind_cluster
    kubectl(kind_cluster, "delete", "pods", "-l", "mockgpu.io/e2e=true", "--wait=true", "--timeout=120s", check=False)


def test_every_node_advertises_its_whole_mig_and_time_sliced_resources(kind_cluster) -> None:
    want = {"whole-0": {"nvidia.com/gpu": 4},
            "shared-0": {"nvidia.com/gpu": 8},  # 2 GPUs x 4 replicas
            "mig-0": {"nvidia.com/mig-1g.10gb": 8, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1}}

    def advertised() -> dict[str, dict[str, int]]:
        nodes = json.loads(kubectl(kind_cluster, "get", "nodes", "-o", "json"))["items"]
        # keyed by the Node's name: the Nodes are the spec's, nothing else (no separate control-plane node)
        return {n["metadata"]["name"]: {k: int(v) for k, v in n["status"]["allocatable"].items()
                                        if k.startswith("nvidia.com/")} for n in nodes}

    # `up` returns once every GPU node shows some GPUs; a plugin registers its resources one by one
    got: dict[str, Any] = {}
    try:
        wait_for("every resource in allocatable", lambda: got.update(advertised()) or got == want, timeout=60)
    finally:
        assert got == want


def _checkpoint(node: str) -> dict[str, Any]:
    """The kubelet's device manager checkpoint in a kind node: which devices it gave each container."""
    out = subprocess.run(["docker", "exec", node, "cat", "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return json.loads(out)["Data"]


def test_visible_devices_in_a_real_container_are_the_ones_allocate_returned(clean) -> None:
    c = clean
    create(c, workload_pod("inspect2", "whole-0", "nvidia.com/gpu", 2, "inspect"))
    wait_for("inspect2 Succeeded", phase_is(c, "inspect2", "Succeeded", "Failed"))
    out = logs(c, "inspect2")
    assert pod(c, "inspect2")["status"]["phase"] == "Succeeded", out
    uid = pod(c, "inspect2")["metadata"]["uid"]
    (entry,) = [e for e in _checkpoint(kind_node_of(c, "whole-0"))["PodDeviceEntries"] if e["PodUID"] == uid]
    response = pb.ContainerAllocateResponse.FromString(base64.b64decode(entry["AllocResp"]))
    given = response.envs["NVIDIA_VISIBLE_DEVICES"].split(",")
    # DeviceIDs are keyed by NUMA node ("-1": none); whole GPUs' device IDs are their UUIDs
    assert sorted(given) == sorted(d for ids in entry["DeviceIDs"].values() for d in ids)
    assert f"NVIDIA_VISIBLE_DEVICES={response.envs['NVIDIA_VISIBLE_DEVICES']}" in out.splitlines()
    inventory = {g.uuid: g for g in node_inventory(c["spec"], "whole-0").gpus}
    assert set(given) <= set(inventory) and len(given) == 2
    smi = [ln for ln in out.splitlines() if ln.startswith("GPU ")]
    assert len(smi) == 2 and all(any(u in ln for u in given) for ln in smi), out
    assert "CUDA devices: 2" in out


def test_time_slicing_oom_kills_the_neighbour_and_mig_does_not(clean) -> None:
    c = clean
    hold = ("--interval", "0.2", "--duration", "0", "--log-every", "1000")
    # lab 07's order: a big pod on GPU 0, one inference replica per GPU; the second lands next to big
    create(c, workload_pod("big", "shared-0", "nvidia.com/gpu", 1, "train", "--memory", "59GiB", *hold))
    wait_for("big holds its memory", log_has(c, "big", "holds 59.00 GiB"))
    serve = ("train", "--memory", "20GiB", "--retry-alloc", "2GiB", *hold)
    create(c, workload_pod("serve-a", "shared-0", "nvidia.com/gpu", 1, *serve))
    wait_for("serve-a holds its memory", log_has(c, "serve-a", "holds 20.00 GiB"))
    create(c, workload_pod("serve-b", "shared-0", "nvidia.com/gpu", 1, *serve))
    wait_for("serve-b Failed", phase_is(c, "serve-b", "Failed"))
    assert "CUDA error: out of memory" in logs(c, "serve-b")
    assert logs(c, "serve-b").split("(")[1].split(")")[0] == logs(c, "big").split("(")[1].split(")")[0]
    assert pod(c, "big")["status"]["phase"] == "Running"
    assert pod(c, "serve-a")["status"]["phase"] == "Running"
    # MIG: the greedy pod exhausts its own instance only
    create(c, workload_pod("mig-train", "mig-0", "nvidia.com/mig-1g.10gb", 1, "train", "--memory", "5GiB",
                           "--retry-alloc", "1GiB", *hold))
    wait_for("mig-train holds its memory", log_has(c, "mig-train", "holds 5.00 GiB"))
    create(c, workload_pod("mig-greedy", "mig-0", "nvidia.com/mig-1g.10gb", 1, "infer", "--kv-step", "1GiB",
                           "--interval", "0.05"))
    wait_for("mig-greedy Failed", phase_is(c, "mig-greedy", "Failed"))
    assert "CUDA error: out of memory" in logs(c, "mig-greedy")
    time.sleep(2)  # several of mig-train's steps after its neighbour's OOM
    assert pod(c, "mig-train")["status"]["phase"] == "Running"


def test_the_daemonset_serves_dcgm_metrics_with_the_pod_holding_a_gpu(clean) -> None:
    """The publisher container's /metrics (port 9400 of its pod IP), read through the API server's pod proxy as an
    in-cluster scraper would reach it, names the pod holding the GPU; Service mockgpu-dcgm-exporter selects every
    GPU node's DaemonSet pod."""
    c = clean
    create(c, workload_pod("metered", "whole-0", "nvidia.com/gpu", 1, "train", "--memory", "3GiB",
                           "--interval", "0.2", "--duration", "0", "--log-every", "1000"))
    wait_for("metered holds its memory", log_has(c, "metered", "holds 3.00 GiB"))
    (ds_pod,) = json.loads(kubectl(c, "get", "pods", "-n", "mockgpu-system", "-l",
                                   "app.kubernetes.io/name=mockgpu-device-plugin", "--field-selector",
                                   "spec.nodeName=whole-0", "-o", "json"))["items"]
    path = f"/api/v1/namespaces/mockgpu-system/pods/{ds_pod['metadata']['name']}:9400/proxy/metrics"

    def row() -> str | None:
        text = kubectl(c, "get", "--raw", path, check=False)
        return next((ln for ln in text.splitlines()
                     if ln.startswith("DCGM_FI_DEV_FB_USED{") and 'pod="metered"' in ln), None)

    line = wait_for("metered's DCGM_FI_DEV_FB_USED through the pod proxy", row, timeout=60)
    assert line.endswith(" 3072.0") and 'namespace="default"' in line and 'Hostname="whole-0"' in line, line
    slices = json.loads(kubectl(c, "get", "endpointslices", "-n", "mockgpu-system", "-l",
                                "kubernetes.io/service-name=mockgpu-dcgm-exporter", "-o", "json"))["items"]
    ready = [e for s in slices for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready")]
    assert sorted(e["nodeName"] for e in ready) == ["mig-0", "shared-0", "whole-0"]
