"""End to end on a real kind cluster: needs a Docker engine, kind and kubectl (skipped elsewhere).

Creates the workshop cluster, checks every GPU node's allocatable, deletes it again. Slow (minutes).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from mockgpu.backends.base import UpOptions
from mockgpu.backends.kind import KindBackend

from .conftest import ROOT, spec_at

pytestmark = pytest.mark.kind


@pytest.fixture(scope="module")
def kind_backend():
    problem = KindBackend().is_available()
    if problem:
        pytest.skip(f"kind end-to-end needs Docker, kind and kubectl: {problem}")
    return KindBackend()


@pytest.mark.timeout(1500)
def test_workshop_cluster_advertises_gpus(kind_backend, tmp_path):
    spec = spec_at(ROOT / "clusters" / "workshop.yaml")
    name = "mockgpu-e2e"
    info = kind_backend.up(UpOptions(spec=spec, name=name, kubeconfig=tmp_path / "kubeconfig"))
    try:
        out = subprocess.run(["kubectl", "--kubeconfig", str(info.kubeconfig), "get", "nodes", "-o", "json"],
                             capture_output=True, text=True, check=True, timeout=60).stdout
        alloc = {n["metadata"]["labels"].get("mockgpu.io/node"): n["status"]["allocatable"]
                 for n in json.loads(out)["items"]}
        assert int(alloc["whole-0"]["nvidia.com/gpu"]) == 4
        assert int(alloc["shared-0"]["nvidia.com/gpu"]) == 8
        assert int(alloc["mig-0"]["nvidia.com/mig-1g.10gb"]) == 8
    finally:
        kind_backend.down(name)
