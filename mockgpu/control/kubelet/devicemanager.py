"""The kubelet's device manager: serves Registration on ``<plugin-dir>/kubelet.sock``, follows each
plugin's ListAndWatch, and allocates devices to containers at pod admission.

Follows ``pkg/kubelet/cm/devicemanager`` (see the reference notes), with these simplifications:
* one allocation call per container with its ``limits``; init-container device reuse and the
  Topology Manager (NUMA filtering) are not modelled, so candidates are "no affinity" (sorted IDs);
* when a plugin's stream ends, its devices turn unhealthy at once (allocatable 0, capacity kept),
  and the resource is dropped (capacity 0) once ``endpoint_grace`` (upstream 5 min) has passed
  without re-registration, checked lazily in ``node_resources()`` as upstream's GetCapacity does; a plugin
  that registers again (the kubelet restarts a dead plugin process, ``pluginproc``) replaces the endpoint and
  its ListAndWatch gives the devices back, while pods keep the devices checkpointed for them;
* device plugins register only through kubelet.sock (the ``plugins_registry`` watcher, ``pluginwatcher``,
  serves DRA drivers only);
* PodResources API is not served; ``pod_devices()`` gives the same facts in Python.
Admission errors are raised as ``AdmissionError`` with upstream's reason and message.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from mockgpu.apimachinery.names import is_extended_resource_name
from mockgpu.control.kubelet.allocation import AdmissionError, allocate_container
from mockgpu.control.kubelet.checkpoint import (
    CHECKPOINT_NAME,
    CorruptCheckpointError,
    read_checkpoint,
)
from mockgpu.control.kubelet.endpoint import DeviceInfo, Endpoint
from mockgpu.control.kubelet.podevices import ContainerAllocation, PodDevices
from mockgpu.deviceplugin.api import api_pb2 as pb
from mockgpu.deviceplugin.api import api_pb2_grpc as pb_grpc
from mockgpu.errors import MockgpuError
from mockgpu.privatefs import private_dir

log = logging.getLogger(__name__)
KUBELET_SOCKET = "kubelet.sock"
SUPPORTED_VERSIONS = ["v1beta1"]
ENDPOINT_STOP_GRACE = 300.0
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the terminating NUL


def _go_quote_list(items: list[str]) -> str:
    return "[" + " ".join(f'"{i}"' for i in items) + "]"


@dataclass
class _Resource:
    endpoint: Endpoint | None = None
    devices: dict[str, DeviceInfo] = field(default_factory=dict)
    stopped_since: float | None = None  # monotonic time its plugin went away (or kubelet start)

    def healthy(self) -> set[str]:
        return {i for i, d in self.devices.items() if d.healthy}


class DeviceManager:
    """Start with ``start()``; allocate with ``allocate(pod_uid, container, limits)``; ``stop()``."""

    def __init__(
        self,
        plugin_dir: Path,
        *,
        endpoint_grace: float = ENDPOINT_STOP_GRACE,
        on_change: Callable[[], None] | None = None,
        active_pods: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self.plugin_dir = Path(plugin_dir)
        self.socket_path = self.plugin_dir / KUBELET_SOCKET
        self.endpoint_grace = endpoint_grace
        self.on_change = on_change
        self.active_pods = active_pods
        self._lock = threading.RLock()
        self._alloc_lock = threading.Lock()  # admission is sequential, as upstream
        self._resources: dict[str, _Resource] = {}
        self._removed: set[str] = set()
        self.pods = PodDevices(self.plugin_dir / CHECKPOINT_NAME)
        self.registrations: list[tuple[str, str]] = []  # (resource, endpoint) of every accepted Register
        self._server: grpc.Server | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Read the checkpoint, clear stale sockets, serve Registration on kubelet.sock."""
        if len(str(self.socket_path)) > MAX_SOCKET_PATH:
            raise MockgpuError(
                f"{self.socket_path} is {len(str(self.socket_path))} bytes long; a Unix socket path may have at most "
                f"{MAX_SOCKET_PATH}: use a shorter device plugin directory"
            )
        private_dir(self.plugin_dir)
        try:
            data = read_checkpoint(self.pods.path)
        except CorruptCheckpointError as exc:
            log.warning("Continue after failing to read checkpoint file: %s", exc)
            data = None
        if data is not None:
            self.pods.load(data)
            for name in data.registered:  # capacity 0 until the plugin registers again
                self._resources[name] = _Resource(stopped_since=time.monotonic())
        for p in self.plugin_dir.iterdir():
            if p.name != CHECKPOINT_NAME and p.is_socket():
                p.unlink()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="registration"))
        pb_grpc.add_RegistrationServicer_to_server(_Registration(self), self._server)
        self._server.add_insecure_port(f"unix://{self.socket_path}")
        self._server.start()

    def stop(self) -> None:
        """Stop serving, drop every plugin connection and remove kubelet.sock."""
        if self._server is not None:
            self._server.stop(grace=0).wait(5)
            self._server = None
        with self._lock:
            endpoints = [r.endpoint for r in self._resources.values() if r.endpoint]
        for e in endpoints:
            e.stop()
        self.socket_path.unlink(missing_ok=True)

    # -- registration ----------------------------------------------------------------------
    def register(self, version: str, endpoint: str, resource: str) -> None:
        """Validate and connect a plugin; raises ValueError/RuntimeError with upstream's text."""
        if version not in SUPPORTED_VERSIONS:
            raise ValueError(
                f'requested API version "{version}" is not supported by kubelet. '
                f"Supported version is {_go_quote_list(SUPPORTED_VERSIONS)}"
            )
        if not is_extended_resource_name(resource):
            raise ValueError(f'the ResourceName "{resource}" is invalid')
        ep = Endpoint(resource, str(self.plugin_dir / endpoint), self._on_devices, self._on_disconnect)
        ep.connect()
        with self._lock:
            old = self._resources.setdefault(resource, _Resource()).endpoint
            self._resources[resource].endpoint = ep
            self._resources[resource].stopped_since = None
            self._removed.discard(resource)
            self.registrations.append((resource, endpoint))
        if old is not None:
            old.stop()
        ep.run()

    def _on_devices(self, ep: Endpoint, devices: list[DeviceInfo]) -> None:
        with self._lock:
            res = self._resources.get(ep.resource)
            if res is None or res.endpoint is not ep:
                return
            res.devices = {d.id: d for d in devices}  # every message is the full list
            self._checkpoint()
        self._changed()

    def _on_disconnect(self, ep: Endpoint) -> None:
        with self._lock:
            res = self._resources.get(ep.resource)
            if res is None or res.endpoint is not ep:
                return
            res.devices = {i: DeviceInfo(i, False, d.numa) for i, d in res.devices.items()}
            res.stopped_since = time.monotonic()
            self._checkpoint()
        self._changed()

    def _changed(self) -> None:
        if self.on_change:
            try:
                self.on_change()
            except Exception:  # a broken listener must not kill the stream thread
                log.exception("device manager on_change failed")

    def _checkpoint(self) -> None:
        self.pods.write({n: sorted(r.healthy()) for n, r in self._resources.items()})

    # -- what the node advertises ----------------------------------------------------------
    def node_resources(self) -> tuple[dict[str, int], dict[str, int]]:
        """(capacity, allocatable) per device-plugin resource; dropped resources report 0."""
        now = time.monotonic()
        with self._lock:
            for name, r in list(self._resources.items()):
                if r.stopped_since is not None and now - r.stopped_since > self.endpoint_grace:
                    del self._resources[name]
                    self._removed.add(name)
            cap = {n: len(r.devices) for n, r in self._resources.items()}
            alloc = {n: len(r.healthy()) for n, r in self._resources.items()}
            for n in self._removed:
                cap[n], alloc[n] = 0, 0
        return cap, alloc

    def devices(self, resource: str) -> dict[str, bool]:
        """Device ID -> healthy, as last listed by the plugin."""
        with self._lock:
            r = self._resources.get(resource)
            return {i: d.healthy for i, d in r.devices.items()} if r else {}

    def endpoint(self, resource: str) -> Endpoint | None:
        with self._lock:
            r = self._resources.get(resource)
            return r.endpoint if r else None

    def wait_for(self, predicate: Callable[[DeviceManager], bool], timeout: float = 10.0) -> bool:
        """Poll predicate(self) until true or timeout (for tests and start-up)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return True
            time.sleep(0.05)
        return predicate(self)

    # -- allocation ------------------------------------------------------------------------
    def is_device_plugin_resource(self, name: str) -> bool:
        with self._lock:
            return name in self._resources or self.pods.has_resource(name)

    def allocate(self, pod_uid: str, container: str, limits: dict[str, int | str]) -> ContainerAllocation:
        """Allocate every device-plugin resource in limits (quantities) to one container (AdmissionError if not)."""
        with self._alloc_lock:
            if self.active_pods is not None:
                self.pods.retain(set(self.active_pods()))
            return allocate_container(self, pod_uid, container, limits)

    def healthy_devices(self, resource: str) -> set[str] | None:
        """Healthy device IDs of a resource; None when no plugin ever registered it."""
        with self._lock:
            r = self._resources.get(resource)
            return r.healthy() if r else None

    def numa_of(self, resource: str) -> dict[str, tuple[int, ...]]:
        with self._lock:
            r = self._resources.get(resource)
            return {i: d.numa for i, d in r.devices.items()} if r else {}

    def record_allocation(self, uid: str, container: str, resource: str, by_numa: dict[str, list[str]], resp) -> None:
        with self._lock:
            self.pods.insert(uid, container, resource, by_numa, resp)
            self._checkpoint()

    def get_allocation(self, pod_uid: str, container: str) -> ContainerAllocation | None:
        """What to inject into the container (envs, mounts, devices, annotations), or None."""
        return self.pods.container_allocation(pod_uid, container)

    def pre_start(self, pod_uid: str, container: str) -> None:
        """Call PreStartContainer for plugins that asked for it (errors raise RuntimeError)."""
        for resource, ids in self.pods.container_devices(pod_uid, container).items():
            ep = self.endpoint(resource)
            if ep is not None and ep.options.pre_start_required:
                try:
                    ep.pre_start(ids)
                except grpc.RpcError as exc:
                    raise RuntimeError(
                        f"device plugin PreStartContainer rpc failed with err: {exc.details()}"
                    ) from None

    def remove_pod(self, pod_uid: str) -> None:
        """Free every device of a terminated pod."""
        with self._lock:
            self.pods.remove_pod(pod_uid)
            self._checkpoint()

    def allocated_resources_status(self, pod_uid: str, container: str) -> list[dict[str, object]]:
        """``status.containerStatuses[].allocatedResourcesStatus`` of one container, as v1.37.2's
        ``UpdateAllocatedResourcesStatus`` (``pkg/kubelet/cm/devicemanager/manager.go``, gate ResourceHealthStatus,
        beta and on) builds it: per device-plugin resource the container holds, ``{"name": resource, "resources":
        [{"resourceID": device ID, "health": "Healthy"|"Unhealthy"}]}``; a device the plugin no longer lists
        counts as Healthy there too. [] when it holds none. Upstream's order is Go's map order; here resources and
        IDs are sorted."""
        held = self.pods.all().get((pod_uid, container)) or {}
        out: list[dict[str, object]] = []
        with self._lock:
            for resource in sorted(held):
                r = self._resources.get(resource)
                known = r.devices if r else {}
                out.append({"name": resource, "resources": [
                    {"resourceID": i, "health": "Healthy" if i not in known or known[i].healthy else "Unhealthy"}
                    for i in sorted(held[resource])]})
        return out

    def pod_devices(self) -> dict[tuple[str, str], dict[str, list[str]]]:
        """(pod uid, container) -> resource -> device IDs, like the PodResources List API."""
        return self.pods.all()


class _Registration(pb_grpc.RegistrationServicer):
    def __init__(self, dm: DeviceManager) -> None:
        self.dm = dm

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:  # noqa: N802
        try:
            self.dm.register(request.version, request.endpoint, request.resource_name)
        except (ValueError, RuntimeError) as exc:
            log.info("Bad registration request from device plugin %s: %s", request.resource_name, exc)
            context.abort(grpc.StatusCode.UNKNOWN, str(exc))
        return pb.Empty()


__all__ = ["AdmissionError", "ContainerAllocation", "DeviceManager"]
