"""The fake kubelets against a real in-process EmbeddedCluster (workshop spec, no scheduler: pods are
created with spec.nodeName set, as a bound pod)."""

from __future__ import annotations

import functools
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polling
import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.config import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.deviceplugin.resources import strip_replica

ROOT = Path(__file__).resolve().parents[2]
WORKSHOP = ROOT / "clusters" / "workshop.yaml"
SPEC = load_spec(WORKSHOP)
pytestmark = pytest.mark.timeout(120)


wait_for = functools.partial(polling.wait_for, timeout=15.0)


def pod(name: str, node: str, command: list[str], *, gpus: int = 0, resource: str = "nvidia.com/gpu",
        policy: str = "Never", grace: int | None = None) -> dict:
    c: dict = {"name": "main", "image": "mockgpu/workload", "command": command}
    if gpus:
        c["resources"] = {"limits": {resource: str(gpus)}}
    spec: dict = {"nodeName": node, "restartPolicy": policy, "containers": [c]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("home")
    with EmbeddedCluster(WORKSHOP, home=home, kubelets=True, delete_on_exit=True) as c:
        yield c


@pytest.fixture(scope="module")
def core(cluster: EmbeddedCluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api_client())


def phase(core: client.CoreV1Api, name: str) -> str | None:
    try:
        return core.read_namespaced_pod(name, "default").status.phase
    except ApiException as exc:
        if exc.status == 404:
            return "<deleted>"
        raise


def gone(core: client.CoreV1Api, name: str) -> bool:
    return phase(core, name) == "<deleted>"


EXPECTED_ALLOCATABLE = {
    "whole-0": {"nvidia.com/gpu": "4"},
    "shared-0": {"nvidia.com/gpu": "8"},
    "mig-0": {"nvidia.com/mig-1g.10gb": "8", "nvidia.com/mig-2g.20gb": "1", "nvidia.com/mig-3g.40gb": "1"},
}


@pytest.mark.parametrize("node", sorted(EXPECTED_ALLOCATABLE), ids=str)
def test_node_registers_with_allocatable_from_its_plugin(core: client.CoreV1Api, node: str) -> None:
    n = core.read_node(node)
    gpu_keys = {k: v for k, v in n.status.allocatable.items() if k.startswith("nvidia.com/")}
    assert gpu_keys == EXPECTED_ALLOCATABLE[node]
    assert n.status.capacity["cpu"] == str(SPEC.node(node).cpu)
    ready = [c for c in n.status.conditions if c.type == "Ready"][0]
    assert (ready.status, ready.reason) == ("True", "KubeletReady") and ready.last_heartbeat_time is not None
    labels = n.metadata.labels
    assert labels["kubernetes.io/hostname"] == node and labels["mockgpu.io/node"] == node
    assert labels["mockgpu.io/pool"] == node.rsplit("-", 1)[0]
    assert "nvidia.com/gpu.product" in labels or "nvidia.com/mig.strategy" in labels


@pytest.mark.parametrize("node", sorted(EXPECTED_ALLOCATABLE), ids=str)
def test_node_lease_is_held_and_renewed_by_its_kubelet(cluster: EmbeddedCluster, node: str) -> None:
    leases = client.CoordinationV1Api(cluster.api_client())
    lease = wait_for(lambda: _lease(leases, node), what=f"lease of {node}")
    assert (lease.spec.holder_identity, lease.spec.lease_duration_seconds) == (node, 40)
    cluster.control_plane.kubelets[node]._wake.set()  # force a heartbeat instead of waiting 10 s
    wait_for(lambda: _lease(leases, node).spec.renew_time > lease.spec.renew_time, what=f"{node} lease renewed")


def _lease(api: client.CoordinationV1Api, node: str):  # noqa: ANN202
    try:
        return api.read_namespaced_lease(node, "kube-node-lease")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def test_gfd_labels_of_the_shared_node(core: client.CoreV1Api) -> None:
    labels = core.read_node("shared-0").metadata.labels
    assert labels["nvidia.com/gpu.replicas"] == "4"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert labels["nvidia.com/gpu.product"].endswith("-SHARED")


def test_two_gpu_pod_log_shows_two_uuids_of_its_node(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("inspect", "whole-0", ["mockgpu-workload", "inspect"], gpus=2))
    wait_for(lambda: phase(core, "inspect") == "Succeeded", what="inspect Succeeded")
    log = core.read_namespaced_pod_log("inspect", "default")
    line = next(ln for ln in log.splitlines() if ln.startswith("NVIDIA_VISIBLE_DEVICES="))
    uuids = line.split("=", 1)[1].split(",")
    node_uuids = {g.uuid for g in node_inventory(SPEC, "whole-0").gpus}
    assert len(uuids) == 2 and set(uuids) <= node_uuids, line
    st = core.read_namespaced_pod("inspect", "default").status
    term = st.container_statuses[0].state.terminated
    assert (term.exit_code, term.reason) == (0, "Completed")
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=inspect").items
    reasons = {e.reason for e in events}
    assert {"Pulled", "Created", "Started"} <= reasons, reasons
    assert all(e.source.component == "kubelet" and e.source.host == "whole-0" for e in events)


def test_admission_failure_is_unexpected_admission_error(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("toomany", "whole-0", ["sleep", "5"], gpus=5))
    wait_for(lambda: phase(core, "toomany") == "Failed", what="toomany Failed")
    st = core.read_namespaced_pod("toomany", "default").status
    assert st.reason == "UnexpectedAdmissionError"
    assert st.message == ("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
                          "Requested: 5, Available: 4, which is unexpected")
    core.delete_namespaced_pod("toomany", "default")
    wait_for(lambda: gone(core, "toomany"), what="toomany deleted")


@pytest.mark.parametrize(("name", "command", "grace", "exit_code"), [
    ("polite", ["mockgpu-workload", "train", "--memory", "1GiB", "--duration", "0"], 10, 143),
    ("stubborn", ["sh", "-c", "trap '' TERM; sleep 60 & wait; sleep 60"], 1, 137),
], ids=["sigterm-honoured", "sigkill-after-grace"])
def test_deletion_with_grace(core: client.CoreV1Api, cluster: EmbeddedCluster, name: str, command: list[str],
                             grace: int, exit_code: int) -> None:
    core.create_namespaced_pod("default", pod(name, "whole-0", command, gpus=1, grace=grace))
    wait_for(lambda: phase(core, name) == "Running", what=f"{name} Running")
    time.sleep(0.5)  # let the workload install its SIGTERM handler
    k = cluster.control_plane.kubelets["whole-0"]
    meta = core.read_namespaced_pod(name, "default").metadata
    uid = meta.uid
    t0 = time.monotonic()
    core.delete_namespaced_pod(name, "default")
    final = None  # the pod as deleted: the kubelet wrote its containers' last state first (it forgets them then)
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, "default", field_selector=f"metadata.name={name}",
                       resource_version=meta.resource_version, timeout_seconds=grace + 15):
        if ev["type"] == "DELETED":
            final = ev["object"]
            w.stop()
    took = time.monotonic() - t0
    assert final is not None, f"{name} not deleted"
    assert final.status.container_statuses[0].state.terminated.exit_code == exit_code
    assert took < grace + 10
    if exit_code == 137:
        assert took >= grace * 0.9  # it waited for the grace period before SIGKILL
    assert uid not in {u for u, _ in k.dm.pod_devices()}  # devices freed
    events = core.list_namespaced_event("default", field_selector=f"involvedObject.name={name}").items
    assert any(e.reason == "Killing" and e.message == "Stopping container main" for e in events)


