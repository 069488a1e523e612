"""What ``Allocate`` hands the kubelet for one container: envs and mounts.

As NVIDIA's plugin with ``deviceListStrategy: envvar``: ``NVIDIA_VISIBLE_DEVICES`` is the
comma-joined device IDs with replica suffixes stripped and duplicates removed (two replicas of one
GPU give that GPU once). mockgpu's additions, because its workloads talk to a fake driver rather
than to /dev/nvidia*: the node's driver directory is mounted read-write at
``/run/mockgpu/driver`` and ``MOCKGPU_DRIVER_DIR`` points there, and its sibling holding the injected faults
(``mockgpu.gpu.faults``) read-only at ``/run/mockgpu/faults``, so a pod sees them and cannot change them;
optionally the fake
``nvidia-smi`` is mounted read-only at ``/usr/bin/nvidia-smi``.

Not simulated: the other ``deviceListStrategy`` values (volume-mounts, CDI) and ``passDeviceSpecs``
(fake GPUs have no device nodes); the command logs a warning when a config asks for them.

``CUDA_VISIBLE_DEVICES`` is set only when the pool's config has mockgpu's
``flags.injectCudaVisibleDevices`` (same IDs as ``NVIDIA_VISIBLE_DEVICES``). The real plugin never
sets it, nor does the NVIDIA container toolkit: inside a real container CUDA simply sees the
injected GPUs as devices 0..n-1. The flag exists so a lab can show the folklore next to the fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mockgpu.deviceplugin.api import api_pb2 as pb
from mockgpu.deviceplugin.resources import ResourceManager
from mockgpu.gpu.driver import CONTAINER_DRIVER_DIR, ENV_DRIVER_DIR
from mockgpu.gpu.faults import CONTAINER_FAULTS_DIR, faults_dir_for

NVIDIA_VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
CONTAINER_NVIDIA_SMI = "/usr/bin/nvidia-smi"


@dataclass(frozen=True)
class AllocateSettings:
    """Node-wide inputs of every Allocate answer."""

    driver_dir: Path | None = None  # host path of the node's driver directory
    nvidia_smi: Path | None = None  # host path of a fake nvidia-smi to mount, if the image lacks one
    inject_cuda_visible_devices: bool = False


def container_response(
    rm: ResourceManager, ids: Sequence[str], settings: AllocateSettings
) -> pb.ContainerAllocateResponse:
    """The response for one ``ContainerAllocateRequest`` (raises InvalidRequestError subclasses)."""
    visible = ",".join(rm.visible_ids(ids))
    envs = {NVIDIA_VISIBLE_DEVICES: visible}
    if settings.inject_cuda_visible_devices:
        envs[CUDA_VISIBLE_DEVICES] = visible
    mounts = []
    if settings.driver_dir is not None:
        envs[ENV_DRIVER_DIR] = CONTAINER_DRIVER_DIR
        mounts.append(pb.Mount(container_path=CONTAINER_DRIVER_DIR, host_path=str(settings.driver_dir),
                               read_only=False))
        mounts.append(pb.Mount(container_path=CONTAINER_FAULTS_DIR,
                               host_path=str(faults_dir_for(settings.driver_dir)), read_only=True))
    if settings.nvidia_smi is not None:
        mounts.append(pb.Mount(container_path=CONTAINER_NVIDIA_SMI, host_path=str(settings.nvidia_smi),
                               read_only=True))
    return pb.ContainerAllocateResponse(envs=envs, mounts=mounts)
