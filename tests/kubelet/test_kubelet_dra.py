"""The kubelet's DRA side: plugin registration through the registry directory, preparing a pod's claims
through a real driver (gRPC over Unix sockets), CDI env per container, unprepare, and a pod worker that waits
until its claim is reserved for it. Claims come from an in-memory getter (no API server)."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
import polling
import pytest

from mockgpu.config.clusterspec import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.control.kubelet.dramanager import DRAError, DRAManager
from mockgpu.control.kubelet.pluginwatcher import PluginWatcher
from mockgpu.control.kubelet.podworker import PodWorker
from mockgpu.control.kubelet.restart import CrashLoopBackoff
from mockgpu.dra.api import pluginregistration_v1_pb2 as rpb
from mockgpu.dra.api import pluginregistration_v1_pb2_grpc as rpb_grpc
from mockgpu.dra.dynamicmig import prepared_devices
from mockgpu.dra.prepare import CDIDir, ClaimRef, Preparer
from mockgpu.dra.server import DriverServers
from mockgpu.dra.slices import device_uuids

ROOT = Path(__file__).resolve().parents[2]
NODE = "dra-0"
UUIDS = device_uuids(node_inventory(load_spec(ROOT / "clusters" / "dra.yaml"), NODE))
POD_UID = "pod-uid-1"


class Claims(dict):
    def get_claim(self, ns: str, name: str) -> dict:
        if (ns, name) not in self:
            raise LookupError(f'resourceclaims.resource.k8s.io "{name}" not found')
        return self[ns, name]


def claim(name: str, uid: str, results: list[tuple[str, str]] | None, *, reserved: bool = True,
          owner: str | None = None) -> dict:
    obj: dict = {"metadata": {"name": name, "namespace": "ns", "uid": uid}, "status": {}}
    if owner:
        obj["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner,
                                               "controller": True}]
    if results is not None:
        obj["status"]["allocation"] = {"devices": {"results": [
            {"request": r, "driver": "gpu.mockgpu.io", "pool": NODE, "device": d} for r, d in results]}}
    if reserved:
        obj["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": POD_UID}]
    return obj


def pod(containers: list[dict], claims: list[dict], statuses: list[dict] | None = None, uid: str = POD_UID) -> dict:
    p = {"metadata": {"name": "p", "namespace": "ns", "uid": uid},
         "spec": {"restartPolicy": "Never", "containers": containers, "resourceClaims": claims,
                  "terminationGracePeriodSeconds": 1}, "status": {}}
    if statuses is not None:
        p["status"]["resourceClaimStatuses"] = statuses
    return p


def ctr(name: str, claims: list[dict], *command: str) -> dict:
    return {"name": name, "image": "mockgpu/workload", "command": list(command or ("true",)),
            "resources": {"claims": claims}}


class Node:
    """A real driver (in-process gRPC servers) and the kubelet's watcher and DRA manager on one registry."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.claims = Claims()
        self.cdi = base / "cdi"
        self.preparer = Preparer(NODE, UUIDS, CDIDir(self.cdi), self.claims.get_claim, driver_dir=base / "driver")
        self.servers = DriverServers(self.preparer, base / "plugins", base / "registry").start()
        self.dra = DRAManager(self.cdi, self.claims.get_claim)
        self.watcher = PluginWatcher(base / "registry", {"DRAPlugin": self.dra}, interval=0.05).start()
        polling.wait_for(lambda: self.dra.registered() == ["gpu.mockgpu.io"], 10, "driver registered")

    def stop(self) -> None:
        self.watcher.stop()
        self.servers.stop()
        self.dra.stop()


@pytest.fixture
def node():
    base = Path(tempfile.mkdtemp(prefix="kd", dir="/tmp"))  # short: Unix socket paths hold 107 bytes
    n = Node(base)
    yield n
    n.stop()
    shutil.rmtree(base, ignore_errors=True)


def test_registration_and_deregistration(node: Node) -> None:
    status = node.servers.registration.status
    assert status is not None and status.plugin_registered and status.error == ""
    assert node.dra.plugins["gpu.mockgpu.io"][0] == str(node.servers.dra_socket)
    node.servers.stop()  # the driver goes away: its socket vanishes
    polling.wait_for(lambda: node.dra.registered() == [], 10, "driver deregistered")


