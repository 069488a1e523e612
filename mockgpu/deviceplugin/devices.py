"""The device plugin's vocabulary, below its resource managers and policies: a ``Device`` (a whole GPU, a MIG
device, or one time-slicing replica of either), the health values, the errors a request can get, and
NVIDIA's naming rules for resources, sockets and replica IDs."""

from __future__ import annotations

from dataclasses import dataclass

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
GPU_RESOURCE = "nvidia.com/gpu"
REPLICA_SEPARATOR = "::"


class InvalidRequestError(ValueError):
    """A request the plugin refuses (the gRPC layer turns it into an error status)."""


class UnknownDeviceError(InvalidRequestError):
    """A request names a device ID this resource does not own."""


class RequestTooLargeError(InvalidRequestError):
    """More than one replica asked for while ``failRequestsGreaterThanOne`` is set."""


@dataclass(frozen=True)
class Device:
    """One advertised device: a whole GPU, a MIG device, or one replica of either."""

    id: str  # what the kubelet sees: UUID (or index) with an optional "::<n>" replica suffix
    uuid: str  # the GPU or MIG UUID behind it
    gpu_index: int  # index of the physical GPU on the node
    index: str  # NVIDIA's index form: "0" for a GPU, "0:3" for MIG device 3 of GPU 0
    numa_node: int
    mig_profile: str | None = None
    replica: int | None = None
    health: str = HEALTHY

    @property
    def base_id(self) -> str:
        """The ID without the replica suffix (what NVIDIA_VISIBLE_DEVICES carries)."""
        return self.id.split(REPLICA_SEPARATOR, 1)[0]


def strip_replica(device_id: str) -> str:
    return device_id.split(REPLICA_SEPARATOR, 1)[0]


def socket_name(resource: str) -> str:
    """NVIDIA's socket naming: ``nvidia.com/gpu`` → ``nvidia-gpu.sock``."""
    vendor, _, name = resource.partition("/")
    return f"{vendor.split('.')[0]}-{name}.sock"


def mig_resource_name(profile: str) -> str:
    """``nvidia.com/mig-<profile>`` with '+' replaced by '.' (``1g.10gb+me`` → ``mig-1g.10gb.me``)."""
    return "nvidia.com/mig-" + profile.replace("+", ".")
