"""Restarts keep every acknowledged object and the version counter; pod logs are served from the state dir."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from kubernetes import client, watch

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.control.apiserver.podlogs import container_log_dir
from mockgpu.control.kubelet.containerlogs import cri_line

SEED_SPEC = Path(__file__).resolve().parents[2] / "clusters" / "seed-4x2.yaml"


def _pod(name: str, *containers: str) -> dict:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": c, "image": "x"} for c in containers or ("main",)]}}


def test_restart_keeps_objects_token_and_versions(tmp_path):
    c = EmbeddedCluster(SEED_SPEC, home=tmp_path)
    with c:
        api = c.api_client()
        core = client.CoreV1Api(api)
        core.create_namespaced_pod("default", _pod("keep"))
        core.delete_node("gpu-3")  # a resumed cluster keeps user changes: nodes are not re-seeded
        rv_before = int(core.list_namespaced_pod("default").metadata.resource_version)
        token = c.token
        api.close()
    with EmbeddedCluster(SEED_SPEC, home=tmp_path) as again:
        assert again.token == token
        api = again.api_client()
        core = client.CoreV1Api(api)
        assert core.read_namespaced_pod("keep", "default").metadata.name == "keep"
        assert [n.metadata.name for n in core.list_node().items] == ["gpu-0", "gpu-1", "gpu-2"]
        created = core.create_namespaced_pod("default", _pod("after"))
        assert int(created.metadata.resource_version) > rv_before
        # a watch from before the restart resumes from the persisted history
        w = watch.Watch()
        names = [(e["type"], e["object"].metadata.name)
                 for e in w.stream(core.list_namespaced_pod, "default", resource_version=str(rv_before),
                                   timeout_seconds=1)]
        assert names == [("ADDED", "after")]
        api.close()


def test_two_servers_cannot_share_a_state_dir(tmp_path):
    from mockgpu.errors import MockgpuError

    with EmbeddedCluster(SEED_SPEC, home=tmp_path):
        with pytest.raises(MockgpuError, match="in use by a running API server"):
            EmbeddedCluster(SEED_SPEC, home=tmp_path).start()


def test_logs_tail_container_and_follow(core, cluster):
    core.create_namespaced_pod("default", {**_pod("lp", "a", "b"), "spec": {  # bound: an unbound pod's log is empty
        **_pod("lp", "a", "b")["spec"], "nodeName": core.list_node().items[0].metadata.name}})
    pod = core.read_namespaced_pod("lp", "default")
    path = container_log_dir(cluster.state.dir, "default", "lp", pod.metadata.uid, "a") / "0.log"
    assert path.parent.parent.parent == cluster.state.pod_logs_dir
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(cri_line("stdout", t) for t in ("one", "two", "three")))
    assert core.read_namespaced_pod_log("lp", "default", container="a") == "one\ntwo\nthree\n"
    assert core.read_namespaced_pod_log("lp", "default", container="a", tail_lines=1) == "three\n"
    with pytest.raises(client.exceptions.ApiException) as exc:
        core.read_namespaced_pod_log("lp", "default")  # two containers: must say which
    assert exc.value.status == 400 and "choose one of: [a b]" in exc.value.body

    def writer() -> None:
        time.sleep(0.3)
        with path.open("ab") as fh:
            fh.write(cri_line("stdout", "four"))
        time.sleep(0.3)
        core.patch_namespaced_pod_status("lp", "default", {"status": {"phase": "Succeeded"}})

    t = threading.Thread(target=writer)
    t.start()
    resp = core.read_namespaced_pod_log("lp", "default", container="a", follow=True, _preload_content=False)
    text = resp.read().decode()
    t.join()
    assert text == "one\ntwo\nthree\nfour\n"  # streamed until the pod finished


def test_finalizers_hold_deletion_until_removed(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "f", "finalizers": ["example.com/hold"]}})
    core.delete_namespaced_config_map("f", "default")
    held = core.read_namespaced_config_map("f", "default")
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("f", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(client.exceptions.ApiException) as exc:
        core.read_namespaced_config_map("f", "default")
    assert exc.value.status == 404
