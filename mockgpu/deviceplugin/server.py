"""The device plugin's gRPC side: one DevicePlugin server per resource, registration with the
kubelet, health updates and re-registration after a kubelet restart.

Like NVIDIA's plugin, every resource gets its own Unix socket in the plugin directory
(``nvidia-gpu.sock``, ``nvidia-mig-1g.10gb.sock``) and registers with the kubelet's Registration
service on ``<plugin-dir>/kubelet.sock`` (version ``v1beta1``, endpoint = the socket's file name,
options: GetPreferredAllocation available, PreStartContainer not required). The server is up
before ``Register`` is called, because the kubelet dials back during the call.

A watcher thread polls (default every 0.2 s) instead of using inotify:

* ``kubelet.sock`` recreated (new inode or ctime: a kubelet restart) → every server is restarted on
  a fresh socket and registers again, as upstream does on fsnotify's Create event;
* the plugin's own socket deleted (a new kubelet clears the directory) → that server restarts;
* no kubelet yet, or ``Register`` failed → retried every ``retry_interval`` seconds;
* the health source (the driver directory's Xids) is read every ``health_interval`` seconds and a
  change is pushed to every open ListAndWatch stream as a full device list.

Unlike upstream, a device whose Xids are cleared becomes healthy again (upstream never recovers).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from mockgpu.deviceplugin.allocate import AllocateSettings, container_response
from mockgpu.deviceplugin.api import api_pb2 as pb
from mockgpu.deviceplugin.api import api_pb2_grpc as pb_grpc
from mockgpu.deviceplugin.resources import (
    Device,
    InvalidRequestError,
    NodeResourceManager,
    RequestTooLargeError,
)
from mockgpu.errors import MockgpuError

log = logging.getLogger(__name__)

VERSION = "v1beta1"
KUBELET_SOCKET = "kubelet.sock"
OPTIONS = pb.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True)
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes including the terminating NUL
REGISTER_TIMEOUT = 10.0

HealthSource = Callable[[], Iterable[str]]  # returns the UUIDs that are unhealthy now


def to_pb(d: Device) -> pb.Device:
    return pb.Device(ID=d.id, health=d.health, topology=pb.TopologyInfo(nodes=[pb.NUMANode(ID=d.numa_node)]))


def _status_for(exc: InvalidRequestError) -> grpc.StatusCode:
    # Upstream returns a plain Go error for an oversized shared request, which gRPC reports as Unknown
    # ("rpc error: code = Unknown desc = request for 'nvidia.com/gpu: 2' too large: ...").
    return grpc.StatusCode.UNKNOWN if isinstance(exc, RequestTooLargeError) else grpc.StatusCode.INVALID_ARGUMENT


class DevicePluginService(pb_grpc.DevicePluginServicer):
    """The DevicePlugin service of one resource."""

    def __init__(self, rm: NodeResourceManager, settings: AllocateSettings) -> None:
        self.rm = rm
        self.settings = settings
        self._cond = threading.Condition()
        self._version = 0
        self._closed = False

    def notify(self) -> None:
        """Wake every ListAndWatch stream (the device list or its health changed)."""
        with self._cond:
            self._version += 1
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def GetDevicePluginOptions(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.DevicePluginOptions:  # noqa: N802
        return OPTIONS

    def ListAndWatch(self, request: pb.Empty, context: grpc.ServicerContext) -> Iterator[pb.ListAndWatchResponse]:  # noqa: N802
        context.add_callback(self.notify)  # wake the loop below when the kubelet goes away
        sent = -1
        while True:
            with self._cond:
                while self._version == sent and not self._closed and context.is_active():
                    self._cond.wait(timeout=1.0)
                if self._closed or not context.is_active():
                    return
                sent = self._version
                devices = self.rm.devices()
            log.debug("ListAndWatch %s: sending %d devices", self.rm.resource, len(devices))
            yield pb.ListAndWatchResponse(devices=[to_pb(d) for d in devices])

    def GetPreferredAllocation(  # noqa: N802
        self, request: pb.PreferredAllocationRequest, context: grpc.ServicerContext
    ) -> pb.PreferredAllocationResponse:
        out = []
        for req in request.container_requests:
            try:
                ids = self.rm.preferred_allocation(
                    list(req.available_deviceIDs), list(req.must_include_deviceIDs), req.allocation_size)
            except InvalidRequestError as exc:
                log.warning("GetPreferredAllocation %s refused: %s", self.rm.resource, exc)
                context.abort(_status_for(exc), str(exc))
            out.append(pb.ContainerPreferredAllocationResponse(deviceIDs=ids))
        return pb.PreferredAllocationResponse(container_responses=out)

    def Allocate(self, request: pb.AllocateRequest, context: grpc.ServicerContext) -> pb.AllocateResponse:  # noqa: N802
        out = []
        for req in request.container_requests:
            try:
                out.append(container_response(self.rm, list(req.devices_ids), self.settings))
            except InvalidRequestError as exc:
                log.warning("Allocate %s refused: %s", self.rm.resource, exc)
                context.abort(_status_for(exc), str(exc))
            log.info("Allocate %s: %s", self.rm.resource, ",".join(req.devices_ids))
        return pb.AllocateResponse(container_responses=out)

    def PreStartContainer(  # noqa: N802
        self, request: pb.PreStartContainerRequest, context: grpc.ServicerContext
    ) -> pb.PreStartContainerResponse:
        return pb.PreStartContainerResponse()


def _socket_identity(path: Path) -> tuple[int, int] | None:
    """(inode, ctime) of a Unix socket, None if there is none: tells a recreated socket apart."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_ctime_ns) if stat.S_ISSOCK(st.st_mode) else None


