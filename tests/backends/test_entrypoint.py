"""The DaemonSet's shell entrypoint, run for real with /bin/sh: node-name lookup through the
projected name map, the exact device-plugin command line, and the one-line error for an unmapped node."""

from __future__ import annotations

import pytest

from mockgpu.backends.base import UpOptions
from mockgpu.backends.kind.render import cluster_manifests

from .conftest import run_entrypoint


def _run(workshop, tmp_path, node_name):
    ds = cluster_manifests(UpOptions(spec=workshop, name="workshop"))[-1]
    script = ds["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    return run_entrypoint(script, tmp_path, {"workshop-worker2": "mig-0"}, node_name)


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
