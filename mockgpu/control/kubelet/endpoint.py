"""The kubelet's client of one device plugin: dial, options, the ListAndWatch stream, and RPCs.

Like upstream's ``plugin/v1beta1/client.go`` + ``endpoint.go``: ``connect`` dials the plugin's
socket (blocking, 10 s) and asks for its options; ``run`` consumes ListAndWatch on a thread and
hands every message (always the full device list) to ``on_devices``; when the stream ends for any
reason other than ``stop``, ``on_disconnect`` is called once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc

from mockgpu.deviceplugin.api import api_pb2 as pb
from mockgpu.deviceplugin.api import api_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)
DIAL_TIMEOUT = 10.0
PRESTART_TIMEOUT = 30.0  # KubeletPreStartContainerRPCTimeoutInSecs


def go_rpc_error(exc: grpc.RpcError) -> str:
    """A gRPC error as Go's status error prints it: ``rpc error: code = Unknown desc = ...``."""
    code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
    name = "".join(w.capitalize() for w in code.name.split("_")) if code else "Unknown"
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return f"rpc error: code = {name} desc = {details}"


@dataclass(frozen=True)
class DeviceInfo:
    id: str
    healthy: bool
    numa: tuple[int, ...]


class Endpoint:
    """One registered plugin (resource name + socket)."""

    def __init__(
        self,
        resource: str,
        socket_path: str,
        on_devices: Callable[[Endpoint, list[DeviceInfo]], None],
        on_disconnect: Callable[[Endpoint], None],
    ) -> None:
        self.resource = resource
        self.socket_path = socket_path
        self.options = pb.DevicePluginOptions()
        self._on_devices = on_devices
        self._on_disconnect = on_disconnect
        self._channel: grpc.Channel | None = None
        self._stub: pb_grpc.DevicePluginStub | None = None
        self._stream = None
        self._stopping = threading.Event()
        self.stopped_at: float | None = None  # monotonic time the stream ended
        self._thread: threading.Thread | None = None

    def __str__(self) -> str:
        return f"{self.resource} ({self.socket_path})"

    def connect(self) -> None:
        """Dial and call GetDevicePluginOptions; raises RuntimeError with upstream's wording."""
        self._channel = grpc.insecure_channel(f"unix://{self.socket_path}")
        try:
            grpc.channel_ready_future(self._channel).result(timeout=DIAL_TIMEOUT)
        except grpc.FutureTimeoutError:
            self._channel.close()
            raise RuntimeError("failed to dial device plugin: context deadline exceeded") from None
        self._stub = pb_grpc.DevicePluginStub(self._channel)
        try:
            self.options = self._stub.GetDevicePluginOptions(pb.Empty(), timeout=DIAL_TIMEOUT)
        except grpc.RpcError as exc:
            self._channel.close()
            raise RuntimeError(f"failed to get device plugin options: {go_rpc_error(exc)}") from None

    def run(self) -> None:
        """Start consuming ListAndWatch on a daemon thread."""
        self._thread = threading.Thread(target=self._watch, name=f"listandwatch-{self.resource}", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        try:
            self._stream = self._stub.ListAndWatch(pb.Empty())
            if self._stopping.is_set():
                self._stream.cancel()
            for resp in self._stream:
                devices = [
                    DeviceInfo(d.ID, d.health == "Healthy", tuple(n.ID for n in d.topology.nodes)) for d in resp.devices
                ]
                self._on_devices(self, devices)
        except grpc.RpcError as exc:
            if not self._stopping.is_set():
                log.info("ListAndWatch ended for %s: %s", self, go_rpc_error(exc))
        self.stopped_at = time.monotonic()
        if not self._stopping.is_set():
            self._on_disconnect(self)

    def is_stopped(self) -> bool:
        return self.stopped_at is not None

    def stop(self) -> None:
        """Cancel the stream and close the channel; on_disconnect is not called."""
        self._stopping.set()
        if self._stream is not None:
            self._stream.cancel()
        if self._channel is not None:
            self._channel.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
        self.stopped_at = self.stopped_at or time.monotonic()

    # -- RPCs (errors raise grpc.RpcError; callers word them) ------------------------------
    def preferred(self, available: Sequence[str], must_include: Sequence[str], size: int) -> list[str]:
        req = pb.PreferredAllocationRequest(
            container_requests=[
                pb.ContainerPreferredAllocationRequest(
                    available_deviceIDs=list(available), must_include_deviceIDs=list(must_include), allocation_size=size
                )
            ]
        )
        resp = self._stub.GetPreferredAllocation(req)
        return list(resp.container_responses[0].deviceIDs) if resp.container_responses else []

    def allocate(self, ids: Sequence[str]) -> pb.AllocateResponse:
        req = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=list(ids))])
        return self._stub.Allocate(req)

    def pre_start(self, ids: Sequence[str]) -> None:
        self._stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=list(ids)), timeout=PRESTART_TIMEOUT)
