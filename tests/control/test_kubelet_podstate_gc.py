"""What a kubelet keeps per pod lives as long as the pod, on an in-process EmbeddedCluster with kubelets: a pod's
scratch homes (``<node root>/runtime/rootfs/<uid>``) go once it is deleted and its containers are stopped, never
following a symlink the pod planted there; the kubelet's per-pod records return to their size before after pods
come and go; a pod deleted while the kubelet's watch was down (its DELETED event lost, the history compacted) is
stopped and forgotten on the re-list."""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

import planted
import pytest
from kubernetes import client

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.control.apiserver.podlogs import log_dir
from mockgpu.control.kubelet import kubelet as kubelet_module
from mockgpu.control.kubelet.allowlist import DEFAULT_ALLOWLIST, CommandAllowlist
from mockgpu.control.kubelet.kubelet import Kubelet
from mockgpu.control.kubelet.runtime import ProcessRuntime

from .test_kubelet_cluster import WORKSHOP, gone, phase, pod, wait_for

pytestmark = pytest.mark.timeout(120)
GONE_WITHIN = 5.0  # seconds from the pod leaving the API to its dirs leaving the disk
HISTORY = 200  # watch events the API server keeps: more happen while the watch is down, so it must re-list


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("home")
    # The workloads may also run ln and mkdir, so a pod plants its own symlinks.
    runtime = functools.partial(ProcessRuntime, allowlist=CommandAllowlist(names=(*DEFAULT_ALLOWLIST, "ln", "mkdir")))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kubelet_module, "ProcessRuntime", runtime)
        with EmbeddedCluster(WORKSHOP, home=home, kubelets=True, delete_on_exit=True, history=HISTORY) as c:
            yield c


@pytest.fixture(scope="module")
def core(cluster: EmbeddedCluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api_client())


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Path]:
    return planted.make_host(tmp_path)


def kubelet(cluster: EmbeddedCluster, node: str) -> Kubelet:
    return cluster.control_plane.kubelets[node]


def scratch_root(k: Kubelet) -> Path:
    """Where the node's containers get their scratch homes (``rootfs/<pod uid>/<container>``)."""
    return k.runtime.root / "rootfs"


def uid_of(core: client.CoreV1Api, name: str) -> str:
    return core.read_namespaced_pod(name, "default").metadata.uid


PLANT = ('ln -s {dir} "$HOME/dir-link" && ln -s {file} "$HOME/file-link" && mkdir -p "$HOME/a/b" '
         '&& ln -s {nested} "$HOME/a/b/link" && echo planted && exec sleep 60')


@pytest.mark.parametrize("grace", [None, 0], ids=["graceful", "force"])
def test_deleted_pod_takes_its_scratch_dir_and_no_symlink_target(core: client.CoreV1Api, cluster: EmbeddedCluster,
                                                                  host: dict[str, Path], grace: int | None) -> None:
    name = f"planter-{'force' if grace == 0 else 'graceful'}"
    script = PLANT.format(**{k: str(v) for k, v in host.items()})
    core.create_namespaced_pod("default", pod(name, "whole-0", ["sh", "-c", script], grace=1))
    wait_for(lambda: phase(core, name) == "Running", what=f"{name} Running")
    wait_for(lambda: core.read_namespaced_pod_log(name, "default") == "planted\n", what=f"{name} planted")
    uid = uid_of(core, name)
    scratch = scratch_root(kubelet(cluster, "whole-0")) / uid
    logs = log_dir(cluster.state.dir, "default", name, uid)
    assert os.path.islink(scratch / "main" / "dir-link") and os.path.islink(scratch / "main" / "a" / "b" / "link")

    core.delete_namespaced_pod(name, "default", grace_period_seconds=grace)
    wait_for(lambda: gone(core, name), what=f"{name} deleted")
    wait_for(lambda: not os.path.lexists(scratch) and not logs.exists(), timeout=GONE_WITHIN,
             what=f"{scratch} and {logs} removed")
    assert planted.intact(host)


def sizes(k: Kubelet) -> dict[str, int]:
    """What the kubelet keeps per pod."""
    return {"runtime containers": len(k.runtime._containers), "phases": len(k.pods.phases),
            "terminating": len(k.pods._terminating), "pods": len(k.pods.pods), "workers": len(k.pods.workers),
            "scratch dirs": len(os.listdir(scratch_root(k))) if scratch_root(k).exists() else 0}