def test_gpu_state_configmap(core: client.CoreV1Api, cluster: EmbeddedCluster) -> None:
    core.create_namespaced_pod("default", pod("holder", "shared-0", [
        "mockgpu-workload", "train", "--memory", "3GiB", "--duration", "0", "--utilization", "40",
        "--profile", "steady"], gpus=1))
    wait_for(lambda: phase(core, "holder") == "Running", what="holder Running")

    def state() -> dict | None:
        try:
            cm = core.read_namespaced_config_map("gpu-state-shared-0", "mockgpu-system")
        except ApiException:
            return None
        doc = json.loads(cm.data["state.json"])
        return (doc, cm) if any(p["pod"] == "holder" for p in doc["processes"]) else None

    doc, cm = wait_for(state, what="holder in the GPU state")
    assert cm.metadata.labels == {"mockgpu.io/gpu-state": "true", "mockgpu.io/node": "shared-0"}
    assert doc["node"] == "shared-0" and doc["cluster"] == "workshop"
    assert [g["replicas"] for g in doc["gpus"]] == [4, 4]
    proc = next(p for p in doc["processes"] if p["pod"] == "holder")
    assert proc["usedMiB"] == 3072 and proc["namespace"] == "default" and proc["container"] == "main"
    alloc = next(a for a in doc["allocations"] if a["pod"] == "holder")
    assert alloc["resource"] == "nvidia.com/gpu" and len(alloc["deviceIds"]) == 1
    assert alloc["uuids"] == [strip_replica(alloc["deviceIds"][0])] == [proc["device"]]
    gpu = next(g for g in doc["gpus"] if g["uuid"] == proc["device"])
    assert gpu["memoryUsedMiB"] == 3072 and gpu["utilization"] == 40
    metrics = cm.data["metrics"]
    assert "# TYPE DCGM_FI_DEV_FB_USED gauge" in metrics
    row = next(ln for ln in metrics.splitlines()
               if ln.startswith("DCGM_FI_DEV_FB_USED{") and f'UUID="{gpu["uuid"]}"' in ln)
    assert 'pod="holder"' in row and 'Hostname="shared-0"' in row and row.endswith(" 3072.0")
    core.delete_namespaced_pod("holder", "default", grace_period_seconds=5)
    wait_for(lambda: gone(core, "holder"), what="holder deleted")