class OldPlugin(rpb_grpc.RegistrationServicer):
    def __init__(self, versions: list[str], kind: str = "DRAPlugin") -> None:
        self.versions, self.kind, self.status = versions, kind, None

    def GetInfo(self, request, context):  # noqa: N802
        return rpb.PluginInfo(type=self.kind, name="old.example.com", endpoint="/nowhere.sock",
                              supported_versions=self.versions)

    def NotifyRegistrationStatus(self, request, context):  # noqa: N802
        self.status = request
        return rpb.RegistrationStatusResponse()


REFUSED = [
    ("old-version", ["v1beta1.DRAPlugin"], "DRAPlugin",
     'invalid supported gRPC versions of DRA driver plugin old.example.com at endpoint /nowhere.sock: none of '
     'services supported by the plugin (["v1beta1.DRAPlugin"]) are supported by the kubelet (["v1.DRAPlugin"])'),
    ("no-versions", [], "DRAPlugin",
     "invalid supported gRPC versions of DRA driver plugin old.example.com at endpoint /nowhere.sock: empty list "
     "of supported gRPC services (aka supported versions)"),
    ("csi", ["1.0.0"], "CSIPlugin", "no handler registered for plugin type: CSIPlugin at socket {sock}"),
]


@pytest.mark.parametrize(("versions", "kind", "error"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_registration_is_notified(node: Node, versions: list[str], kind: str, error: str) -> None:
    plugin = OldPlugin(versions, kind)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    rpb_grpc.add_RegistrationServicer_to_server(plugin, server)
    sock = node.base / "registry" / "old.example.com-reg.sock"
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    try:
        polling.wait_for(lambda: plugin.status is not None, 10, "registration status")
        assert not plugin.status.plugin_registered
        assert plugin.status.error == ("RegisterPlugin error -- plugin registration failed with err: "
                                       + error.format(sock=sock))
        assert node.dra.registered() == ["gpu.mockgpu.io"]
    finally:
        server.stop(0)


# (id, stored claims, pod claims, pod claim statuses, error)
PREPARE_ERRORS = [
    ("template-claim-not-created", [], [{"name": "g", "resourceClaimTemplateName": "t"}], [],
     'prepare dynamic resources: pod "ns/p": ResourceClaim not created yet'),
    ("claim-missing", [], [{"name": "g", "resourceClaimName": "c"}], None,
     'prepare dynamic resources: fetch ResourceClaim c: resourceclaims.resource.k8s.io "c" not found'),
    ("not-reserved", [claim("c", "cu", [("gpu", "gpu-0")], reserved=False)], [{"name": "g", "resourceClaimName": "c"}],
     None, f"prepare dynamic resources: pod p ({POD_UID}) is not allowed to use ResourceClaim c (cu)"),
    ("not-allocated", [claim("c", "cu", None)], [{"name": "g", "resourceClaimName": "c"}], None,
     "prepare dynamic resources: ResourceClaim c: not allocated"),
    ("template-claim-not-owned", [claim("p-g-x", "cu", [("gpu", "gpu-0")], owner="someone-else")],
     [{"name": "g", "resourceClaimTemplateName": "t"}], [{"name": "g", "resourceClaimName": "p-g-x"}],
     "prepare dynamic resources: ResourceClaim ns/p-g-x was not created for Pod ns/p (Pod is not owner)"),
    ("unknown-device", [claim("c", "cu", [("gpu", "gpu-9")])], [{"name": "g", "resourceClaimName": "c"}], None,
     "prepare dynamic resources: NodePrepareResources failed for ResourceClaim c: prepare devices for claim cu: "
     "device gpu-9 of pool dra-0 is not published by driver gpu.mockgpu.io"),
]


@pytest.mark.parametrize(("stored", "claims", "statuses", "error"), [r[1:] for r in PREPARE_ERRORS],
                         ids=[r[0] for r in PREPARE_ERRORS])
def test_prepare_errors(node: Node, stored: list[dict], claims: list[dict], statuses: list | None,
                        error: str) -> None:
    for c in stored:
        node.claims["ns", c["metadata"]["name"]] = c
    with pytest.raises(DRAError) as ei:
        node.dra.prepare(pod([ctr("main", [{"name": "g"}])], claims, statuses))
    assert str(ei.value) == error


def test_unregistered_driver() -> None:
    claims = Claims()
    claims["ns", "c"] = claim("c", "cu", [("gpu", "gpu-0")])
    with pytest.raises(DRAError) as ei:
        DRAManager(Path("/nonexistent"), claims.get_claim).prepare(
            pod([ctr("main", [{"name": "g"}])], [{"name": "g", "resourceClaimName": "c"}]))
    assert str(ei.value) == "prepare dynamic resources: DRA driver gpu.mockgpu.io is not registered"


# (container claims, NVIDIA_VISIBLE_DEVICES as device names, or None for no env)
CONTAINERS = [
    ("whole-claim", [{"name": "gpus"}], ["gpu-0", "gpu-1"]),
    ("one-request", [{"name": "gpus", "request": "b"}], ["gpu-1"]),
    ("two-claims", [{"name": "gpus", "request": "a"}, {"name": "mig"}], ["gpu-0", "gpu-2-mig-1g10gb-3"]),
    ("template-claim", [{"name": "mig"}], ["gpu-2-mig-1g10gb-3"]),
    ("no-claims", [], None),
]


def _prepared_pod(node: Node) -> dict:
    node.claims["ns", "c-gpus"] = claim("c-gpus", "u-gpus", [("a", "gpu-0"), ("b", "gpu-1")])
    node.claims["ns", "p-mig-x1"] = claim("p-mig-x1", "u-mig", [("r", "gpu-2-mig-1g10gb-3")], owner=POD_UID)
    p = pod([ctr(n, c) for n, c, _ in CONTAINERS],
            [{"name": "gpus", "resourceClaimName": "c-gpus"}, {"name": "mig", "resourceClaimTemplateName": "t"}],
            [{"name": "mig", "resourceClaimName": "p-mig-x1"}])
    node.dra.prepare(p)
    return p


@pytest.mark.parametrize(("name", "want"), [(n, w) for n, _, w in CONTAINERS], ids=[r[0] for r in CONTAINERS])
def test_cdi_env_per_container(node: Node, name: str, want: list[str] | None) -> None:
    p = _prepared_pod(node)
    c = next(c for c in p["spec"]["containers"] if c["name"] == name)
    env = node.dra.container_env(p, c)
    assert env == ({"NVIDIA_VISIBLE_DEVICES": ",".join(UUIDS[d] for d in want),
                    "MOCKGPU_DRIVER_DIR": "/run/mockgpu/driver"} if want else {})
    assert sorted(d.device for _, d in node.dra.container_devices(p, c)) == sorted(want or [])


def test_unprepare_removes_cdi_specs_and_waits_for_the_last_pod(node: Node) -> None:
    p = _prepared_pod(node)
    assert sorted(f.name for f in node.cdi.iterdir()) == ["gpu.mockgpu.io-gpu_u-gpus.json",
                                                          "gpu.mockgpu.io-gpu_u-mig.json"]
    other = pod([ctr("x", [{"name": "gpus"}])], [{"name": "gpus", "resourceClaimName": "c-gpus"}], uid="pod-uid-2")
    node.claims["ns", "c-gpus"]["status"]["reservedFor"].append({"resource": "pods", "name": "p2", "uid": "pod-uid-2"})
    node.dra.prepare(other)  # already prepared: shared, not prepared twice
    node.dra.unprepare(p)
    assert sorted(f.name for f in node.cdi.iterdir()) == ["gpu.mockgpu.io-gpu_u-gpus.json"]  # p2 still uses it
    node.dra.unprepare(other)
    assert list(node.cdi.iterdir()) == []
    node.dra.unprepare(other)  # again: nothing to do


class RecordingRuntime:
    """Records what the pod worker asks the runtime to start and says each container exited 0 (the real runtime's
    sandbox imports mockgpu from the installed package, which a worktree checkout is not)."""

    def __init__(self) -> None:
        self.started: list = []

    def start(self, spec):  # noqa: ANN001, ANN201
        from datetime import UTC, datetime

        from mockgpu.control.kubelet.container import ContainerStatus

        self.started.append(spec)
        now = datetime.now(UTC)
        return ContainerStatus(spec.pod_uid, spec.name, "terminated", f"fake://{spec.name}", Path("/dev/null"),
                               started_at=now, finished_at=now, exit_code=0, reason="Completed")

    def wait(self, pod_uid: str, name: str, timeout: float | None = None):  # noqa: ANN201
        raise AssertionError("a terminated container is not waited for")

    def stop_pod(self, pod_uid: str, grace: float = 30.0) -> None:
        pass


def test_pod_worker_waits_for_the_claim_then_runs_with_its_device(node: Node) -> None:
    node.claims["ns", "c"] = claim("c", "cu", [("gpu", "gpu-3")], reserved=False)
    p = pod([ctr("main", [{"name": "g"}]), ctr("other", [])], [{"name": "g", "resourceClaimName": "c"}])
    rt = RecordingRuntime()
    events: list = []
    w = PodWorker(p, node_name=NODE, runtime=rt, backoff=CrashLoopBackoff(scale=0.01),  # type: ignore[arg-type]
                  on_event=events.append, dra=node.dra, get_pod=lambda: p)
    try:
        w.start()
        polling.wait_for(lambda: events, 10, "an event")
        assert [(e.type, e.reason, e.message) for e in events] == [(
            "Warning", "FailedPrepareDynamicResources",
            f"Failed to prepare dynamic resources: prepare dynamic resources: pod p ({POD_UID}) is not allowed to "
            "use ResourceClaim c (cu)")]
        assert w.status()["phase"] == "Pending" and rt.started == []
        node.claims["ns", "c"]["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": POD_UID}]
        w.wait(lambda st: st["phase"] == "Succeeded", 30)
        envs = {spec.name: spec.device_envs for spec in rt.started}
        assert envs == {"main": {"NVIDIA_VISIBLE_DEVICES": UUIDS["gpu-3"], "MOCKGPU_DRIVER_DIR": "/run/mockgpu/driver"},
                        "other": {}}
        assert {spec.name: [(m.container_path, m.host_path, m.read_only) for m in spec.mounts]
                for spec in rt.started} == {"main": [("/run/mockgpu/driver", str(node.base / "driver"), False),
                                                     ("/run/mockgpu/faults", str(node.base / "faults"), True)],
                                            "other": []}  # the injected faults beside the driver dir: read-only
        polling.wait_for(lambda: not (node.cdi / "gpu.mockgpu.io-gpu_cu.json").exists(), 10,
                         "claim unprepared once the pod finished")
    finally:
        w.terminate(grace=0)


def test_parallel_prepare_and_unprepare_leave_the_last_state(tmp_path: Path) -> None:
    """The gRPC server runs a prepare and an unprepare in parallel threads; ``on_change`` rebuilds the driver
    directory from the CDI directory. The refresh that read the directory first must not write last: serialized,
    the unprepared claim's device is gone from the final state (seen on kind: a destroyed MIG instance stayed)."""
    claims = Claims({("ns", "a"): claim("a", "uid-a", [("gpu", "gpu-0")]),
                     ("ns", "b"): claim("b", "uid-b", [("gpu", "gpu-1")])})
    written: list[list[str]] = []
    second_wrote = threading.Event()
    calls: list[int] = []

    def refresh() -> None:  # read, then (the first call slowly) write, as refresh_driver_dir does
        calls.append(1)
        first = len(calls) == 2  # call 1 prepares a before the race; call 2 is the racing prepare of b
        seen = prepared_devices(tmp_path / "cdi")
        if first:
            second_wrote.wait(1.0)  # without the lock the unprepare's refresh writes in this window
        written.append(seen)
        if not first and len(calls) == 3:
            second_wrote.set()

    preparer = Preparer(NODE, UUIDS, CDIDir(tmp_path / "cdi"), claims.get_claim, on_change=refresh)
    preparer.prepare([ClaimRef("ns", "uid-a", "a")])
    with futures.ThreadPoolExecutor(2) as pool:
        prep = pool.submit(preparer.prepare, [ClaimRef("ns", "uid-b", "b")])
        time.sleep(0.2)  # the prepare's refresh has read the directory (with a still prepared)
        unprep = pool.submit(preparer.unprepare, [ClaimRef("ns", "uid-a", "a")])
        prep.result(5)
        unprep.result(5)
    assert written[-1] == ["gpu-1"], written
