"""The upstream backend end to end: the real kube-apiserver, controller manager and scheduler with
mockgpu's kubelets (issue 10's "done when"), and the same promises as the embedded backend."""

from __future__ import annotations

import json
import os
import ssl
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import polling
import pytest
from kubernetes import client

from mockgpu.backends.upstream import binaries
from mockgpu.control.kubelet.exporter import endpoints

ROOT = Path(__file__).resolve().parents[2]
INSUFFICIENT = ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: "
                "4 Preemption is not helpful for scheduling.")


def kubectl(cluster, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(binaries.bin_dir() / "kubectl"), "--kubeconfig", str(cluster.kubeconfig), *args],
                          capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_four_ready_nodes_from_the_real_apiserver(seed_upstream):
    core = client.CoreV1Api(seed_upstream.api_client())
    nodes = core.list_node().items
    assert sorted(n.metadata.name for n in nodes) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    for n in nodes:
        assert n.status.allocatable["nvidia.com/gpu"] == "2"
        assert {c.type: c.status for c in n.status.conditions}["Ready"] == "True"
    version = json.loads(kubectl(seed_upstream, "get", "--raw", "/version").stdout)
    assert version["gitVersion"] == binaries.versions()["KUBERNETES_VERSION"]


def test_nodes_serve_dcgm_metrics_found_through_the_real_apiserver(seed_upstream):
    """The kubelets' Node annotation survives the real API server (NodeRestriction lets a node annotate itself)."""
    urls = endpoints(seed_upstream.api_client())
    assert sorted(urls) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    for node, url in urls.items():
        with urllib.request.urlopen(url, timeout=5) as r:
            rows = [ln for ln in r.read().decode().splitlines() if ln.startswith("DCGM_FI_DEV_FB_FREE{")]
        assert len(rows) == 2 and all(f'Hostname="{node}"' in ln for ln in rows)


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: infer}
spec:
  replicas: 3
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: w
        image: mockgpu/workload
        command: ["sh", "-c", "echo NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES; exec sleep 600"]
        resources: {limits: {nvidia.com/gpu: 1}}
