"""What the fault tests of both local backends share: a one-node spec with two GPUs, and a ListAndWatch client that
times how long the node's device plugin takes to report a device Unhealthy."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import grpc

from mockgpu.deviceplugin.api import api_pb2 as pb
from mockgpu.deviceplugin.api import api_pb2_grpc as pb_grpc

NODE, GPU = "gpu-0", "nvidia.com/gpu"
SPEC = """\
apiVersion: mockgpu.io/v1alpha1
kind: ClusterSpec
metadata:
  name: faults
spec:
  nodePools:
  - name: gpu
    count: 1
    gpu:
      model: A100-SXM4-80GB
      count: 2
"""


def seconds_until_unhealthy(plugin_dir: Path, device: str, act: Callable[[], object], timeout: float = 10.0,
                            sock: str = "nvidia-gpu.sock") -> float:
    """Open a ListAndWatch stream on the plugin's socket (as the kubelet does), take its first (full) list, run
    ``act`` (the injection), and return the seconds until a list shows ``device`` Unhealthy."""
    with grpc.insecure_channel(f"unix://{plugin_dir / sock}") as ch:
        stream = pb_grpc.DevicePluginStub(ch).ListAndWatch(pb.Empty(), timeout=timeout)
        first = next(stream)
        assert {d.ID: d.health for d in first.devices}[device] == "Healthy"
        t0 = time.monotonic()
        act()
        for resp in stream:
            if {d.ID: d.health for d in resp.devices}.get(device) == "Unhealthy":
                elapsed = time.monotonic() - t0
                stream.cancel()
                return elapsed
    raise AssertionError(f"{device} never reported Unhealthy")
