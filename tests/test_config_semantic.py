"""Semantic spec checks that need the GPU catalog: models, MIG layouts, migStrategy single."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from mockgpu.config.clusterspec import load_spec, parse_spec
from mockgpu.errors import ConfigError

BASE = {
    "apiVersion": "mockgpu.io/v1alpha1",
    "kind": "ClusterSpec",
    "metadata": {"name": "sem"},
    "spec": {"nodePools": [
        {"name": "cpu"},
        {"name": "gpu", "gpu": {"model": "A100-SXM4-80GB", "count": 2}},
    ]},
}


def _with_gpu(**gpu) -> dict:
    doc = copy.deepcopy(BASE)
    doc["spec"]["nodePools"][1]["gpu"].update(gpu)
    return doc


def _mig(devices, layout, enabled=True) -> dict:
    return {"devices": devices, "mig-enabled": enabled, "mig-devices": layout}


CASES = [
    ("unknown-model", _with_gpu(model="V100"), "spec.nodePools[1].gpu.model",
     "unknown GPU model 'V100' (known models: A100-SXM4-40GB, A100-SXM4-80GB, H100-SXM5-80GB, H100-NVL, H200, "
     "A30, L4, T4)"),
    ("4g-twice", _with_gpu(mig=[_mig([1], {"4g.40gb": 2})]), "spec.nodePools[1].gpu.mig[0]",
     "GPU 1 (A100-SXM4-80GB): cannot place 4g.40gb #2: no free placement (slots 0-3 taken by 4g.40gb #1)"),
    ("later-entry-wins", _with_gpu(mig=[_mig("all", {"1g.10gb": 7}), _mig([0], {"7g.80gb": 1, "1g.10gb": 1})]),
     "spec.nodePools[1].gpu.mig[1]",
     "GPU 0 (A100-SXM4-80GB): cannot place 1g.10gb #1: no free placement (slots 0-7 taken by 7g.80gb #1)"),
    ("wrong-profile-for-model", _with_gpu(mig=[_mig("all", {"1g.5gb": 7})]), "spec.nodePools[1].gpu.mig[0]",
     "GPU 0 (A100-SXM4-80GB): no MIG profile '1g.5gb' (profiles: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, "
     "4g.40gb, 7g.80gb)"),
    ("mig-on-l4", _with_gpu(model="L4", mig=[_mig("all", {"1g.6gb": 1})]), "spec.nodePools[1].gpu.mig[0]",
     "GPU 0 (L4): MIG is not supported on this model"),
    ("single-mixed-profiles",
     _with_gpu(mig=[_mig([0], {"1g.10gb": 7}), _mig([1], {"3g.40gb": 2})],
               devicePluginConfig={"flags": {"migStrategy": "single"}}),
     "spec.nodePools[1].gpu.devicePluginConfig.flags.migStrategy",
     "migStrategy 'single' needs every GPU of the node sliced into instances of one MIG profile; found 1g.10gb, "
     "3g.40gb (GPU 0: 1g.10gb; GPU 1: 3g.40gb) (use 'mixed')"),
    ("single-partly-sliced",
     _with_gpu(mig=[_mig([0], {"1g.10gb": 7})], devicePluginConfig={"flags": {"migStrategy": "single"}}),
     "spec.nodePools[1].gpu.devicePluginConfig.flags.migStrategy",
     "migStrategy 'single' needs every GPU of the node sliced into instances of one MIG profile; "
     "GPU 1 has MIG disabled (use 'mixed')"),
]


@pytest.mark.parametrize("doc,path,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_semantic_errors(doc, path, message):
    with pytest.raises(ConfigError) as exc:
        parse_spec(doc, "spec.yaml")
    assert (exc.value.source, exc.value.path, exc.value.detail) == ("spec.yaml", path, message)
    assert str(exc.value) == f"spec.yaml: {path}: {message}"
    assert exc.value.exit_code == 2


VALID = [
    ("whole-gpus", _with_gpu()),
    ("single-uniform", _with_gpu(mig=[_mig("all", {"1g.10gb": 7})],
                                 devicePluginConfig={"flags": {"migStrategy": "single"}})),
    ("single-without-mig", _with_gpu(devicePluginConfig={"flags": {"migStrategy": "single"}})),
    ("mig-disabled-by-later-entry", _with_gpu(model="L4", mig=[_mig("all", {}, enabled=False)])),
    ("alias", _with_gpu(model="A100-80GB")),
]


@pytest.mark.parametrize("doc", [c[1] for c in VALID], ids=[c[0] for c in VALID])
def test_valid_specs(doc):
    parse_spec(doc, "spec.yaml")


@pytest.mark.parametrize("path", sorted(Path(__file__).parent.parent.glob("clusters/*.yaml")),
                         ids=lambda p: p.name)
def test_shipped_specs_pass(path):
    load_spec(path)
