"""Preflight: without Docker, is_available() answers in one line naming Docker; other checks each one line."""

from __future__ import annotations

import os
import stat

import pytest

from mockgpu.backends.kind import KindBackend
from mockgpu.backends.kind.preflight import inotify_check, memory_check, preflight
from mockgpu.backends.kind.run import Result, Runner
from mockgpu.backends.kubeconfig import KubeconfigBackend

from .conftest import FakeRunner


def _tool(bindir, name, script):
    path = bindir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_no_docker_on_path_is_one_line_naming_docker(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no docker, kind or kubectl
    msg = KindBackend().is_available()
    assert msg is not None and "\n" not in msg
    assert msg.startswith("Docker is not installed") and "install" in msg


def test_docker_without_daemon_is_one_line_with_the_fix(tmp_path, monkeypatch):
    _tool(tmp_path, "docker", 'echo "Cannot connect to the Docker daemon" >&2; exit 1\n')
    monkeypatch.setenv("PATH", str(tmp_path))
    msg = KindBackend().is_available()
    assert msg is not None and "\n" not in msg
    assert "Docker daemon is not reachable" in msg and "start Docker" in msg


def test_missing_kind_is_named_once_docker_works(tmp_path, monkeypatch):
    _tool(tmp_path, "docker", 'echo 28.2.2\n')
    monkeypatch.setenv("PATH", str(tmp_path))
    assert KindBackend().is_available() == "`kind` is not on PATH: install it (https://kind.sigs.k8s.io/docs/user/quick-start/)"


def test_all_tools_present_reports_versions(tmp_path, monkeypatch):
    _tool(tmp_path, "docker", 'echo 28.2.2\n')
    _tool(tmp_path, "kind", 'echo "kind v0.31.0 go1.25.5 linux/amd64"\n')
    _tool(tmp_path, "kubectl", 'echo "Client Version: v1.35.0"\n')
    monkeypatch.setenv("PATH", str(tmp_path))
    assert KindBackend().is_available() is None
    checks = {c.name: c for c in preflight(Runner(), nodes=4)}
    assert checks["docker"].message == "Docker Engine 28.2.2"
    assert checks["kind"].message == "kind v0.31.0"
    assert checks["kubectl"].message == "kubectl v1.35.0"


def test_helm_is_checked_only_for_fake_gpu_operator():
    runner = FakeRunner(lambda a, i: Result(0, "v3.18.4+gabc", ""), tools={"docker", "kind", "kubectl"})
    assert "helm" not in {c.name for c in preflight(runner, nodes=1)}
    helm = next(c for c in preflight(runner, nodes=1, helm=True) if c.name == "helm")
    assert not helm.ok and helm.blocking and "`helm` is not on PATH" in helm.message


def _proc(tmp_path, watches, instances, avail_kb):
    inotify = tmp_path / "sys/fs/inotify"
    inotify.mkdir(parents=True)
    (inotify / "max_user_watches").write_text(f"{watches}\n")
    (inotify / "max_user_instances").write_text(f"{instances}\n")
    (tmp_path / "meminfo").write_text(f"MemTotal: 99999999 kB\nMemAvailable: {avail_kb} kB\n")
    return tmp_path


@pytest.mark.parametrize(("watches", "instances", "ok"), [
    (524288, 512, True), (8192, 512, False), (524288, 128, False),
], ids=["kind-recommended", "ubuntu-default-watches", "ubuntu-default-instances"])
def test_inotify_limits(tmp_path, watches, instances, ok):
    check = inotify_check(_proc(tmp_path, watches, instances, 1))
    assert check.ok is ok and not check.blocking
    if not ok:
        assert "sysctl fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=512" in check.message


@pytest.mark.parametrize(("avail_gib", "nodes", "ok"), [(16, 4, True), (3, 4, False)], ids=["plenty", "short"])
def test_memory_warning(tmp_path, avail_gib, nodes, ok):
    check = memory_check(nodes, _proc(tmp_path, 524288, 512, avail_gib * 1024 * 1024))
    assert check.ok is ok and not check.blocking and "\n" not in check.message


def test_kubeconfig_backend_needs_kubectl(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert KubeconfigBackend().is_available() == "`kubectl` is not on PATH: install it (https://kubernetes.io/docs/tasks/tools/)"


def test_this_machine_answers_without_raising():
    """Whatever this machine has, the answer is None or exactly one line."""
    msg = KindBackend().is_available()
    assert msg is None or (msg and "\n" not in msg), os.environ.get("PATH")