def test_no_device_given_twice_under_concurrent_submissions(core: client.CoreV1Api, cluster: EmbeddedCluster) -> None:
    """12 one-replica pods on shared-0 (8 replicas) and 6 one-GPU pods on whole-0 (4 GPUs), all at once."""
    pods = [pod(f"c-shared-{i}", "shared-0", ["sleep", "30"], gpus=1, grace=0) for i in range(12)]
    pods += [pod(f"c-whole-{i}", "whole-0", ["sleep", "30"], gpus=1, grace=0) for i in range(6)]
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda p: core.create_namespaced_pod("default", p), pods))
    names = [p["metadata"]["name"] for p in pods]
    wait_for(lambda: all(phase(core, n) in ("Running", "Failed") for n in names), what="all admitted or refused")
    running = {n for n in names if phase(core, n) == "Running"}
    assert len([n for n in running if "shared" in n]) == 8
    assert len([n for n in running if "whole" in n]) == 4
    for node in ("shared-0", "whole-0"):
        k = cluster.control_plane.kubelets[node]
        ids = [i for (_, _), res in k.dm.pod_devices().items() for i in res.get("nvidia.com/gpu", [])]
        assert len(ids) == len(set(ids)), f"{node}: a device ID was given twice: {sorted(ids)}"
        physical = [strip_replica(i) for i in ids]
        if node == "whole-0":  # no sharing configured: one container per physical GPU
            assert len(physical) == len(set(physical))
        else:  # time-sliced: a physical GPU is shared only through distinct replicas, at most 4
            assert all("::" in i for i in ids) and max(physical.count(u) for u in physical) <= 4
    for n in names:
        if n not in running:
            assert core.read_namespaced_pod(n, "default").status.reason == "UnexpectedAdmissionError"
    for n in names:
        core.delete_namespaced_pod(n, "default", grace_period_seconds=0)
    wait_for(lambda: all(gone(core, n) for n in names), what="all deleted")


def test_crashing_container_backs_off(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("crasher", "whole-0", ["sh", "-c", "echo boom; exit 3"],
                                              policy="Always"))

    def backing_off() -> object:
        cs = core.read_namespaced_pod("crasher", "default").status.container_statuses
        return cs and cs[0].state.waiting and cs[0].state.waiting.reason == "CrashLoopBackOff" and cs[0]
    cs = wait_for(backing_off, what="CrashLoopBackOff")
    assert cs.last_state.terminated.exit_code == 3 and cs.last_state.terminated.reason == "Error"
    assert cs.restart_count >= 1 and phase(core, "crasher") == "Running"  # upstream: Running while it restarts
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=crasher").items
    assert any(e.reason == "BackOff" and e.message.startswith("Back-off restarting failed container main")
               for e in events)
    core.delete_namespaced_pod("crasher", "default", grace_period_seconds=0)
    wait_for(lambda: gone(core, "crasher"), what="crasher deleted")


