"""Cluster spec: which model (device plugin, DRA driver, both) hands out a pool's GPUs. Bad input names
the field; the device plugin then advertises only its GPUs."""

from __future__ import annotations

import pytest

from mockgpu.config.clusterspec import parse_spec
from mockgpu.config.inventory import device_plugin_inventory, dra_gpus
from mockgpu.deviceplugin.resources import resource_managers
from mockgpu.errors import ConfigError

A100 = "A100-SXM4-80GB"
MIG7 = [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]


def _spec(gpu: dict):  # noqa: ANN202
    return parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "t"},
                       "spec": {"nodePools": [{"name": "a", "gpu": {"model": A100, "count": 4, **gpu}}]}}, "x.yaml")


GOOD = [
    # (id, gpu fields, DRA GPUs, device plugin GPUs)
    ("default", {}, [], [0, 1, 2, 3]),
    ("device-plugin", {"management": "devicePlugin"}, [], [0, 1, 2, 3]),
    ("dra", {"management": "dra"}, [0, 1, 2, 3], []),
    ("both", {"management": "both", "dra": {"gpus": [3, 2]}}, [2, 3], [0, 1]),
    ("both-mig-on-dp-gpu", {"management": "both", "dra": {"gpus": [1]}, "mig": MIG7}, [1], [0, 2, 3]),
]


@pytest.mark.parametrize(("gpu", "dra", "dp"), [r[1:] for r in GOOD], ids=[r[0] for r in GOOD])
def test_management_splits_gpus(gpu: dict, dra: list[int], dp: list[int]) -> None:
    spec = _spec(gpu)
    assert dra_gpus(spec, "a-0") == dra
    inv = device_plugin_inventory(spec, "a-0")
    assert [g.index for g in inv.gpus] == dp
    advertised = {d.gpu_index for rm in resource_managers(inv, spec.node("a-0").gpu.devicePluginConfig)
                  for d in rm.devices()}
    assert advertised == set(dp)


BAD = [
    # (id, gpu fields, field path, words)
    ("unknown-mode", {"management": "kubelet"}, "spec.nodePools[0].gpu.management", "Input should be"),
    ("dra-without-both", {"management": "dra", "dra": {"gpus": [0]}}, "spec.nodePools[0].gpu.dra",
     "only allowed with management 'both'"),
    ("dra-on-default", {"dra": {"gpus": [0]}}, "spec.nodePools[0].gpu.dra", "only allowed with management 'both'"),
    ("both-without-dra", {"management": "both"}, "spec.nodePools[0].gpu.dra", "required with management 'both'"),
    ("both-empty", {"management": "both", "dra": {"gpus": []}}, "spec.nodePools[0].gpu.dra.gpus",
     "use management 'devicePlugin'"),
    ("both-all", {"management": "both", "dra": {"gpus": [0, 1, 2, 3]}}, "spec.nodePools[0].gpu.dra.gpus",
     "use management 'dra'"),
    ("out-of-range", {"management": "both", "dra": {"gpus": [0, 4]}}, "spec.nodePools[0].gpu.dra.gpus[1]",
     "GPU index 4 out of range 0..3"),
    ("duplicate", {"management": "both", "dra": {"gpus": [1, 1]}}, "spec.nodePools[0].gpu.dra.gpus[1]",
     "duplicate GPU index 1"),
    ("unknown-dra-key", {"management": "both", "dra": {"gpus": [1], "all": True}}, "spec.nodePools[0].gpu.dra.all",
     "unknown field"),
    ("mig-on-dra-gpu", {"management": "both", "dra": {"gpus": [0]}, "mig": MIG7}, "spec.nodePools[0].gpu.mig[0]",
     "GPU 0 is managed by the DRA driver"),
    ("mig-on-dra-pool", {"management": "dra", "mig": MIG7}, "spec.nodePools[0].gpu.mig[0]",
     "GPU 0 is managed by the DRA driver"),
]


@pytest.mark.parametrize(("gpu", "path", "words"), [r[1:] for r in BAD], ids=[r[0] for r in BAD])
def test_bad_management_names_the_field(gpu: dict, path: str, words: str) -> None:
    with pytest.raises(ConfigError) as ei:
        _spec(gpu)
    assert ei.value.path == path
    assert words in str(ei.value)
