"""Configuration formats, validated in one place: the cluster spec and the formats it embeds
(NVIDIA device plugin config ``version: v1``, mig-parted layouts)."""

from mockgpu.config.clusterspec import ClusterSpec, GPUSpec, NodePool, NodeSpec, load_spec
from mockgpu.config.nvidia import DevicePluginConfig, MigConfigEntry

__all__ = [
    "ClusterSpec",
    "DevicePluginConfig",
    "GPUSpec",
    "MigConfigEntry",
    "NodePool",
    "NodeSpec",
    "load_spec",
]
