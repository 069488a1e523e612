"""fake-gpu-operator Helm values from a spec, and the list of features it cannot express."""

from __future__ import annotations

import pytest

from mockgpu.backends.kind import fgo

from .conftest import ROOT, spec_at


def test_workshop_values_are_whole_gpus_per_pool(workshop):
    values = fgo.fgo_values(workshop)
    topo = values["topology"]
    assert topo["nodePoolLabelKey"] == "run.ai/simulated-gpu-node-pool"
    assert topo["migStrategy"] == "none"
    assert topo["nodePools"] == {
        "whole": {"gpuProduct": "NVIDIA-H100-80GB-HBM3", "gpuCount": 4, "gpuMemory": 81559},
        "mig": {"gpuProduct": "NVIDIA-A100-SXM4-80GB", "gpuCount": 2, "gpuMemory": 81920},
        "shared": {"gpuProduct": "NVIDIA-A100-SXM4-80GB", "gpuCount": 2, "gpuMemory": 81920},
    }


@pytest.mark.parametrize(("spec", "expected"), [
    ("workshop", ["whole: NVLink", "whole: per-GPU NUMA", "mig: MIG layout", "shared: time-slicing (replicas 4)"]),
    ("seed-4x2", ["gpu: NVLink"]),
    ("empty", []),
], ids=["workshop", "seed-4x2", "empty"])
def test_unsupported_features_are_named(spec, expected):
    notes = fgo.unsupported_features(spec_at(ROOT / "clusters" / f"{spec}.yaml"))
    assert len(notes) == len(expected)
    for note, want in zip(notes, expected, strict=True):
        assert f"pool {want}" in note


def test_helm_install_is_pinned_and_in_the_namespace_nvidia_smi_expects():
    args = fgo.helm_install_args("/tmp/v.yaml", "kind-x")
    assert args[:5] == ["helm", "upgrade", "--install", "gpu-operator", fgo.CHART]
    assert args[args.index("--version") + 1] == fgo.CHART_VERSION != "latest"
    assert args[args.index("--namespace") + 1] == "gpu-operator"
