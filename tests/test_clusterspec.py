"""Cluster spec loading: the shipped specs load, and bad input names file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockgpu.config import load_spec
from mockgpu.config.clusterspec import parse_spec
from mockgpu.errors import ConfigError

CLUSTERS = Path(__file__).resolve().parents[1] / "clusters"


def test_seed_cluster_has_four_nodes_with_two_gpus_each() -> None:
    spec = load_spec(CLUSTERS / "seed-4x2.yaml")
    nodes = list(spec.nodes())
    assert [n.name for n in nodes] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert all(n.gpu is not None and n.gpu.count == 2 for n in nodes)


def test_workshop_pools_and_sharing() -> None:
    spec = load_spec(CLUSTERS / "workshop.yaml")
    assert [n.name for n in spec.nodes()] == ["whole-0", "mig-0", "shared-0"]
    mig = spec.node("mig-0").gpu
    assert mig is not None and mig.devicePluginConfig.flags.migStrategy == "mixed"
    assert mig.mig_layout_of(0) == {"1g.10gb": 7}
    assert mig.mig_layout_of(1) == {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}
    shared = spec.node("shared-0").gpu
    assert shared is not None and shared.devicePluginConfig.replicas_for("nvidia.com/gpu") == 4
    assert spec.node("whole-0").gpu.numa_of(3) == 1  # type: ignore[union-attr]


def _base(pool: dict) -> dict:
    return {"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "t"},
            "spec": {"nodePools": [pool]}}


@pytest.mark.parametrize(
    ("pool", "path", "words"),
    [
        ({"name": "a", "gpu": {"model": "T4", "count": 1, "colour": "red"}}, "spec.nodePools[0].gpu.colour",
         "unknown field"),
        ({"name": "a", "gpu": {"model": "T4", "count": 1, "devicePluginConfig": {"sharing": {"timeSlicing": {
            "resources": [{"name": "nvidia.com/gpu", "replicas": 0}]}}}}},
         "spec.nodePools[0].gpu.devicePluginConfig.sharing.timeSlicing.resources[0].replicas", "replicas must be >= 1"),
        ({"name": "Bad_Name"}, "spec.nodePools[0].name", "DNS-1123"),
        ({"name": "a", "cpu": "lots"}, "spec.nodePools[0].cpu", "not a Kubernetes quantity"),
        ({"name": "a", "gpu": {"model": "T4", "count": 2, "topology": {"nvlink": [[0, 5]]}}},
         "spec.nodePools[0].gpu.topology.nvlink[0]", "out of range"),
    ],
    ids=["unknown-field", "replicas-zero", "bad-pool-name", "bad-quantity", "nvlink-out-of-range"],
)
def test_bad_spec_names_the_field(pool: dict, path: str, words: str) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_spec(_base(pool), "x.yaml")
    assert ei.value.path == path
    assert words in str(ei.value)
    assert str(ei.value).startswith("x.yaml: ")


def test_malformed_yaml_and_unknown_node(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("spec: [unclosed\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_spec(f)
    spec = load_spec(CLUSTERS / "seed-4x2.yaml")
    with pytest.raises(ConfigError, match="no node named 'nope'"):
        spec.node("nope")