# (pod name, command, restartPolicy, reached before deleting, grace period of the delete)
LIFECYCLES = [
    ("running", ["sh", "-c", "exec sleep 60"], "Never", lambda core, n: phase(core, n) == "Running", None),
    ("running-forced", ["sh", "-c", "exec sleep 60"], "Always", lambda core, n: phase(core, n) == "Running", 0),
    ("succeeded", ["sh", "-c", "echo done"], "Never", lambda core, n: phase(core, n) == "Succeeded", None),
    ("failed", ["sh", "-c", "exit 3"], "Never", lambda core, n: phase(core, n) == "Failed", 0),
    ("crashlooping", ["sh", "-c", "exit 1"], "Always",
     lambda core, n: (core.read_namespaced_pod(n, "default").status.container_statuses or [None])[0] is not None
     and core.read_namespaced_pod(n, "default").status.container_statuses[0].restart_count >= 1, None),
    ("refused", ["curl", "x"], "Never", lambda core, n: phase(core, n) == "Failed", None),
]
ROUNDS = 2


def test_per_pod_state_returns_to_its_baseline(core: client.CoreV1Api, cluster: EmbeddedCluster) -> None:
    node = "shared-0"
    k = kubelet(cluster, node)
    baseline = sizes(k)
    for r in range(ROUNDS):
        names = [f"{n}-{r}" for n, *_ in LIFECYCLES]
        for name, (_, command, policy, _, _) in zip(names, LIFECYCLES, strict=True):
            core.create_namespaced_pod("default", pod(name, node, command, policy=policy, grace=1))
        for name, (_, _, _, ready, _) in zip(names, LIFECYCLES, strict=True):
            wait_for(lambda name=name, ready=ready: ready(core, name), what=f"{name} ready to delete")
        assert sizes(k)["phases"] >= baseline["phases"] + len(LIFECYCLES)
        for name, (*_, grace) in zip(names, LIFECYCLES, strict=True):
            core.delete_namespaced_pod(name, "default", grace_period_seconds=grace)
        wait_for(lambda names=names: all(gone(core, n) for n in names), what=f"round {r} deleted")
        wait_for(lambda: sizes(k) == baseline, timeout=GONE_WITHIN, what=f"back to {baseline}: {sizes(k)}")


def test_pod_deleted_while_the_watch_was_down_is_stopped_and_forgotten_on_relist(
        core: client.CoreV1Api, cluster: EmbeddedCluster) -> None:
    node = "mig-0"
    k = kubelet(cluster, node)
    baseline = sizes(k)
    core.create_namespaced_pod("default", pod("missed", node, ["sh", "-c", "echo up; exec sleep 60"], grace=1))
    wait_for(lambda: phase(core, "missed") == "Running", what="missed Running")
    wait_for(lambda: core.read_namespaced_pod_log("missed", "default") == "up\n", what="missed logs")
    uid = uid_of(core, "missed")
    scratch, logs = scratch_root(k) / uid, log_dir(cluster.state.dir, "default", "missed", uid)
    assert scratch.is_dir() and logs.is_dir()

    reflector = k._reflectors[0]  # the kubelet's pod watch
    real, down, refused = reflector.list_fn, threading.Event(), []

    def list_fn(**kwargs):  # noqa: ANN202
        if kwargs.get("watch") and down.is_set():
            refused.append(kwargs.get("resource_version"))
            raise ConnectionError("API server unreachable (test)")
        return real(**kwargs)

    cms = client.CoreV1Api(cluster.api_client())
    reflector.list_fn = list_fn
    try:
        down.set()
        wait_for(lambda: reflector._resp is not None, what="the watch stream")
        reflector._resp.shutdown()  # the connection breaks; reconnecting fails while down
        wait_for(lambda: refused, what="a refused reconnect")
        core.delete_namespaced_pod("missed", "default", grace_period_seconds=0)
        wait_for(lambda: gone(core, "missed"), what="missed deleted")
        for i in range(HISTORY + 10):  # the DELETED event falls out of the server's history
            cms.create_namespaced_config_map("default", {"metadata": {"name": f"churn-{i}"}, "data": {"i": str(i)}})
        assert uid in k.pods.workers and k.runtime.running()  # the kubelet has not heard of it
        down.clear()
        wait_for(lambda: not os.path.lexists(scratch) and not logs.exists(), timeout=GONE_WITHIN + 2,
                 what=f"{scratch} and {logs} removed after the re-list")
        assert not [s for s in k.runtime.running() if s.pod_uid == uid]
        wait_for(lambda: sizes(k) == baseline, timeout=GONE_WITHIN, what=f"back to {baseline}: {sizes(k)}")
    finally:
        reflector.list_fn = real
        down.clear()
        cms.delete_collection_namespaced_config_map("default")
