"""Pieces of the embedded backend: node objects from a spec, kubeconfig merge/removal, the TLS certificate."""

from __future__ import annotations

import os
import ssl
import stat
from pathlib import Path

import pytest
import yaml

from mockgpu.backends.common.kubeconfig import remove_kubeconfig, write_kubeconfig
from mockgpu.backends.common.state import ClusterState, mockgpu_home
from mockgpu.backends.embedded.nodes import gpu_resources, node_object
from mockgpu.backends.embedded.tls import ensure_serving_cert
from mockgpu.config import load_spec
from mockgpu.config.clusterspec import parse_spec

ROOT = Path(__file__).resolve().parents[2]


def _spec(pools):
    return parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "t"},
                       "spec": {"nodePools": pools}})


@pytest.mark.parametrize("pool,expected", [
    ({"name": "gpu", "gpu": {"model": "A100-SXM4-80GB", "count": 2}}, {"nvidia.com/gpu": "2"}),
    ({"name": "cpu"}, {}),
    ({"name": "zero", "gpu": {"model": "A100-SXM4-80GB", "count": 0}}, {}),
], ids=["two-gpus", "no-gpu-section", "zero-gpus"])
def test_gpu_resources(pool, expected):
    node = next(_spec([pool]).nodes())
    assert gpu_resources(node) == expected


def test_node_object_from_seed_spec():
    node = next(load_spec(ROOT / "clusters" / "seed-4x2.yaml").nodes())
    obj = node_object(node, now="2026-01-01T00:00:00Z")
    assert obj["metadata"]["name"] == "gpu-0"
    labels = obj["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "gpu-0"
    # mockgpu.io/node: the spec node name, as the kubelet and kind label it (issue 19; it was "true" here)
    assert labels["mockgpu.io/pool"] == "gpu" and labels["mockgpu.io/node"] == "gpu-0"
    assert obj["status"]["capacity"] == obj["status"]["allocatable"] == {
        "cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "100Gi", "nvidia.com/gpu": "2"}
    ready = [c for c in obj["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"


def test_node_taints_and_labels_from_pool():
    pool = {"name": "a", "labels": {"accelerator": "x100"},
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}
    obj = node_object(next(_spec([pool]).nodes()))
    assert obj["spec"]["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert obj["metadata"]["labels"]["accelerator"] == "x100"


def test_kubeconfig_merge_and_remove(tmp_path):
    path = tmp_path / "config"
    other = {"apiVersion": "v1", "kind": "Config", "current-context": "prod",
             "clusters": [{"name": "prod", "cluster": {"server": "https://example.invalid"}}],
             "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "me"}}],
             "users": [{"name": "me", "user": {"token": "t"}}]}
    path.write_text(yaml.safe_dump(other))
    write_kubeconfig(path, "demo", "https://127.0.0.1:1234", "secret", b"PEM")
    data = yaml.safe_load(path.read_text())
    assert data["current-context"] == "mockgpu-demo"
    assert [c["name"] for c in data["clusters"]] == ["prod", "mockgpu-demo"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    write_kubeconfig(path, "demo", "https://127.0.0.1:999", "secret", b"PEM")  # update, not duplicate
    data = yaml.safe_load(path.read_text())
    assert [c["cluster"]["server"] for c in data["clusters"] if c["name"] == "mockgpu-demo"] == [
        "https://127.0.0.1:999"]
    remove_kubeconfig(path, "demo")
    data = yaml.safe_load(path.read_text())
    assert [c["name"] for c in data["clusters"]] == ["prod"] and data["current-context"] == ""
    alone = tmp_path / "alone"
    write_kubeconfig(alone, "demo", "https://127.0.0.1:1", "s", b"PEM")
    remove_kubeconfig(alone, "demo")
    assert not alone.exists()


def test_serving_cert_verifies_for_127_0_0_1(tmp_path):
    cert, key = tmp_path / "c.crt", tmp_path / "c.key"
    ensure_serving_cert(cert, key, "demo")
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(str(cert), str(key))  # key matches certificate
    client = ssl.create_default_context(cafile=str(cert))
    assert client.verify_mode == ssl.CERT_REQUIRED
    before = cert.read_bytes()
    ensure_serving_cert(cert, key, "demo")  # kept: a resumed cluster keeps its kubeconfig valid
    assert cert.read_bytes() == before


def test_home_and_state_layout(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCKGPU_HOME", str(tmp_path))
    assert mockgpu_home() == tmp_path
    state = ClusterState.of("demo")
    assert state.dir == tmp_path / "demo"
    assert state.default_kubeconfig == tmp_path / "demo" / "kubeconfig"
    assert state.pod_logs_dir == tmp_path / "demo" / "logs"
    monkeypatch.delenv("MOCKGPU_HOME")
    assert mockgpu_home() == Path.home() / ".mockgpu"
