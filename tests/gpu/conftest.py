"""Shared fixtures for the hardware-model tests: a small cluster spec and its nodes' driver dirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockgpu.config.clusterspec import ClusterSpec, parse_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.gpu.driver import ENV_DRIVER_DIR, Driver, write_node_driver

SPEC = {
    "apiVersion": "mockgpu.io/v1alpha1",
    "kind": "ClusterSpec",
    "metadata": {"name": "hwtest"},
    "spec": {"nodePools": [
        {"name": "whole", "gpu": {"model": "H100-SXM5-80GB", "count": 4,
                                  "topology": {"numa": [0, 0, 1, 1], "nvlink": [[0, 1], [2, 3]]}}},
        {"name": "mig", "gpu": {"model": "A100-SXM4-80GB", "count": 2, "mig": [
            {"devices": [0], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}},
            {"devices": [1], "mig-enabled": True, "mig-devices": {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}},
        ], "devicePluginConfig": {"version": "v1", "flags": {"migStrategy": "mixed"}}}},
    ]},
}


@pytest.fixture(scope="session")
def spec() -> ClusterSpec:
    return parse_spec(SPEC)


@pytest.fixture
def node_dir(tmp_path: Path, spec: ClusterSpec):
    """Factory: write the driver dir of a node, return (Driver, env with MOCKGPU_DRIVER_DIR)."""

    def make(node: str) -> tuple[Driver, dict[str, str]]:
        d = tmp_path / node / "driver"  # its faults beside it, per node (mockgpu.gpu.faults)
        write_node_driver(d, node_inventory(spec, node))
        return Driver(d), {ENV_DRIVER_DIR: str(d)}

    return make
