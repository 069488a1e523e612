"""GFD-style node labels per sharing configuration."""

from __future__ import annotations

import pytest
from dp_inventories import make_gpu, mig_node, plain_node, uniform_mig_node, whole_node

from mockgpu.config.nvidia import DevicePluginConfig
from mockgpu.deviceplugin.labels import gfd_labels
from mockgpu.gpu.inventory import NodeInventory


def cfg(**data) -> DevicePluginConfig:
    return DevicePluginConfig.model_validate({"version": "v1", **data})


def ts(replicas: int, name: str = "nvidia.com/gpu", **flags) -> dict:
    return {"sharing": {"timeSlicing": {**flags, "resources": [{"name": name, "replicas": replicas}]}}}


# (id, inventory, config, expected subset of labels, keys that must be absent)
CASES = [
    ("whole", whole_node(), cfg(), {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "4",
        "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true", "nvidia.com/gpu.family": "hopper",
    }, ["nvidia.com/mig.strategy"]),
    ("time-slicing", plain_node(), cfg(**ts(4)), {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-SHARED", "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.count": "2", "nvidia.com/gpu.sharing-strategy": "time-slicing",
    }, []),
    ("time-slicing-renamed", plain_node(), cfg(**ts(4, renameByDefault=True)), {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.replicas": "4",
    }, []),
    ("mig-mixed", mig_node(), cfg(flags={"migStrategy": "mixed"}), {
        "nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "0",
        "nvidia.com/mig-1g.10gb.count": "8", "nvidia.com/mig-1g.10gb.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
        "nvidia.com/mig-1g.10gb.slices.gi": "1", "nvidia.com/mig-1g.10gb.slices.ci": "1",
        "nvidia.com/mig-1g.10gb.replicas": "1", "nvidia.com/mig-3g.40gb.count": "1",
        "nvidia.com/mig-3g.40gb.slices.gi": "3", "nvidia.com/mig-2g.20gb.count": "1",
    }, []),
    ("mig-mixed-shared-profile", mig_node(), cfg(flags={"migStrategy": "mixed"}, **ts(2, "nvidia.com/mig-1g.10gb")), {
        "nvidia.com/mig-1g.10gb.replicas": "2",
        "nvidia.com/mig-1g.10gb.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-SHARED",
        "nvidia.com/mig-3g.40gb.replicas": "1",
    }, []),
    ("mig-single", uniform_mig_node(), cfg(flags={"migStrategy": "single"}), {
        "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
        "nvidia.com/gpu.count": "14", "nvidia.com/gpu.slices.gi": "1",
    }, ["nvidia.com/mig-1g.10gb.count"]),
    ("mig-single-invalid", mig_node(), cfg(flags={"migStrategy": "single"}), {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-INVALID", "nvidia.com/gpu.count": "0",
        "nvidia.com/gpu.replicas": "0", "nvidia.com/gpu.memory": "0",
    }, []),
    ("no-mig-capability", NodeInventory("c", "t4-0", (make_gpu("t4-0", 0, "T4"),)), cfg(), {
        "nvidia.com/mig.capable": "false", "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.family": "turing",
    }, []),
]


@pytest.mark.parametrize(("inv", "config", "expected", "absent"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gfd_labels(inv, config, expected, absent) -> None:
    labels = gfd_labels(inv, config)
    assert {k: labels.get(k) for k in expected} == expected
    for k in absent:
        assert k not in labels


def test_mig_memory_and_sms_come_from_the_instances() -> None:
    inv = mig_node()
    labels = gfd_labels(inv, cfg(flags={"migStrategy": "mixed"}))
    m = next(m for m in inv.gpus[1].mig if m.profile == "3g.40gb")
    assert labels["nvidia.com/mig-3g.40gb.memory"] == str(m.memory_mib)
    assert labels["nvidia.com/mig-3g.40gb.multiprocessors"] == str(m.sm_count)


def test_no_gpus_no_labels() -> None:
    assert gfd_labels(NodeInventory("c", "cpu-0", ()), cfg()) == {}


def test_label_values_are_valid() -> None:
    import re

    valid = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
    for c in CASES:
        for k, v in gfd_labels(c[1], c[2]).items():
            assert len(v) <= 63 and valid.match(v), (k, v)
