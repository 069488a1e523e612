"""NVIDIA's own formats, reused as they are: the k8s-device-plugin config file (``version: v1``)
and one entry of a mig-parted ``mig-configs`` list.

Only the fields the fake device plugin acts on are modelled; unknown keys are rejected so a typo
is an error rather than a silently ignored setting.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class PluginFlags(_Strict):
    """``flags.plugin`` of the NVIDIA config."""

    deviceListStrategy: str = "envvar"
    deviceIDStrategy: Literal["uuid", "index"] = "uuid"
    passDeviceSpecs: bool = False
    sharedDevicesAllocationPolicy: Literal["distributed", "packed"] = "distributed"


class Flags(_Strict):
    """``flags`` of the NVIDIA config; ``injectCudaVisibleDevices`` is mockgpu's own addition."""

    migStrategy: Literal["none", "single", "mixed"] = "none"
    failOnInitError: bool = True
    plugin: PluginFlags = Field(default_factory=PluginFlags)
    # Not an NVIDIA flag: lets a lab show the folklore (plugin sets CUDA_VISIBLE_DEVICES) next to
    # the fact (it sets only NVIDIA_VISIBLE_DEVICES). Off by default, as upstream.
    injectCudaVisibleDevices: bool = False


class ReplicatedResource(_Strict):
    """One ``sharing.timeSlicing.resources[]`` entry."""

    name: str
    replicas: int
    rename: str | None = None
    devices: list[int | str] | str | None = None

    @field_validator("replicas")
    @classmethod
    def _replicas_positive(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"replicas must be >= 1, got {v}")
        return v


class TimeSlicing(_Strict):
    renameByDefault: bool = False
    failRequestsGreaterThanOne: bool = False
    resources: list[ReplicatedResource] = Field(default_factory=list)


class Sharing(_Strict):
    timeSlicing: TimeSlicing | None = None


class DevicePluginConfig(_Strict):
    """The NVIDIA k8s-device-plugin config file, ``version: v1``."""

    version: Literal["v1"] = "v1"
    flags: Flags = Field(default_factory=Flags)
    sharing: Sharing = Field(default_factory=Sharing)

    def replicas_for(self, resource: str) -> int:
        """Time-slicing replicas configured for ``resource`` (1 when it is not shared)."""
        ts = self.sharing.timeSlicing
        if ts is None:
            return 1
        for r in ts.resources:
            if r.name == resource:
                return r.replicas
        return 1


class MigConfigEntry(_Strict):
    """One entry of a mig-parted ``mig-configs`` list: which GPUs, and how to slice them."""

    devices: Literal["all"] | list[int] = "all"
    mig_enabled: bool = Field(True, alias="mig-enabled")
    mig_devices: dict[str, int] = Field(default_factory=dict, alias="mig-devices")

    @model_validator(mode="after")
    def _counts_positive(self) -> MigConfigEntry:
        for profile, n in self.mig_devices.items():
            if n < 0:
                raise ValueError(f"mig-devices[{profile}] must be >= 0, got {n}")
        if self.mig_devices and not self.mig_enabled:
            raise ValueError("mig-devices given but mig-enabled is false")
        return self
