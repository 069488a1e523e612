"""``mockgpu up/down/status`` as a user runs them: a detached daemon, kubeconfig printed last, resume after
kill -9, nothing left behind after ``down``."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"  # zombie = gone
    except (ProcessLookupError, FileNotFoundError):
        return False


@pytest.fixture
def home(tmp_path):
    """MOCKGPU_HOME for one test; any daemon it started is stopped (by its own pid) at teardown."""
    yield tmp_path
    for endpoint in tmp_path.glob("*/endpoint.json"):
        pid = json.loads(endpoint.read_text()).get("pid")
        if pid and _alive(pid):
            subprocess.run([sys.executable, "-m", "mockgpu.cli", "down", "--name", endpoint.parent.name],
                           env=_env(tmp_path), capture_output=True, timeout=30)
        if pid and _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "MOCKGPU_HOME": str(home), "PYTHONPATH": str(ROOT)}


def mockgpu(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mockgpu.cli", *args], env=_env(home), capture_output=True,
                          text=True, timeout=60)


def _core(kubeconfig: str) -> tuple[client.ApiClient, client.CoreV1Api]:
    api = config.new_client_from_config(config_file=kubeconfig)
    return api, client.CoreV1Api(api)


def test_up_kill9_resume_down(home):
    up = mockgpu(home, "up", "--spec", str(SEED))
    assert up.returncode == 0, up.stderr
    kubeconfig = up.stdout.strip().splitlines()[-1]
    assert kubeconfig == str(home / "seed-4x2" / "kubeconfig")
    assert stat.S_IMODE(os.stat(kubeconfig).st_mode) == 0o600
    api, core = _core(kubeconfig)
    assert len(core.list_node().items) == 4
    core.create_namespaced_config_map("default", {"metadata": {"name": "survivor"}, "data": {"k": "v"}})
    api.close()

    pid = json.loads((home / "seed-4x2" / "endpoint.json").read_text())["pid"]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    stopped = [ln for ln in mockgpu(home, "status").stdout.splitlines() if ln.startswith("seed-4x2")]
    assert stopped and "stopped" in stopped[0]  # the stale pid is not mistaken for a running server

    again = mockgpu(home, "up", "--name", "seed-4x2")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().splitlines()[-1] == kubeconfig
    api, core = _core(kubeconfig)
    assert core.read_namespaced_config_map("survivor", "default").data == {"k": "v"}
    assert len(core.list_node().items) == 4
    api.close()

    status = mockgpu(home, "status")
    assert status.returncode == 0
    row = [ln for ln in status.stdout.splitlines() if ln.startswith("seed-4x2")]
    assert row and "running" in row[0] and "https://127.0.0.1:" in row[0]

    new_pid = json.loads((home / "seed-4x2" / "endpoint.json").read_text())["pid"]
    down = mockgpu(home, "down", "--name", "seed-4x2")
    assert down.returncode == 0, down.stderr
    assert not (home / "seed-4x2").exists()
    assert not _alive(new_pid)
    assert mockgpu(home, "status").stdout.strip() == "no clusters"


def test_up_when_running_resumes_same_endpoint(home):
    first = mockgpu(home, "up", "--name", "tiny")
    assert first.returncode == 0, first.stderr
    second = mockgpu(home, "up", "--name", "tiny")
    assert second.returncode == 0
    assert first.stdout.splitlines()[0].split(" at ")[1] == second.stdout.splitlines()[0].split(" at ")[1]
    assert mockgpu(home, "down").returncode == 0  # the only cluster: --name may be left out


@pytest.mark.parametrize("args,needle", [
    (["up", "--spec", "/nonexistent.yaml"], "cannot read"),
    (["up", "--device-plugin", "fake-gpu-operator"], "use --backend kind"),
    (["down", "--name", "ghost"], "no embedded cluster named 'ghost'"),
], ids=["missing-spec", "wrong-device-plugin", "down-unknown"])
def test_bad_input_is_one_line_exit_2(home, args, needle):
    out = mockgpu(home, *args)
    assert out.returncode == 2
    assert needle in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not list(home.glob("*/endpoint.json"))


def test_dry_run_changes_nothing(home):
    out = mockgpu(home, "up", "--spec", str(SEED), "--dry-run")
    assert out.returncode == 0
    assert "would create" in out.stdout
    assert not (home / "seed-4x2").exists()


def test_embedded_cluster_as_a_daemon_from_a_threaded_process(tmp_path):
    """With other threads alive (a notebook kernel) the daemon is started as a subprocess, not forked."""
    import threading

    from mockgpu.backends.embedded import EmbeddedCluster

    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)
    helper.start()
    try:
        c = EmbeddedCluster(SEED, home=tmp_path, in_process=False)
        with c:
            api = c.api_client()
            assert len(client.CoreV1Api(api).list_node().items) == 4
            api.close()
            pid = json.loads((c.state.dir / "endpoint.json").read_text())["pid"]
            assert pid != os.getpid()
        assert not _alive(pid)
        c.delete()
        assert not c.state.dir.exists()
    finally:
        stop.set()
        helper.join()


def test_kubeconfig_elsewhere_is_merged_and_cleaned(home):
    kc = home / "kube" / "config"
    kc.parent.mkdir()
    kc.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster: {server: https://example.invalid}\n"
                  "contexts: []\nusers: []\ncurrent-context: prod\n")
    up = mockgpu(home, "up", "--name", "side", "--kubeconfig", str(kc))
    assert up.returncode == 0, up.stderr
    assert up.stdout.strip().splitlines()[-1] == str(kc)
    api, core = _core(str(kc))
    assert core.list_namespace().items
    api.close()
    assert mockgpu(home, "down", "--name", "side").returncode == 0
    text = kc.read_text()
    assert "prod" in text and "mockgpu-side" not in text
