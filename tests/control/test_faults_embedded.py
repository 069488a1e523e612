"""Injected faults on an embedded cluster, end to end: ``Cluster.inject_fault`` (host-side state) -> the device
plugin's ListAndWatch reports the GPU Unhealthy within 2 s -> the node's allocatable drops by one -> the kubelet
writes ``allocatedResourcesStatus`` Unhealthy on the pod holding it; an application Xid keeps it healthy; clearing
(a fake GPU reset) gives it back."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from faults_scenario import GPU, NODE, SPEC, seconds_until_unhealthy
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.cli import main
from mockgpu.control.kubelet.kubelet import KubeletOptions
from mockgpu.errors import MockgpuError

from .test_kubelet_cluster import gone, phase, pod, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("home")
    spec = home / "faults.yaml"
    spec.write_text(SPEC)
    with EmbeddedCluster(spec, home=home, kubelets=True, delete_on_exit=True,
                         kubelet_options=KubeletOptions(heartbeat=0.5)) as c:
        yield c


@pytest.fixture(scope="module")
def core(cluster: EmbeddedCluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api_client())


def allocatable(core: client.CoreV1Api) -> str:
    return core.read_node(NODE).status.allocatable.get(GPU)


def device_health(core: client.CoreV1Api, name: str) -> list[dict] | None:
    """The pod's first container's allocatedResourcesStatus, as the API serves it (raw JSON)."""
    raw = core.read_namespaced_pod(name, "default", _preload_content=False)
    statuses = json.loads(raw.data)["status"].get("containerStatuses") or []
    return statuses[0].get("allocatedResourcesStatus") if statuses else None


def log_of(core: client.CoreV1Api, name: str) -> str:
    try:
        return core.read_namespaced_pod_log(name, "default")
    except ApiException as exc:  # 400 while the container is still being created
        if exc.status == 400:
            return ""
        raise


def test_xid_79_unhealthy_in_list_and_watch_allocatable_and_pod_status(core: client.CoreV1Api,
                                                                       cluster: EmbeddedCluster) -> None:
    k = cluster.control_plane.kubelets[NODE]
    assert allocatable(core) == "2"
    core.create_namespaced_pod("default", pod("holder", NODE, ["sleep", "60"], gpus=1))
    wait_for(lambda: phase(core, "holder") == "Running", what="holder Running")
    uid = core.read_namespaced_pod("holder", "default").metadata.uid
    (held,) = k.dm.pod_devices()[(uid, "main")][GPU]
    assert wait_for(lambda: device_health(core, "holder"), what="allocatedResourcesStatus") == [
        {"name": GPU, "resources": [{"resourceID": held, "health": "Healthy"}]}]
    index = next(g.index for g in k.inventory.gpus if g.uuid == held)

    records = []  # the GPU has fallen off the bus:
    elapsed = seconds_until_unhealthy(k.plugin_dir, held, lambda: records.append(cluster.inject_fault(NODE, index, 79)))
    assert elapsed < 2.0, f"ListAndWatch reported it after {elapsed:.2f} s"
    (record,) = records
    wait_for(lambda: k.dm.devices(GPU)[held] is False, timeout=5, what="the kubelet's device manager saw it")
    assert (record.node, record.gpu, record.uuid, record.xid) == (NODE, index, held, 79)
    assert [(r.node, r.gpu, r.uuid, r.xid) for r in cluster.faults()] == [(NODE, index, held, 79)]
    wait_for(lambda: allocatable(core) == "1", what="allocatable 1")
    assert core.read_node(NODE).status.capacity[GPU] == "2"
    wait_for(lambda: device_health(core, "holder") == [
        {"name": GPU, "resources": [{"resourceID": held, "health": "Unhealthy"}]}], what="pod's device Unhealthy")

    assert cluster.clear_faults(NODE, index) == 1  # a fake GPU reset: healthy again (upstream's plugin never is)
    wait_for(lambda: allocatable(core) == "2", what="allocatable 2 again")
    wait_for(lambda: device_health(core, "holder") == [
        {"name": GPU, "resources": [{"resourceID": held, "health": "Healthy"}]}], what="pod's device Healthy")
    assert cluster.faults() == []
    core.delete_namespaced_pod("holder", "default", grace_period_seconds=0)
    wait_for(lambda: gone(core, "holder"), what="deleted")


def test_application_xid_keeps_the_gpu_healthy(core: client.CoreV1Api, cluster: EmbeddedCluster) -> None:
    k = cluster.control_plane.kubelets[NODE]
    cluster.inject_fault(NODE, 1, 13)  # Graphics Engine Exception: the application's error, not the GPU's
    time.sleep(2.5)  # more than two of the plugin's health polls
    assert all(k.dm.devices(GPU).values()) and allocatable(core) == "2"
    assert cluster.clear_faults() == 1


@pytest.mark.parametrize(("node", "gpu", "message"), [
    ("nope-0", 0, "has no node 'nope-0'"),
    (NODE, 7, r"has no GPU '7' \(its GPUs: 0, 1"),
    (NODE, "GPU-not-here", "has no GPU 'GPU-not-here'"),
], ids=["unknown-node", "unknown-index", "unknown-uuid"])
def test_bad_targets_are_refused_in_one_line(cluster: EmbeddedCluster, node: str, gpu: int | str,
                                             message: str) -> None:
    with pytest.raises(MockgpuError, match=message):
        cluster.inject_fault(node, gpu, 79)


def test_the_fault_state_is_beside_the_driver_dir_not_in_it(cluster: EmbeddedCluster) -> None:
    k = cluster.control_plane.kubelets[NODE]
    faults = Path(k.driver_dir).parent / "faults"
    st = os.lstat(faults)
    assert faults.is_dir() and not faults.is_symlink() and st.st_mode & 0o777 == 0o755
    assert st.st_uid == os.geteuid()  # the cluster's user, never the workload user
    assert not (Path(k.driver_dir) / "health.json").exists()


def test_a_training_pod_on_a_gpu_that_falls_off_the_bus_fails(core: client.CoreV1Api,
                                                             cluster: EmbeddedCluster) -> None:
    """Its next CUDA call fails with the launch failure (fake CUDA, docs/faults.md): the workload exits 1, and under
    restartPolicy Never the pod is Failed; nvidia-smi in a pod on that GPU cannot reach it."""
    k = cluster.control_plane.kubelets[NODE]
    train = ["mockgpu-workload", "train", "--memory", "1GiB", "--duration", "0", "--interval", "0.2"]
    core.create_namespaced_pod("default", pod("trainer", NODE, train, gpus=1))
    wait_for(lambda: "train: step 2" in log_of(core, "trainer"), what="training")
    uid = core.read_namespaced_pod("trainer", "default").metadata.uid
    (held,) = k.dm.pod_devices()[(uid, "main")][GPU]
    cluster.inject_fault(NODE, held, 79)
    wait_for(lambda: phase(core, "trainer") == "Failed", what="trainer Failed")
    term = core.read_namespaced_pod("trainer", "default").status.container_statuses[0].state.terminated
    log = core.read_namespaced_pod_log("trainer", "default")
    assert term.exit_code == 1 and "CUDA error: unspecified launch failure" in log, log
    core.delete_namespaced_pod("trainer", "default", grace_period_seconds=0)
    wait_for(lambda: gone(core, "trainer"), what="deleted")
    cluster.clear_faults()


def test_the_command_line(cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    """``mockgpu fault inject|list|clear`` on the running cluster (found through $MOCKGPU_HOME, the only one)."""
    monkeypatch.setenv("MOCKGPU_HOME", str(cluster.state.dir.parent))
    k = cluster.control_plane.kubelets[NODE]
    g1 = k.inventory.gpus[1]
    assert main(["fault", "inject", "--node", NODE, "--gpu", "1", "--xid", "79"]) == 0
    assert capsys.readouterr().out == f"Xid 79 (GPU has fallen off the bus) injected on GPU 1 ({g1.uuid}) of node " \
                                      f"{NODE}\n"
    assert main(["fault", "list"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["NODE", "GPU", "UUID", "XID", "TIME", "MEANING"]
    assert row.split()[:4] == [NODE, "1", g1.uuid, "79"] and row.endswith("GPU has fallen off the bus")
    assert main(["fault", "list", "-o", "json", "--name", cluster.name]) == 0
    (rec,) = json.loads(capsys.readouterr().out)
    assert {k: rec[k] for k in ("node", "gpu", "uuid", "xid")} == {"node": NODE, "gpu": 1, "uuid": g1.uuid, "xid": 79}
    assert main(["fault", "clear", "--node", NODE, "--gpu", g1.uuid]) == 0
    assert capsys.readouterr().out == f"1 fault cleared on GPU {g1.uuid} of node {NODE}\n"
    assert main(["fault", "list"]) == 0 and capsys.readouterr().out == "no faults\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["fault", "list", "--name", "nope"], "mockgpu: no cluster named 'nope' (see mockgpu status)\n"),
    (["fault", "clear", "--gpu", "0"], "mockgpu: say which node the GPU is on (--node)\n"),
    (["fault", "inject", "--node", NODE, "--gpu", "9", "--xid", "79"],
     f"mockgpu: node {NODE} has no GPU '9' (its GPUs: 0, 1; or give a GPU or MIG UUID)\n"),
], ids=["no-such-cluster", "gpu-without-node", "no-such-gpu"])
def test_the_command_line_refuses_in_one_line(cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str], argv: list[str],
                                              message: str) -> None:
    monkeypatch.setenv("MOCKGPU_HOME", str(cluster.state.dir.parent))
    assert main(argv) == 2
    assert capsys.readouterr().err == message
