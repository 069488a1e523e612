"""A cluster's state, keys, tokens, kubeconfig and logs are readable by their owner only: every file 0600, every
dir 0700 (``privatefs``), including the SQLite WAL/SHM files and container and device plugin logs. Only the
dirs a workload sees through its sandbox (the node's driver dir and the runtime's bin/rootfs/sandbox dirs) keep
their own modes, and they sit inside the 0700 node dir."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from kubernetes import client

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.config.clusterspec import parse_spec

pytestmark = pytest.mark.timeout(180)
SPEC = parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "modes"},
                   "spec": {"nodePools": [{"name": "gpu", "gpu": {"model": "A100-SXM4-80GB", "count": 2}}]}})
# the sandbox's business (faults: the injected Xids, 0755, mounted read-only into the pods beside the driver dir)
WORKLOAD_VISIBLE = ("driver", "faults", "runtime/bin", "runtime/rootfs", "runtime/sandbox")


def exposed(top: Path, skip: tuple[Path, ...] = ()) -> list[str]:
    """Every file group/other may read (or dir they may enter) under ``top``, with its mode."""
    bad = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if Path(root, d) not in skip]
        for name in [".", *files]:  # each dir is checked as its own "."
            p = Path(root, name)
            mode = p.lstat().st_mode
            if stat.S_ISLNK(mode) or stat.S_ISSOCK(mode):
                continue  # sockets: their dir is 0700
            if mode & 0o077:
                bad.append(f"{p.relative_to(top)} {stat.filemode(mode)}")
    return bad


def test_api_server_state_is_private(tmp_path: Path) -> None:
    with EmbeddedCluster(SPEC, home=tmp_path) as c:
        core = client.CoreV1Api(c.api_client())
        core.create_namespaced_config_map("default", {"metadata": {"name": "x"}, "data": {"secret": "s"}})
        files = {p.name for p in c.state.dir.iterdir()}
        for must in ("store.db", "store.db-wal", "store.db-shm", "cluster.json", "spec.yaml", "apiserver.crt",
                     "apiserver.key", "kubeconfig", "endpoint.json", "apiserver.lock"):
            assert must in files, must
        assert exposed(c.state.dir) == []
        assert stat.S_IMODE(c.state.dir.stat().st_mode) == 0o700


def test_node_state_and_logs_are_private(tmp_path: Path) -> None:
    with EmbeddedCluster(SPEC, home=tmp_path, kubelets=True, scheduler=True) as c:
        core = client.CoreV1Api(c.api_client())
        core.create_namespaced_pod("default", {"metadata": {"name": "talker"}, "spec": {
            "restartPolicy": "Never", "containers": [{"name": "main", "image": "x", "command": ["echo", "hello"],
                                                      "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
        deadline = time.monotonic() + 60
        while core.read_namespaced_pod("talker", "default").status.phase != "Succeeded":
            assert time.monotonic() < deadline, "talker did not succeed"
            time.sleep(0.1)
        assert core.read_namespaced_pod_log("talker", "default") == "hello\n"
        k = next(iter(c.control_plane.kubelets.values()))
        node = k.root
        skip = tuple(node / d for d in WORKLOAD_VISIBLE)
        uid = core.read_namespaced_pod("talker", "default").metadata.uid
        for must in (c.state.dir / "logs" / f"default_talker_{uid}" / "main" / "0.log",
                     node / "device-plugin.log", k.plugin_dir / "kubelet_internal_checkpoint"):
            assert must.is_file(), must
        bad = exposed(c.state.dir, skip)
        assert bad == [], "\n".join(bad)
        assert exposed(k.plugin_dir) == []  # also when it lives in /tmp (a short socket path)
        assert all(s.exists() for s in skip[:2])
