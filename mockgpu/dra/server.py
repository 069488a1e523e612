"""The DRA driver's gRPC side: the kubelet's DRA ``v1`` service on the driver's own socket and the
plugin-registration service on a socket in the kubelet's plugin registry, as upstream's kubeletplugin helper
serves them.

* ``<plugin-dir>/gpu.mockgpu.io/dra.sock`` serves ``k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin``
  (NodePrepareResources, NodeUnprepareResources), started first so it is up when the kubelet dials it;
* ``<registry-dir>/gpu.mockgpu.io-reg.sock`` serves ``pluginregistration.Registration``: GetInfo answers
  type ``DRAPlugin``, name ``gpu.mockgpu.io``, endpoint = the DRA socket's path and supported versions
  ``["v1.DRAPlugin"]`` (what the helper advertises with only the v1 node service enabled: mockgpu serves
  neither the v1beta1 service nor the DRAResourceHealth services); NotifyRegistrationStatus records the
  kubelet's answer and, like the helper, fails when registration failed.
A claim that cannot be retrieved fails the whole call with gRPC status UNKNOWN and upstream's message
(``get resource claims: retrieve claim ns/name: ...``), as a Go error returned from a handler does.
Both sockets are removed on stop (the kubelet's plugin watcher then deregisters the driver).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from mockgpu.dra.api import dra_v1_pb2 as dpb
from mockgpu.dra.api import dra_v1_pb2_grpc as dpb_grpc
from mockgpu.dra.api import pluginregistration_v1_pb2 as rpb
from mockgpu.dra.api import pluginregistration_v1_pb2_grpc as rpb_grpc
from mockgpu.dra.prepare import ClaimRef, Preparer, RetrieveError
from mockgpu.dra.slices import DRIVER
from mockgpu.errors import MockgpuError

log = logging.getLogger(__name__)

PLUGIN_TYPE = "DRAPlugin"  # registerapi.DRAPlugin
SUPPORTED_SERVICES = ["v1.DRAPlugin"]  # drapbv1.DRAPluginService
MAX_SOCKET_PATH = 107


def dra_socket(plugin_dir: Path) -> Path:
    return Path(plugin_dir) / DRIVER / "dra.sock"


def registration_socket(registry_dir: Path) -> Path:
    return Path(registry_dir) / f"{DRIVER}-reg.sock"


def _refs(claims) -> list[ClaimRef]:  # noqa: ANN001
    return [ClaimRef(c.namespace, c.uid, c.name) for c in claims]


class DRAService(dpb_grpc.DRAPluginServicer):
    def __init__(self, preparer: Preparer) -> None:
        self.preparer = preparer

    def NodePrepareResources(self, request, context):  # noqa: ANN001, ANN201, N802
        try:
            results = self.preparer.prepare(_refs(request.claims))
        except RetrieveError as exc:
            context.abort(grpc.StatusCode.UNKNOWN, f"get resource claims: {exc}")
        resp = dpb.NodePrepareResourcesResponse()
        for uid, r in results.items():
            resp.claims[uid].CopyFrom(dpb.NodePrepareResourceResponse(error=r.error, devices=[
                dpb.Device(request_names=list(d.request_names), pool_name=d.pool_name, device_name=d.device_name,
                           cdi_device_ids=list(d.cdi_device_ids)) for d in r.devices]))
        return resp

    def NodeUnprepareResources(self, request, context):  # noqa: ANN001, ANN201, N802
        resp = dpb.NodeUnprepareResourcesResponse()
        for uid, err in self.preparer.unprepare(_refs(request.claims)).items():
            resp.claims[uid].CopyFrom(dpb.NodeUnprepareResourceResponse(error=err))
        return resp


class RegistrationService(rpb_grpc.RegistrationServicer):
    def __init__(self, endpoint: Path) -> None:
        self.endpoint = str(endpoint)
        self.status: rpb.RegistrationStatus | None = None
        self.registered = threading.Event()

    def GetInfo(self, request, context):  # noqa: ANN001, ANN201, N802
        return rpb.PluginInfo(type=PLUGIN_TYPE, name=DRIVER, endpoint=self.endpoint,
                              supported_versions=SUPPORTED_SERVICES)

    def NotifyRegistrationStatus(self, request, context):  # noqa: ANN001, ANN201, N802
        self.status = request
        if not request.plugin_registered:
            log.error("the kubelet refused the registration: %s", request.error)
            context.abort(grpc.StatusCode.UNKNOWN, f"failed registration process: {request.error}")
        self.registered.set()
        return rpb.RegistrationStatusResponse()


def _serve(socket: Path, add) -> grpc.Server:  # noqa: ANN001
    if len(str(socket)) > MAX_SOCKET_PATH:
        raise MockgpuError(f"socket path {socket} is longer than {MAX_SOCKET_PATH} bytes; use a shorter directory",
                           exit_code=2)
    socket.parent.mkdir(parents=True, exist_ok=True)
    socket.unlink(missing_ok=True)  # a stale socket of a previous run
    server = grpc.server(ThreadPoolExecutor(max_workers=4))
    add(server)
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    return server


class DriverServers:
    """The running DRA driver's two gRPC servers (a context manager)."""

    def __init__(self, preparer: Preparer, plugin_dir: Path, registry_dir: Path) -> None:
        self.dra_socket = dra_socket(plugin_dir)
        self.reg_socket = registration_socket(registry_dir)
        self.dra = DRAService(preparer)
        self.registration = RegistrationService(self.dra_socket)
        self._servers: list[tuple[grpc.Server, Path]] = []

    def start(self) -> DriverServers:
        self._servers.append((_serve(self.dra_socket, lambda s: dpb_grpc.add_DRAPluginServicer_to_server(
            self.dra, s)), self.dra_socket))
        self._servers.append((_serve(self.reg_socket, lambda s: rpb_grpc.add_RegistrationServicer_to_server(
            self.registration, s)), self.reg_socket))
        log.info("DRA driver %s: %s and %s", DRIVER, self.dra_socket, self.reg_socket)
        return self

    def stop(self) -> None:
        for server, sock in reversed(self._servers):  # registration first: the kubelet stops dialling
            server.stop(grace=1).wait()
            sock.unlink(missing_ok=True)
        self._servers.clear()

    def __enter__(self) -> DriverServers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
