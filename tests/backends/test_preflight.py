"""Preflight: without Docker, is_available() answers in one line naming Docker; other checks each one line."""

from __future__ import annotations

import os
import stat

import pytest

from mockgpu.backends.common.run import Result, Runner
from mockgpu.backends.kind import KindBackend
from mockgpu.backends.kind import preflight as preflight_module
from mockgpu.backends.kind.images import NODE_IMAGES, NodeImage
from mockgpu.backends.kind.preflight import (
    inotify_check,
    kind_check,
    memory_check,
    missing_capabilities,
    preflight,
    privileged_check,
)
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


INSTALL = "(https://kind.sigs.k8s.io/docs/user/quick-start/)"
LOCAL = NodeImage("", "v0.33.0", local="mockgpu/kind-node:v1.37.2")


@pytest.mark.parametrize(("output", "image", "ok", "blocking", "message"), [
    ("kind v0.31.0 go1.25.5 linux/amd64", "1.35", True, True, "kind v0.31.0"),
    ("kind v0.33.0 go1.26.8 linux/amd64", "1.35", True, True, "kind v0.33.0"),
    ("kind v1.0.0 go1.27 darwin/arm64", "1.36", True, True, "kind v1.0.0"),
    ("kind v0.29.0 go1.24.2 linux/amd64", "1.35", False, True,
     f"kind v0.29.0 is older than v0.31.0, which published the pinned node image kindest/node:v1.35.0: "
     f"install kind v0.31.0 or newer {INSTALL}"),
    ("kind v0.31.0 go1.25.5 linux/amd64", "1.36", False, True,
     f"kind v0.31.0 is older than v0.32.0, which published the pinned node image kindest/node:v1.36.1: "
     f"install kind v0.32.0 or newer {INSTALL}"),
    ("kind v0.31.0-alpha+abc go1.25 linux/amd64", "1.35", False, True,  # a build from before v0.31.0 shipped
     f"kind v0.31.0-alpha+abc is older than v0.31.0, which published the pinned node image kindest/node:v1.35.0: "
     f"install kind v0.31.0 or newer {INSTALL}"),
    ("kind v0.32.0-alpha.12+f00 go1.25 linux/amd64", "1.35", True, True, "kind v0.32.0-alpha.12+f00"),
    ("kind v0.32.0 go1.25.5 linux/amd64", LOCAL, False, True,
     f"kind v0.32.0 is older than v0.33.0, which the local node image mockgpu/kind-node:v1.37.2 is assumed to "
     f"need: install kind v0.33.0 or newer {INSTALL}"),
    ("kind v0.33.0 go1.26.8 linux/amd64", LOCAL, True, True, "kind v0.33.0"),
    ("kind version devel", "1.35", False, False,
     "cannot read the kind version from `kind version` (kind version devel); the node image needs kind v0.31.0 "
     "or newer"),
    ("kind v0.20.0 go1.20 linux/amd64", None, True, True, "kind v0.20.0"),  # down/status boot no node: no minimum
], ids=["same", "newer", "major", "older", "older-than-1.36", "alpha-before-release", "alpha-after-release",
        "older-than-local", "local", "unparseable-warns", "no-image"])
def test_kind_version_against_the_node_image(output, image, ok, blocking, message):
    runner = FakeRunner(lambda a, i: Result(0, output + "\n", ""))
    check = kind_check(runner, NODE_IMAGES[image] if isinstance(image, str) else image)
    assert (check.ok, check.blocking, check.message) == (ok, blocking, message)


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


@pytest.mark.parametrize(("capbnd", "missing"), [
    ("000001ffffffffff", []),
    ("000001fffeffffff", ["CAP_SYS_RESOURCE"]),  # this sandbox
    ("000001fffedfffff", ["CAP_SYS_ADMIN", "CAP_SYS_RESOURCE"]),
    ("000003ffffffffff", []),  # a newer kernel's extra bits are not ours to ask for
], ids=["complete", "no-sys-resource", "two-missing", "newer-kernel"])
def test_missing_capabilities_read_from_the_bounding_set(tmp_path, capbnd, missing):
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "status").write_text(f"Name:\tpython\nCapBnd:\t{capbnd}\nCapAmb:\t0\n")
    assert missing_capabilities(tmp_path) == missing


@pytest.mark.parametrize(("missing", "runtime", "ok"), [
    ([], "runc", True),
    (["CAP_SYS_RESOURCE"], "runc", False),
    (["CAP_SYS_RESOURCE"], "mockgpu-runc", True),
], ids=["complete", "short-plain-runc", "short-capfilter"])
def test_privileged_containers_need_the_capfilter_runtime_where_capabilities_are_missing(
        monkeypatch, missing, runtime, ok):
    monkeypatch.setattr(preflight_module, "missing_capabilities", lambda proc=None: missing)
    runner = FakeRunner(lambda args, _input: Result(0, runtime + "\n", ""))
    check = privileged_check(runner)
    assert check.ok is ok and "\n" not in check.message
    if not ok:
        assert check.blocking and "CAP_SYS_RESOURCE" in check.message
        assert "scripts/docker-engine capfilter" in check.message
