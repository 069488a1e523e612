"""The cluster spec's types (``apiVersion: mockgpu.io/v1alpha1``, ``kind: ClusterSpec``): the shape a
spec must have, its field rules and defaults, as strict pydantic models. ``clusterspec`` decodes files into
them and runs the checks of ``semantic``, which read these types: so they sit below both."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from mockgpu.apimachinery.names import dns1123_label
from mockgpu.config.featuregates import FeatureGates
from mockgpu.config.nvidia import DevicePluginConfig, MigConfigEntry
from mockgpu.errors import ConfigError

API_VERSION = "mockgpu.io/v1alpha1"
KIND = "ClusterSpec"

_QUANTITY = re.compile(r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Taint(_Strict):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class GPUTopology(_Strict):
    """Where each GPU sits: its NUMA node, and which GPUs are joined by NVLink."""

    numa: list[int] | None = None  # NUMA node per GPU index; default: all on NUMA 0
    nvlink: list[list[int]] = Field(default_factory=list)  # groups of GPU indices, all-to-all NVLink


class DRAGPUs(_Strict):
    """With ``management: both``: the GPUs the DRA driver manages (the device plugin gets the rest)."""

    gpus: list[int]


class GPUSpec(_Strict):
    """The GPUs of every node in a pool, how they are shared, and which model hands them out: the device
    plugin (default), the DRA driver ``gpu.mockgpu.io``, or both on different GPUs."""

    model: str
    count: int = Field(ge=0)
    topology: GPUTopology = Field(default_factory=GPUTopology)
    mig: list[MigConfigEntry] = Field(default_factory=list)  # a mig-parted `mig-configs` entry
    devicePluginConfig: DevicePluginConfig = Field(default_factory=DevicePluginConfig)
    management: Literal["devicePlugin", "dra", "both"] = "devicePlugin"
    dra: DRAGPUs | None = None  # only with management: both

    def dra_gpus(self) -> list[int]:
        """Indices of the GPUs the DRA driver publishes."""
        if self.management == "dra":
            return list(range(self.count))
        if self.management == "both" and self.dra is not None:
            return sorted(set(self.dra.gpus))
        return []

    def device_plugin_gpus(self) -> list[int]:
        """Indices of the GPUs the device plugin advertises."""
        dra = set(self.dra_gpus())
        return [i for i in range(self.count) if i not in dra]

    def numa_of(self, index: int) -> int:
        """NUMA node of GPU ``index``."""
        return self.topology.numa[index] if self.topology.numa else 0

    def mig_layout_of(self, index: int) -> dict[str, int] | None:
        """The mig-parted ``mig-devices`` for GPU ``index``, or None when MIG is off for it.

        Later entries win over earlier ones, as in mig-parted.
        """
        layout: dict[str, int] | None = None
        for entry in self.mig:
            if entry.devices == "all" or index in entry.devices:
                layout = dict(entry.mig_devices) if entry.mig_enabled else None
        return layout


class NodePool(_Strict):
    name: str
    count: int = Field(default=1, ge=0)
    cpu: str = "32"
    memory: str = "256Gi"
    pods: int = Field(default=110, ge=1)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    gpu: GPUSpec | None = None

    @field_validator("name")
    @classmethod
    def _dns_label(cls, v: str) -> str:
        if dns1123_label(v) or len(v) > 50:
            raise ValueError(f"'{v}' must be a lowercase DNS-1123 label of at most 50 characters")
        return v

    @field_validator("cpu", "memory")
    @classmethod
    def _quantity(cls, v: str | int | float) -> str:
        s = str(v)
        if not _QUANTITY.match(s):
            raise ValueError(f"'{s}' is not a Kubernetes quantity (e.g. 32, 500m, 256Gi)")
        return s


class Metadata(_Strict):
    name: str

    @field_validator("name")
    @classmethod
    def _dns_label(cls, v: str) -> str:
        if dns1123_label(v) or len(v) > 40:
            raise ValueError(f"'{v}' must be a lowercase DNS-1123 label of at most 40 characters")
        return v


class KueueSpec(_Strict):
    """``spec.kueue``: run Kueue (sigs.k8s.io/kueue, the version pinned in the upstream backend's versions.env) next
    to the control plane. Only where a real API server is (upstream, kind); the embedded backend says so and goes on."""

    enabled: bool = False


class ClusterSpecBody(_Strict):
    nodePools: list[NodePool] = Field(default_factory=list)
    # gate -> bool for every control plane the backend runs, as kind's `featureGates` (checked in `semantic`)
    featureGates: dict[str, StrictBool] = Field(default_factory=dict)
    schedulerConfig: str | None = None  # path to a KubeSchedulerConfiguration, relative to the spec
    kueue: KueueSpec = Field(default_factory=KueueSpec)


class NodeSpec(_Strict):
    """One node of the cluster, expanded from its pool: ``<pool>-<n>``."""

    name: str
    pool: str
    index: int
    cpu: str
    memory: str
    pods: int
    labels: dict[str, str]
    taints: list[Taint]
    gpu: GPUSpec | None


class ClusterSpec(_Strict):
    apiVersion: Literal["mockgpu.io/v1alpha1"]
    kind: Literal["ClusterSpec"]
    metadata: Metadata
    spec: ClusterSpecBody = Field(default_factory=ClusterSpecBody)
    # Where the spec was read from; relative paths inside it resolve against this file's folder.
    source: str = Field(default="<memory>", exclude=True)

    @property
    def name(self) -> str:
        return self.metadata.name

    def feature_gates(self) -> FeatureGates:
        """The gates the cluster's control plane runs with (the spec's settings over v1.37.2's defaults)."""
        return FeatureGates(dict(self.spec.featureGates))

    def nodes(self) -> Iterator[NodeSpec]:
        """Every node, pools in order, named ``<pool>-<n>`` with n from 0."""
        for pool in self.spec.nodePools:
            for i in range(pool.count):
                yield NodeSpec(
                    name=f"{pool.name}-{i}", pool=pool.name, index=i, cpu=pool.cpu, memory=pool.memory,
                    pods=pool.pods, labels=dict(pool.labels), taints=list(pool.taints), gpu=pool.gpu,
                )

    def node(self, name: str) -> NodeSpec:
        """The node called ``name``; a ConfigError naming the known nodes otherwise."""
        for n in self.nodes():
            if n.name == name:
                return n
        known = ", ".join(n.name for n in self.nodes()) or "none"
        raise ConfigError(self.source, "", f"no node named '{name}' (nodes: {known})")

    def scheduler_config_path(self) -> Path | None:
        """The spec's KubeSchedulerConfiguration file, resolved against the spec's folder."""
        if not self.spec.schedulerConfig:
            return None
        p = Path(self.spec.schedulerConfig)
        if not p.is_absolute() and self.source != "<memory>":
            p = Path(self.source).parent / p
        return p