def test_standalone_publisher_writes_the_same_shape(core: client.CoreV1Api, cluster: EmbeddedCluster) -> None:
    """``mockgpu gpu-state-publisher --once`` (what the kind DaemonSet runs) against this cluster's API."""
    import subprocess
    import sys

    k = cluster.control_plane.kubelets["whole-0"]
    core.delete_namespaced_config_map("gpu-state-whole-0", "mockgpu-system")
    k.publisher.stop()  # only the command writes from now on
    r = subprocess.run([sys.executable, "-m", "mockgpu.cli", "gpu-state-publisher", "--node", "whole-0",
                        "--driver-dir", str(k.driver_dir), "--kubeconfig", str(cluster.kubeconfig),
                        "--checkpoint", str(k.plugin_dir / "kubelet_internal_checkpoint"), "--once"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    cm = core.read_namespaced_config_map("gpu-state-whole-0", "mockgpu-system")
    assert cm.metadata.labels == {"mockgpu.io/gpu-state": "true", "mockgpu.io/node": "whole-0"}
    doc = json.loads(cm.data["state.json"])
    assert doc["node"] == "whole-0" and [g["index"] for g in doc["gpus"]] == [0, 1, 2, 3]
    assert set(doc) == {"node", "cluster", "time", "gpus", "processes", "allocations", "oomEvents"}
    assert "DCGM_FI_DEV_FB_FREE{" in cm.data["metrics"]


def test_standalone_publisher_serves_metrics(cluster: EmbeddedCluster) -> None:
    """``mockgpu gpu-state-publisher --metrics-port`` (the kind DaemonSet: 9400 on the pod IP) serves /metrics."""
    import socket
    import subprocess
    import sys
    import urllib.request

    k = cluster.control_plane.kubelets["whole-0"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "mockgpu.cli", "gpu-state-publisher", "--node", "whole-0",
                             "--driver-dir", str(k.driver_dir), "--kubeconfig", str(cluster.kubeconfig),
                             "--checkpoint", str(k.plugin_dir / "kubelet_internal_checkpoint"),
                             "--metrics-port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)

    def scrape() -> list[str] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                return [ln for ln in r.read().decode().splitlines() if ln.startswith("DCGM_FI_DEV_FB_FREE{")]
        except OSError:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            return None

    try:
        rows = wait_for(scrape, what="the publisher's /metrics")
        assert len(rows) == 4 and all('Hostname="whole-0"' in r for r in rows)
    finally:
        proc.terminate()
        proc.wait(10)


def test_issue_13_escape_fails_in_a_pod(core: client.CoreV1Api, cluster: EmbeddedCluster) -> None:
    # The command of issue 13, then the cluster's token (cluster.json), key and kubeconfig.
    secrets = [cluster.state.config_file, cluster.state.dir / "apiserver.key", cluster.kubeconfig]
    script = "read l < /etc/shadow; /usr/bin/id; " + "; ".join(f"cat {p}" for p in secrets)
    core.create_namespaced_pod("default", pod("esc", "whole-0", ["sh", "-c", script]))
    wait_for(lambda: phase(core, "esc") == "Failed", what="esc Failed")
    log = core.read_namespaced_pod_log("esc", "default")
    assert "cannot open /etc/shadow: No such file" in log and "/usr/bin/id: not found" in log, log
    assert all(f"cat: {p}: No such file or directory" in log for p in secrets), log
    assert cluster.token not in log
    term = core.read_namespaced_pod("esc", "default").status.container_statuses[0].state.terminated
    assert (term.exit_code, term.reason) == (1, "Error")
    core.delete_namespaced_pod("esc", "default", grace_period_seconds=0)
    wait_for(lambda: gone(core, "esc"), what="esc deleted")