class PluginServer:
    """One resource: its gRPC server on ``<plugin-dir>/<socket>`` and its registration state."""

    def __init__(self, rm: NodeResourceManager, plugin_dir: Path, settings: AllocateSettings) -> None:
        self.rm = rm
        self.socket_path = plugin_dir / rm.socket_name
        if len(str(self.socket_path)) > MAX_SOCKET_PATH:
            raise MockgpuError(f"socket path too long for a Unix socket ({len(str(self.socket_path))} > "
                               f"{MAX_SOCKET_PATH} bytes): {self.socket_path}; use a shorter --plugin-dir")
        self.settings = settings
        self.service: DevicePluginService | None = None
        self._server: grpc.Server | None = None
        self.registered_for: tuple[int, int] | None = None  # kubelet.sock identity we registered with
        self.last_attempt: tuple[tuple[int, int] | None, float] = (None, 0.0)

    def start(self) -> None:
        self.socket_path.unlink(missing_ok=True)
        self.service = DevicePluginService(self.rm, self.settings)
        server = grpc.server(ThreadPoolExecutor(max_workers=8, thread_name_prefix=f"dp-{self.rm.resource}"))
        pb_grpc.add_DevicePluginServicer_to_server(self.service, server)
        if server.add_insecure_port(f"unix://{self.socket_path}") == 0:
            raise MockgpuError(f"cannot listen on {self.socket_path}")
        server.start()
        self._server = server
        log.info("Serving %s on %s (%d devices)", self.rm.resource, self.socket_path, len(self.rm.devices()))

    def stop(self) -> None:
        if self.service is not None:
            self.service.close()
        if self._server is not None:
            self._server.stop(grace=0.5).wait()
            self._server = None
        self.socket_path.unlink(missing_ok=True)
        self.registered_for = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def register(self, kubelet_socket: Path) -> None:
        """Call the kubelet's ``Register`` (raises grpc.RpcError on failure)."""
        with grpc.insecure_channel(f"unix://{kubelet_socket}") as channel:
            pb_grpc.RegistrationStub(channel).Register(pb.RegisterRequest(
                version=VERSION, endpoint=self.socket_path.name, resource_name=self.rm.resource, options=OPTIONS,
            ), timeout=REGISTER_TIMEOUT)
        log.info("Registered %s with the kubelet (endpoint %s)", self.rm.resource, self.socket_path.name)


class NodePlugins:
    """All device plugin servers of one node, kept registered and up to date until ``stop``."""

    def __init__(
        self,
        managers: Iterable[NodeResourceManager],
        plugin_dir: str | Path,
        settings: AllocateSettings | None = None,
        health: HealthSource | None = None,
        *,
        poll_interval: float = 0.2,
        health_interval: float = 1.0,
        retry_interval: float = 5.0,
    ) -> None:
        self.plugin_dir = Path(plugin_dir)
        self.kubelet_socket = self.plugin_dir / KUBELET_SOCKET
        settings = settings or AllocateSettings()
        self.servers = [PluginServer(rm, self.plugin_dir, settings) for rm in managers]
        self.health = health
        self.poll_interval = poll_interval
        self.health_interval = health_interval
        self.retry_interval = retry_interval
        self.registrations = 0  # successful Register calls, for tests and logs
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_health = 0.0
        self._health_error: str | None = None

    def start(self) -> NodePlugins:
        self.plugin_dir.mkdir(parents=True, exist_ok=True)
        self._poll_health()
        for s in self.servers:
            s.start()
        if _socket_identity(self.kubelet_socket) is None:
            log.warning("No kubelet at %s yet; will register when it appears", self.kubelet_socket)
        self._tick()
        self._thread = threading.Thread(target=self._watch, name="deviceplugin-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for s in self.servers:
            s.stop()
        log.info("Device plugin stopped; sockets removed")

    def __enter__(self) -> NodePlugins:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_interval):
            try:
                self._tick()
            except Exception:  # keep watching: one bad tick must not end re-registration
                log.exception("device plugin watcher")

    def _tick(self) -> None:
        kubelet = _socket_identity(self.kubelet_socket)
        now = time.monotonic()
        for s in self.servers:
            if not s.socket_path.exists():
                log.warning("%s was removed; restarting the %s server", s.socket_path, s.rm.resource)
                s.restart()
            if kubelet is None or s.registered_for == kubelet:
                continue
            if s.registered_for is not None:
                log.info("kubelet.sock was recreated (kubelet restart); restarting %s and registering again",
                         s.rm.resource)
                s.restart()
            ident, when = s.last_attempt
            if ident == kubelet and now - when < self.retry_interval:
                continue
            s.last_attempt = (kubelet, now)
            try:
                s.register(self.kubelet_socket)
            except grpc.RpcError as exc:
                log.error("Registering %s with the kubelet failed (%s: %s); retrying in %.0f s",
                          s.rm.resource, exc.code().name, exc.details(), self.retry_interval)
                continue
            s.registered_for = kubelet
            self.registrations += 1
        if now - self._last_health >= self.health_interval:
            self._poll_health()

    def _poll_health(self) -> None:
        self._last_health = time.monotonic()
        if self.health is None:
            return
        try:
            bad = set(self.health())
        except Exception as exc:  # a missing or half-written driver dir must not stop the plugin
            if str(exc) != self._health_error:
                log.warning("Cannot read device health: %s", exc)
            self._health_error = str(exc)
            return
        self._health_error = None
        for s in self.servers:
            if s.rm.set_unhealthy(bad):
                states = ", ".join(f"{d.id}={d.health}" for d in s.rm.devices() if d.health != "Healthy")
                log.warning("Health of %s changed; unhealthy: %s", s.rm.resource, states or "none")
                if s.service is not None:
                    s.service.notify()
