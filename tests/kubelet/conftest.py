"""A minimal device plugin written from the v1beta1 spec, to drive the DeviceManager in unit tests."""

from __future__ import annotations

import queue
import shutil
import tempfile
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from mockgpu.deviceplugin.api import api_pb2 as pb
from mockgpu.deviceplugin.api import api_pb2_grpc as pb_grpc


class FakePlugin(pb_grpc.DevicePluginServicer):
    """Serves DevicePlugin on <dir>/<name>.sock; every ListAndWatch message is the full list."""

    def __init__(self, plugin_dir: Path, resource: str, ids: list[str], *, preferred: bool = False) -> None:
        self.dir = plugin_dir
        self.resource = resource
        self.endpoint = resource.replace("/", "-") + ".sock"
        self.health = {i: "Healthy" for i in ids}
        self.numa: dict[str, int] = {}
        self.preferred_available = preferred
        self.pre_start_required = False
        self.pre_start_calls: list[list[str]] = []
        self.prefer: list[str] | None = None  # what GetPreferredAllocation answers (None: first N)
        self.fail_allocate = ""
        self.fail_preferred = ""
        self.allocate_calls: list[list[str]] = []
        self.preferred_calls: list[tuple[list[str], int]] = []
        self._updates: queue.Queue = queue.Queue()
        self._server: grpc.Server | None = None

    def serve(self) -> FakePlugin:
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_DevicePluginServicer_to_server(self, self._server)
        self._server.add_insecure_port(f"unix://{self.dir / self.endpoint}")
        self._server.start()
        return self

    def register(self, version: str = "v1beta1", resource: str | None = None) -> None:
        with grpc.insecure_channel(f"unix://{self.dir / 'kubelet.sock'}") as ch:
            pb_grpc.RegistrationStub(ch).Register(
                pb.RegisterRequest(version=version, endpoint=self.endpoint, resource_name=resource or self.resource),
                timeout=15,
            )

    def set_health(self, device: str, health: str) -> None:
        self.health[device] = health
        self._updates.put(True)

    def stop(self) -> None:
        self._updates.put(None)
        if self._server is not None:
            self._server.stop(grace=0).wait(5)
            self._server = None
        (self.dir / self.endpoint).unlink(missing_ok=True)

    # -- DevicePlugin ---------------------------------------------------------------------
    def GetDevicePluginOptions(self, request, context):  # noqa: N802
        return pb.DevicePluginOptions(
            get_preferred_allocation_available=self.preferred_available, pre_start_required=self.pre_start_required
        )

    def _devices(self):
        out = []
        for i, h in self.health.items():
            topo = pb.TopologyInfo(nodes=[pb.NUMANode(ID=self.numa[i])]) if i in self.numa else None
            out.append(pb.Device(ID=i, health=h, topology=topo))
        return pb.ListAndWatchResponse(devices=out)

    def ListAndWatch(self, request, context):  # noqa: N802
        yield self._devices()
        while context.is_active():
            try:
                item = self._updates.get(timeout=0.2)
            except queue.Empty:
                continue
            if item is None:
                return
            yield self._devices()

    def GetPreferredAllocation(self, request, context):  # noqa: N802
        r = request.container_requests[0]
        self.preferred_calls.append((list(r.available_deviceIDs), r.allocation_size))
        if self.fail_preferred:
            context.abort(grpc.StatusCode.INTERNAL, self.fail_preferred)
        ids = self.prefer if self.prefer is not None else list(r.available_deviceIDs)[: r.allocation_size]
        return pb.PreferredAllocationResponse(
            container_responses=[pb.ContainerPreferredAllocationResponse(deviceIDs=ids)]
        )

    def PreStartContainer(self, request, context):  # noqa: N802
        self.pre_start_calls.append(list(request.devices_ids))
        return pb.PreStartContainerResponse()

    def Allocate(self, request, context):  # noqa: N802
        ids = list(request.container_requests[0].devices_ids)
        self.allocate_calls.append(ids)
        if self.fail_allocate:
            context.abort(grpc.StatusCode.UNKNOWN, self.fail_allocate)
        resp = pb.ContainerAllocateResponse(
            envs={"FAKE_VISIBLE": ",".join(ids), "SHARED": self.resource},
            mounts=[pb.Mount(container_path="/run/fake", host_path=str(self.dir), read_only=True)],
            devices=[pb.DeviceSpec(container_path=f"/dev/{i}", host_path="/dev/null", permissions="rw") for i in ids],
            annotations={"fake/resource": self.resource},
        )
        return pb.AllocateResponse(container_responses=[resp])


@pytest.fixture
def plugin_dir():
    d = Path(tempfile.mkdtemp(prefix="dm", dir="/tmp"))  # short: unix socket paths max out at 107 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def plugins():
    made: list[FakePlugin] = []

    def make(plugin_dir: Path, resource: str, ids: list[str], **kw) -> FakePlugin:
        p = FakePlugin(plugin_dir, resource, ids, **kw).serve()
        made.append(p)
        return p

    yield make
    for p in made:
        p.stop()