"""
JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: w
        image: mockgpu/workload
        command: ["sh", "-c", "echo done on $NVIDIA_VISIBLE_DEVICES"]
        resources: {limits: {nvidia.com/gpu: 1}}
"""
BIG = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
       "spec": {"containers": [{"name": "w", "image": "x", "command": ["sleep", "60"],
                                "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}


def test_deployment_job_and_pending_pod(seed_upstream, tmp_path):
    manifest = tmp_path / "m.yaml"
    manifest.write_text(DEPLOYMENT + "---" + JOB)
    kubectl(seed_upstream, "apply", "-f", str(manifest))
    # the real controller manager made the pods; the real scheduler placed them; our kubelets ran them
    kubectl(seed_upstream, "rollout", "status", "deployment/infer", "--timeout=90s")
    kubectl(seed_upstream, "wait", "--for=condition=complete", "job/once", "--timeout=90s")
    core = client.CoreV1Api(seed_upstream.api_client())
    pods = core.list_namespaced_pod("default", label_selector="app=infer").items
    assert len(pods) == 3 and all(p.status.phase == "Running" for p in pods)
    assert all(p.metadata.owner_references[0].kind == "ReplicaSet" for p in pods)
    visible = set()
    for p in pods:  # kubectl logs goes kube-apiserver -> the kubelets' API (TLS, client certificate)
        log = polling.wait_for(lambda p=p: kubectl(seed_upstream, "logs", p.metadata.name).stdout.strip(),
                               timeout=20, what=f"log of {p.metadata.name}")
        visible.add((p.spec.node_name, log))
    assert len(visible) == 3  # three distinct GPUs
    assert kubectl(seed_upstream, "logs", "job/once").stdout.startswith("done on GPU-")

    core.create_namespaced_pod("default", BIG)
    event = polling.wait_for(lambda: [e for e in core.list_namespaced_event(
        "default", field_selector="involvedObject.name=big,reason=FailedScheduling").items], timeout=30,
        what="FailedScheduling event")[0]
    assert event.message == INSUFFICIENT
    assert event.source.component == "default-scheduler" or event.reporting_component == "default-scheduler"
    cond = {c.type: c for c in core.read_namespaced_pod("big", "default").status.conditions}["PodScheduled"]
    assert (cond.status, cond.reason, cond.message) == ("False", "Unschedulable", INSUFFICIENT)


def test_state_keys_tokens_and_logs_are_private(seed_upstream):
    """Every file of the cluster's home 0600 and every dir 0700 (PKI, tokens, kubeconfigs, etcd's data, component
    and container logs), except the dirs a workload sees through its sandbox (``faults`` read-only), which sit in the
    0700 node dirs."""
    top = seed_upstream.state.dir
    visible = {n / d for n in (top / "nodes").iterdir() for d in ("driver", "faults", "runtime/bin",
                                                                 "runtime/rootfs", "runtime/sandbox")}
    bad = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if Path(root, d) not in visible]
        for name in [".", *files]:
            mode = Path(root, name).lstat().st_mode
            if not (stat.S_ISLNK(mode) or stat.S_ISSOCK(mode)) and mode & 0o077:
                bad.append(f"{Path(root, name).relative_to(top)} {stat.filemode(mode)}")
    assert bad == [], "\n".join(bad)
    for must in ("pki/ca.key", "pki/ca.crt", "tokens.csv", "kubeconfig", "etcd", "logs/kube-apiserver.log"):
        assert (top / must).exists(), must


def test_requires_its_token_and_binds_loopback_only(seed_upstream):
    ctx = ssl.create_default_context(cafile=str(seed_upstream.state.cert_file))
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{seed_upstream.url}/api/v1/namespaces", context=ctx, timeout=10)
    assert err.value.code == 401
    assert stat.S_IMODE(seed_upstream.kubeconfig.stat().st_mode) == 0o600
    ports = set(seed_upstream.config["ports"].values())
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, port = local.rsplit(":", 1)
            if state == "0A" and int(port, 16) in ports:  # LISTEN
                listening.add((addr, int(port, 16)))
    assert listening, "no listener found for the cluster's ports"
    for addr, port in listening:
        assert addr in ("0100007F", "00000000000000000000000001000000"), f"port {port} listens on {addr}"


def _processes_mentioning(text: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmd:
                out.append(int(d.name))
    return out


def test_cli_up_status_down_leaves_no_process(upstream_bin, tmp_path):
    env = {**os.environ, "MOCKGPU_HOME": str(tmp_path / "home")}
    env.pop("MOCKGPU_KUBECONFIG", None)
    mockgpu = [sys.executable, "-m", "mockgpu.cli"]
    up = subprocess.run([*mockgpu, "up", "--backend", "upstream", "--spec", str(ROOT / "clusters" / "empty.yaml"),
                         "--name", "cli"], capture_output=True, text=True, env=env, timeout=300)
    assert up.returncode == 0, up.stderr
    assert "kube-apiserver:" in up.stderr and "upstream" in up.stdout  # progress with times, then the summary
    kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    assert kubeconfig.is_file()
    status = subprocess.run([*mockgpu, "status"], capture_output=True, text=True, env=env, timeout=60)
    assert "cli" in status.stdout and "upstream" in status.stdout and "running" in status.stdout
    state_dir = str(tmp_path / "home" / "cli")
    assert len(_processes_mentioning(state_dir)) >= 5  # supervisor, etcd, apiserver, controller manager, scheduler
    down = subprocess.run([*mockgpu, "down", "--name", "cli"], capture_output=True, text=True, env=env, timeout=120)
    assert down.returncode == 0, down.stderr
    assert _processes_mentioning(state_dir) == []
    assert not Path(state_dir).exists()
