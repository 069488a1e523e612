"""A pod's log dir (``<state>/logs/<ns>_<pod>_<uid>``) lives as long as the pod, on an in-process EmbeddedCluster
with kubelets: ``kubectl logs`` (and ``--previous``) works until the pod is deleted, the dir goes with it, and a
kubelet start removes the dirs of pods deleted while it was down, never following a symlink."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from kubernetes import client

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.control.apiserver.podlogs import log_dir, logs_root

from .test_kubelet_cluster import WORKSHOP, gone, phase, pod, wait_for

pytestmark = pytest.mark.timeout(120)
GONE_WITHIN = 5.0  # seconds from the pod leaving the API to its log dir leaving the disk


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("home")
    with EmbeddedCluster(WORKSHOP, home=home, kubelets=True, delete_on_exit=True) as c:
        yield c


@pytest.fixture(scope="module")
def core(cluster: EmbeddedCluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api_client())


def restarted(core: client.CoreV1Api, name: str) -> bool:
    cs = core.read_namespaced_pod(name, "default").status.container_statuses
    return bool(cs and cs[0].restart_count >= 1)


def pod_dir(cluster: EmbeddedCluster, core: client.CoreV1Api, name: str) -> Path:
    return log_dir(cluster.state.dir, "default", name, core.read_namespaced_pod(name, "default").metadata.uid)


# (pod name, command, restartPolicy, reached before deleting, what `kubectl logs` prints then, and with
# --previous, grace period of the delete)
CASES = [
    ("running", ["sh", "-c", "echo up; exec sleep 60"], "Never",
     lambda core, n: phase(core, n) == "Running", "up\n", None, None),
    ("force-deleted", ["sh", "-c", "echo up; exec sleep 60"], "Never",
     lambda core, n: phase(core, n) == "Running", "up\n", None, 0),
    ("completed", ["sh", "-c", "echo done"], "Never",
     lambda core, n: phase(core, n) == "Succeeded", "done\n", None, None),
    ("crashlooping", ["sh", "-c", "echo boom; exit 3"], "Always",
     restarted, "boom\n", "boom\n", 0),
]


@pytest.mark.parametrize(("name", "command", "policy", "ready", "logs", "previous", "grace"), CASES,
                         ids=[c[0] for c in CASES])
def test_deleted_pod_takes_its_log_dir(core: client.CoreV1Api, cluster: EmbeddedCluster, name: str,
                                       command: list[str], policy: str, ready, logs: str, previous: str | None,
                                       grace: int | None) -> None:
    core.create_namespaced_pod("default", pod(name, "whole-0", command, policy=policy, grace=1))
    wait_for(lambda: ready(core, name), what=f"{name} ready to delete")
    d = pod_dir(cluster, core, name)
    wait_for(lambda: core.read_namespaced_pod_log(name, "default") == logs, what=f"{name} logs")
    if previous is not None:
        assert core.read_namespaced_pod_log(name, "default", previous=True) == previous
    assert (d / "main").is_dir()

    core.delete_namespaced_pod(name, "default", grace_period_seconds=grace)
    wait_for(lambda: gone(core, name), what=f"{name} deleted")
    wait_for(lambda: not d.exists(), timeout=GONE_WITHIN, what=f"{d} removed")


def _stale(root: Path, name: str) -> Path:
    d = root / f"default_{name}_{uuid.uuid4()}" / "main"
    d.mkdir(parents=True)
    (d / "0.log").write_bytes(b"2026-01-01T00:00:00.000000000Z stdout F old\n")
    return d.parent


def test_kubelet_start_removes_log_dirs_of_deleted_pods(core: client.CoreV1Api, cluster: EmbeddedCluster,
                                                        tmp_path: Path) -> None:
    cmd = ["sh", "-c", "echo live; exec sleep 60"]
    core.create_namespaced_pod("default", pod("here", "whole-0", cmd, policy="Always", grace=1))
    core.create_namespaced_pod("default", pod("elsewhere", "shared-0", cmd, policy="Always", grace=1))
    wait_for(lambda: phase(core, "here") == phase(core, "elsewhere") == "Running", what="both Running")
    for n in ("here", "elsewhere"):  # both have written their first run's log
        wait_for(lambda n=n: core.read_namespaced_pod_log(n, "default") == "live\n", what=f"{n} logs")
    live = [pod_dir(cluster, core, n) for n in ("here", "elsewhere")]

    root = logs_root(cluster.state.dir)
    outside = tmp_path / "outside"
    (outside / "main").mkdir(parents=True)
    (outside / "main" / "0.log").write_text("not the kubelet's\n")
    plain = _stale(root, "crashed")  # a pod deleted while its kubelet was down
    inner = _stale(root, "inner-link")
    os.symlink(outside, inner / "main" / "elsewhere")  # a symlink inside: removed, its target kept
    top = root / f"default_top-link_{uuid.uuid4()}"
    os.symlink(outside, top)  # the dir itself a symlink: the link is removed, not what it points to

    cluster.control_plane.restart_kubelet("whole-0")

    stale = [plain, inner, top]
    wait_for(lambda: not any(os.path.lexists(p) for p in stale), timeout=GONE_WITHIN, what="stale dirs removed")
    assert (outside / "main" / "0.log").read_text() == "not the kubelet's\n"
    assert all((d / "main").is_dir() for d in live)  # this node's pod and another node's pod keep theirs
    wait_for(lambda: restarted(core, "here"), what="here restarted")
    assert core.read_namespaced_pod_log("here", "default", previous=True) == "live\n"
    assert core.read_namespaced_pod_log("elsewhere", "default") == "live\n"
    for n in ("here", "elsewhere"):
        core.delete_namespaced_pod(n, "default", grace_period_seconds=0)
    wait_for(lambda: gone(core, "here") and gone(core, "elsewhere"), what="deleted")
    wait_for(lambda: not any(d.exists() for d in live), timeout=GONE_WITHIN, what="live dirs removed")
