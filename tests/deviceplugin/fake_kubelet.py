"""A tiny kubelet Registration server for the plugin tests: serves kubelet.sock and, like the real
kubelet, dials the plugin back during Register and asks for its options."""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from mockgpu.deviceplugin.api import api_pb2 as pb
from mockgpu.deviceplugin.api import api_pb2_grpc as pb_grpc


class FakeKubelet(pb_grpc.RegistrationServicer):
    def __init__(self, plugin_dir: Path) -> None:
        self.plugin_dir = plugin_dir
        self.socket = plugin_dir / "kubelet.sock"
        self.registrations: queue.Queue[tuple[pb.RegisterRequest, pb.DevicePluginOptions]] = queue.Queue()
        self._server: grpc.Server | None = None

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:  # noqa: N802
        with grpc.insecure_channel(f"unix://{self.plugin_dir / request.endpoint}") as ch:
            opts = pb_grpc.DevicePluginStub(ch).GetDevicePluginOptions(pb.Empty(), timeout=5)
        self.registrations.put((request, opts))
        return pb.Empty()

    def start(self, clear_sockets: bool = False) -> FakeKubelet:
        """Serve kubelet.sock; ``clear_sockets`` deletes plugin sockets first, as a starting kubelet does."""
        if clear_sockets:
            for p in self.plugin_dir.iterdir():
                if p.is_socket():
                    p.unlink()
        self._server = grpc.server(ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_RegistrationServicer_to_server(self, self._server)
        self._server.add_insecure_port(f"unix://{self.socket}")
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=0).wait()
            self._server = None
        self.socket.unlink(missing_ok=True)

    def next_registration(self, timeout: float = 10.0) -> tuple[pb.RegisterRequest, pb.DevicePluginOptions]:
        return self.registrations.get(timeout=timeout)
