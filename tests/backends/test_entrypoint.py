"""The DaemonSet's shell entrypoint, run for real with /bin/sh: node-name lookup through the
projected name map, the exact device-plugin command line, and the one-line error for an unmapped node."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from mockgpu.backends.base import UpOptions
from mockgpu.backends.kind.render import cluster_manifests


def _script(workshop, root):
    ds = cluster_manifests(UpOptions(spec=workshop, name="workshop"))[-1]
    script = ds["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    return script.replace("/etc/mockgpu", str(root / "etc-mockgpu"))  # the projected volume, here


def _run(workshop, tmp_path, node_name):
    cfg = tmp_path / "etc-mockgpu"
    (cfg / "nodes").mkdir(parents=True)
    (cfg / "spec.yaml").write_text("x")
    (cfg / "nodes" / "workshop-worker2").write_text("mig-0")  # as the ConfigMap projects it (no newline)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "mockgpu"
    fake.write_text('#!/bin/sh\nprintf "%s|" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "NODE_NAME": node_name}
    return subprocess.run(["/bin/sh", "-c", _script(workshop, tmp_path)], env=env, capture_output=True, text=True,
                          timeout=30)


def test_mapped_node_runs_the_device_plugin_for_its_spec_node(workshop, tmp_path):
    proc = _run(workshop, tmp_path, "workshop-worker2")
    assert proc.returncode == 0, proc.stderr
    cfg = tmp_path / "etc-mockgpu"
    assert proc.stdout.split("|")[:-1] == [
        "device-plugin", "--spec", f"{cfg}/spec.yaml", "--node", "mig-0",
        "--plugin-dir", "/var/lib/kubelet/device-plugins", "--driver-dir", "/var/lib/mockgpu/driver"]


@pytest.mark.parametrize("node_name", ["workshop-control-plane", ""], ids=["unmapped", "empty"])
def test_unmapped_node_exits_with_one_line(workshop, tmp_path, node_name):
    proc = _run(workshop, tmp_path, node_name)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == f"mockgpu: node {node_name} is not in ConfigMap mockgpu-node-names\n"
