"""``mockgpu up``/``down`` with the full control plane, as a user runs them: a bad scheduler config fails in one
line before anything starts; ``up`` returns with every node Ready; no process outlives ``down`` or a kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[2]
WORKSHOP = ROOT / "clusters" / "workshop.yaml"
pytestmark = pytest.mark.timeout(120)


def mockgpu(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MOCKGPU_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mockgpu.cli", *args], env=env, capture_output=True, text=True,
                          timeout=90)


def processes_under(path: Path) -> dict[int, str]:
    """Live (non-zombie) processes whose command line or working dir (a container's) is under ``path``."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(d / "cwd")
        except OSError:
            continue
        if (str(path) in cmd or cwd.startswith(str(path))) and state != "Z":
            out[int(d.name)] = cmd
    return out


def wait_gone(path: Path, timeout: float = 15.0) -> dict[int, str]:
    deadline = time.monotonic() + timeout
    while (left := processes_under(path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.fixture
def home(tmp_path: Path):
    yield tmp_path
    for pid in processes_under(tmp_path):  # only what this test started (its own temp dir)
        os.kill(pid, signal.SIGKILL)


def test_invalid_scheduler_config_fails_in_one_line_before_anything_starts(home: Path) -> None:
    bad = home / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                   "- schedulerName: x\n  plugins:\n    score:\n      enabled:\n      - name: NoSuchPlugin\n")
    r = mockgpu(home, "up", "--spec", str(WORKSHOP), "--scheduler-config", str(bad))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mockgpu: ") and "profiles[0].plugins.score.enabled[0]" in lines[0]
    assert not (home / "workshop").exists()
    assert processes_under(home) == {}


def test_up_ready_then_down_leaves_no_process(home: Path) -> None:
    up = mockgpu(home, "up", "--spec", str(WORKSHOP))
    assert up.returncode == 0, up.stderr
    core = client.CoreV1Api(config.new_client_from_config(config_file=up.stdout.strip().splitlines()[-1]))
    nodes = core.list_node().items
    assert sorted(n.metadata.name for n in nodes) == ["mig-0", "shared-0", "whole-0"]
    for n in nodes:  # up waited for Ready and for the plugins' resources
        assert any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
        assert any(k.startswith("nvidia.com/") and v != "0" for k, v in n.status.allocatable.items())
    core.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper"},
        "spec": {"containers": [{"name": "main", "image": "x", "command": ["sleep", "120"],
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    deadline = time.monotonic() + 30
    while core.read_namespaced_pod("sleeper", "default").status.phase != "Running":
        assert time.monotonic() < deadline, "sleeper not Running"
        time.sleep(0.1)
    procs = processes_under(home).values()
    assert len([c for c in procs if "device-plugin" in c]) == 3 and any("sleep 120" in c for c in procs)
    pid = json.loads((home / "workshop" / "endpoint.json").read_text())["pid"]
    down = mockgpu(home, "down", "--name", "workshop")
    assert down.returncode == 0, down.stderr
    assert wait_gone(home, 5) == {}
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]


ONE_NODE = """apiVersion: mockgpu.io/v1alpha1
kind: ClusterSpec
metadata: {name: one}
spec:
  nodePools:
  - {name: gpu, count: 1, cpu: "8", memory: 64Gi, gpu: {model: A100-SXM4-80GB, count: 2}}
"""


def test_device_plugin_ends_with_a_killed_daemon(home: Path) -> None:
    (home / "one.yaml").write_text(ONE_NODE)
    up = mockgpu(home, "up", "--spec", str(home / "one.yaml"))
    assert up.returncode == 0, up.stderr
    pid = json.loads((home / "one" / "endpoint.json").read_text())["pid"]
    assert [c for c in processes_under(home).values() if "device-plugin" in c]
    os.kill(pid, signal.SIGKILL)
    assert wait_gone(home, 10) == {}
    assert mockgpu(home, "down", "--name", "one").returncode == 0
