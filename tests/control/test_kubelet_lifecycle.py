"""Kubelet lifecycle on an in-process EmbeddedCluster: restart keeps devices, device health and a vanished
plugin change allocatable, a killed plugin is restarted and registers again, a deleted Node takes its pods with
it, and nothing outlives stop()."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from kubernetes import client

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.control.kubelet.kubelet import KubeletOptions
from mockgpu.control.kubelet.pluginproc import BackOff
from mockgpu.gpu.driver import Driver

from .test_kubelet_cluster import WORKSHOP, gone, phase, pod, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("home")
    with EmbeddedCluster(WORKSHOP, home=home, kubelets=True, delete_on_exit=True,
                         kubelet_options=KubeletOptions(heartbeat=0.5, plugin_backoff=BackOff(initial=2.0))) as c:
        yield c


@pytest.fixture(scope="module")
def core(cluster: EmbeddedCluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api_client())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def allocatable(core: client.CoreV1Api, node: str, resource: str = "nvidia.com/gpu") -> str | None:
    return core.read_node(node).status.allocatable.get(resource)


def test_heartbeat_refreshes_ready(core: client.CoreV1Api) -> None:
    def ready() -> client.V1NodeCondition:
        return next(c for c in core.read_node("whole-0").status.conditions if c.type == "Ready")
    first = ready()
    later = wait_for(lambda: (r := ready()).last_heartbeat_time > first.last_heartbeat_time and r, timeout=5,
                     what="a newer heartbeat")
    assert later.last_transition_time == first.last_transition_time and later.status == "True"


def test_kubelet_restart_keeps_devices_and_applies_restart_policy(core: client.CoreV1Api,
                                                                  cluster: EmbeddedCluster) -> None:
    train = ["mockgpu-workload", "train", "--memory", "1GiB", "--duration", "0"]
    core.create_namespaced_pod("default", pod("always", "whole-0", train, gpus=2, policy="Always"))
    core.create_namespaced_pod("default", pod("never", "whole-0", ["sleep", "60"], gpus=1, policy="Never"))
    wait_for(lambda: phase(core, "always") == phase(core, "never") == "Running", what="both Running")
    uid = {n: core.read_namespaced_pod(n, "default").metadata.uid for n in ("always", "never")}
    before = cluster.control_plane.kubelets["whole-0"].dm.pod_devices()[(uid["always"], "main")]

    k = cluster.control_plane.restart_kubelet("whole-0")

    def restarted() -> bool:
        st = core.read_namespaced_pod("always", "default").status
        return st.phase == "Running" and st.container_statuses[0].restart_count == 1 and \
            st.container_statuses[0].state.running is not None
    wait_for(restarted, what="always restarted")
    assert k.dm.pod_devices()[(uid["always"], "main")] == before  # the checkpoint kept its GPUs
    wait_for(lambda: phase(core, "never") == "Failed", what="never Failed")
    term = core.read_namespaced_pod("never", "default").status.container_statuses[0].state.terminated
    assert (term.exit_code, term.reason) == (137, "ContainerStatusUnknown")
    assert (uid["never"], "main") not in k.dm.pod_devices()
    for n in ("always", "never"):
        core.delete_namespaced_pod(n, "default", grace_period_seconds=0)
    wait_for(lambda: gone(core, "always") and gone(core, "never"), what="deleted")


def test_unhealthy_device_then_vanished_plugin(core: client.CoreV1Api, cluster: EmbeddedCluster) -> None:
    k = cluster.control_plane.kubelets["shared-0"]
    assert allocatable(core, "shared-0") == "8"
    driver = Driver(k.driver_dir)
    driver.inject_xid(driver.inventory.gpus[0].uuid, 79)  # fell off the bus: its 4 replicas turn unhealthy
    wait_for(lambda: allocatable(core, "shared-0") == "4", what="allocatable 4")
    assert core.read_node("shared-0").status.capacity["nvidia.com/gpu"] == "8"
    core.create_namespaced_pod("default", pod("holder", "shared-0", ["sleep", "60"], gpus=1))
    wait_for(lambda: phase(core, "holder") == "Running", what="holder Running")
    uid = core.read_namespaced_pod("holder", "default").metadata.uid
    held = k.dm.pod_devices()[(uid, "main")]
    old_pid = k.plugin.pid
    k.plugin.kill(signal.SIGKILL)
    wait_for(lambda: allocatable(core, "shared-0") == "0", what="allocatable 0")
    assert core.read_node("shared-0").status.capacity["nvidia.com/gpu"] == "8"  # unhealthy, not gone (grace)

    # restarted after the back-off (2 s here), it registers again and ListAndWatch gives the GPUs back
    wait_for(lambda: allocatable(core, "shared-0") == "4", timeout=30, what="allocatable 4 again")
    assert k.plugin.restarts == 1 and k.plugin.pid != old_pid and k.plugin.alive()
    assert [r for r, _ in k.dm.registrations].count("nvidia.com/gpu") == 2
    assert phase(core, "holder") == "Running" and k.dm.pod_devices()[(uid, "main")] == held
    core.create_namespaced_pod("default", pod("after", "shared-0", ["sleep", "60"], gpus=1))
    wait_for(lambda: phase(core, "after") == "Running", what="a new GPU pod Running")
    for n in ("holder", "after"):
        core.delete_namespaced_pod(n, "default", grace_period_seconds=0)
    wait_for(lambda: gone(core, "holder") and gone(core, "after"), what="deleted")


def test_node_deleted_under_a_running_pod(core: client.CoreV1Api, cluster: EmbeddedCluster) -> None:
    core.create_namespaced_pod("default", pod("orphan", "mig-0", ["sleep", "60"], gpus=1,
                                              resource="nvidia.com/mig-1g.10gb"))
    wait_for(lambda: phase(core, "orphan") == "Running", what="orphan Running")
    k = cluster.control_plane.kubelets["mig-0"]
    pid = k.runtime.running()[0].pid
    wait_for(lambda: core.list_namespaced_config_map("mockgpu-system",
                                                     label_selector="mockgpu.io/node=mig-0").items, what="state")
    core.delete_node("mig-0")
    wait_for(lambda: gone(core, "orphan"), what="orphan deleted")
    assert not alive(pid)
    wait_for(lambda: not core.list_namespaced_config_map("mockgpu-system",
                                                         label_selector="mockgpu.io/node=mig-0").items,
             what="gpu-state ConfigMap removed")


def test_no_process_outlives_stop(core: client.CoreV1Api, cluster: EmbeddedCluster) -> None:
    core.create_namespaced_pod("default", pod("lingerer", "whole-0", ["sleep", "60"], gpus=1))
    wait_for(lambda: phase(core, "lingerer") == "Running", what="lingerer Running")
    kubelets = cluster.control_plane.kubelets.values()
    pids = [k.plugin.pid for k in kubelets if k.plugin and k.plugin.alive()]
    pids += [c.pid for k in kubelets for c in k.runtime.running()]
    assert len(pids) >= 3  # two live plugins (mig-0's node is gone) and the container
    t0 = time.monotonic()
    cluster.stop()
    assert time.monotonic() - t0 < 15
    assert [p for p in pids if alive(p)] == []
