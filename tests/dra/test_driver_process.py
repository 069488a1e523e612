"""The ``mockgpu dra-driver`` process end to end over its real sockets: plugin registration, ResourceSlices
published through the (fake) Kubernetes API, NodePrepareResources / NodeUnprepareResources writing and removing
CDI specs, upstream's errors, and a clean shutdown that deletes the slices and the sockets."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import polling
import pytest

from mockgpu.config.clusterspec import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.dra.api import dra_v1_pb2 as dpb
from mockgpu.dra.api import dra_v1_pb2_grpc as dpb_grpc
from mockgpu.dra.api import pluginregistration_v1_pb2 as rpb
from mockgpu.dra.api import pluginregistration_v1_pb2_grpc as rpb_grpc
from mockgpu.dra.slices import device_uuids

from .fake_api import FakeAPI

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "clusters" / "dra.yaml"
NODE = "dra-0"


class Driver:
    def __init__(self, api: FakeAPI, base: Path) -> None:
        self.api, self.base = api, base
        self.plugins, self.registry, self.cdi = base / "plugins", base / "registry", base / "cdi"
        self.driver_dir = base / "driver"
        self.log = base / "driver.log"
        argv = [sys.executable, "-m", "mockgpu.control.kubelet.plugin_main", "dra-driver", "--spec", str(SPEC),
                "--node", NODE, "--plugin-dir", str(self.plugins), "--registry-dir", str(self.registry),
                "--cdi-dir", str(self.cdi), "--driver-dir", str(self.driver_dir),
                "--kubeconfig", str(api.kubeconfig(base / "kubeconfig"))]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=out, start_new_session=True,
                                         env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.reg_sock = self.registry / "gpu.mockgpu.io-reg.sock"
        self.dra_sock = self.plugins / "gpu.mockgpu.io" / "dra.sock"

    def channel(self, sock: Path) -> grpc.Channel:
        polling.wait_for(lambda: sock.exists() or self.proc.poll() is not None, 20, f"{sock}")
        assert self.proc.poll() is None, self.log.read_text()
        return grpc.insecure_channel(f"unix://{sock}")

    def dra(self) -> dpb_grpc.DRAPluginStub:
        return dpb_grpc.DRAPluginStub(self.channel(self.dra_sock))

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(20)


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPI]:
    a = FakeAPI().start()
    a.nodes[NODE] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": "node-uid-1"}}
    yield a
    a.stop()


@pytest.fixture(scope="module")
def driver(api: FakeAPI) -> Iterator[Driver]:
    base = Path(tempfile.mkdtemp(prefix="dra-", dir="/tmp"))  # short: Unix socket paths hold 107 bytes
    d = Driver(api, base)
    yield d
    d.stop()
    shutil.rmtree(base, ignore_errors=True)


def claim(name: str, uid: str, results: list[tuple[str, str, str, str]] | None, ns: str = "default") -> dict:
    obj: dict = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": name, "namespace": ns, "uid": uid}, "spec": {}, "status": {}}
    if results is not None:
        obj["status"]["allocation"] = {"devices": {"results": [
            {"request": r, "driver": drv, "pool": pool, "device": dev} for r, drv, pool, dev in results]}}
    return obj


def ref(name: str, uid: str, ns: str = "default") -> dpb.Claim:
    return dpb.Claim(namespace=ns, uid=uid, name=name)


UUIDS = device_uuids(node_inventory(load_spec(SPEC), NODE))
PROFILES = {"1g10gb": "1g.10gb", "3g40gb": "3g.40gb"}


def inventory(driver: Driver) -> list[dict]:
    return json.loads((driver.driver_dir / "inventory.json").read_text())["inventory"]["gpus"]


def test_registration_get_info(driver: Driver) -> None:
    stub = rpb_grpc.RegistrationStub(driver.channel(driver.reg_sock))
    info = stub.GetInfo(rpb.InfoRequest(), timeout=5)
    assert (info.type, info.name, info.endpoint, list(info.supported_versions)) == (
        "DRAPlugin", "gpu.mockgpu.io", str(driver.dra_sock), ["v1.DRAPlugin"])
    assert stub.NotifyRegistrationStatus(rpb.RegistrationStatus(plugin_registered=True), timeout=5) is not None
    with pytest.raises(grpc.RpcError) as ei:
        stub.NotifyRegistrationStatus(rpb.RegistrationStatus(plugin_registered=False, error="no"), timeout=5)
    assert ei.value.details() == "failed registration process: no"


def test_slices_published_owned_by_node(driver: Driver, api: FakeAPI) -> None:
    driver.channel(driver.dra_sock)
    polling.wait_for(lambda: len(api.slices) == 3, 20, "three ResourceSlices")
    slices = list(api.slices.values())
    assert sum(len(s["spec"].get("sharedCounters", [])) for s in slices) == 4
    assert sum(len(s["spec"].get("devices", [])) for s in slices) == 4 * 19  # 64 + 12: two device slices
    for s in slices:
        assert s["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": NODE,
                                                     "uid": "node-uid-1", "controller": True}]
        assert s["spec"]["pool"] == {"name": NODE, "generation": 1, "resourceSliceCount": 3}
    assert sorted(v for v, _ in api.writes) == ["create"] * 3  # written once, not rewritten while unchanged


# (id, claim results, CDI devices -> NVIDIA_VISIBLE_DEVICES, response devices (request, device))
PREPARE = [
    ("one-gpu", [("gpu", "gpu.mockgpu.io", NODE, "gpu-1")], {"gpu": ["gpu-1"]}, [("gpu", "gpu-1")]),
    ("two-requests", [("a", "gpu.mockgpu.io", NODE, "gpu-0-mig-1g10gb-3"),
                      ("a", "gpu.mockgpu.io", NODE, "gpu-0-mig-3g40gb-4"),
                      ("b", "gpu.mockgpu.io", NODE, "gpu-2"),
                      ("c", "other.example.com", NODE, "x"),  # another driver's result: not ours
                      ("d", "gpu.mockgpu.io", "dra-9", "gpu-0")],  # another node's pool: not ours
     {"a": ["gpu-0-mig-1g10gb-3", "gpu-0-mig-3g40gb-4"], "b": ["gpu-2"]},
     [("a", "gpu-0-mig-1g10gb-3"), ("a", "gpu-0-mig-3g40gb-4"), ("b", "gpu-2")]),
    ("subrequest", [("r/big", "gpu.mockgpu.io", NODE, "gpu-3")], {"r.big": ["gpu-3"]}, [("r/big", "gpu-3")]),
]


@pytest.mark.parametrize(("results", "cdi", "devices"), [r[1:] for r in PREPARE], ids=[r[0] for r in PREPARE])
def test_prepare_writes_cdi_and_unprepare_removes_it(driver: Driver, api: FakeAPI, results: list, cdi: dict,
                                                     devices: list) -> None:
    uid = f"uid-{len(results)}-{results[0][0].replace('/', '')}"
    api.claims["default", "c1"] = claim("c1", uid, results)
    stub = driver.dra()
    first = stub.NodePrepareResources(dpb.NodePrepareResourcesRequest(claims=[ref("c1", uid)]), timeout=10)
    again = stub.NodePrepareResources(dpb.NodePrepareResourcesRequest(claims=[ref("c1", uid)]), timeout=10)
    assert first == again  # idempotent
    res = first.claims[uid]
    assert res.error == ""
    assert [(list(d.request_names), d.pool_name, d.device_name) for d in res.devices] == [
        ([r], NODE, dev) for r, dev in devices]
    for d in res.devices:
        assert list(d.cdi_device_ids) == [f"gpu.mockgpu.io/gpu={uid}-{d.request_names[0].replace('/', '.')}"]
    path = driver.cdi / f"gpu.mockgpu.io-gpu_{uid}.json"
    spec = json.loads(path.read_text())
    assert (spec["cdiVersion"], spec["kind"]) == ("0.6.0", "gpu.mockgpu.io/gpu")
    assert spec["containerEdits"] == {  # the fake driver, as the device plugin's Allocate mounts it
        "env": ["MOCKGPU_DRIVER_DIR=/run/mockgpu/driver"],
        "mounts": [{"hostPath": str(driver.driver_dir), "containerPath": "/run/mockgpu/driver",
                    "options": ["rw", "bind"]},
                   {"hostPath": str(driver.driver_dir.parent / "faults"), "containerPath": "/run/mockgpu/faults",
                    "options": ["ro", "bind"]}]}  # the injected faults: read-only
    assert {d["name"]: d["annotations"] for d in spec["devices"]} == {
        f"{uid}-{req}": {"gpu.mockgpu.io/devices": ",".join(names)} for req, names in cdi.items()}
    mig = {m["uuid"]: (g["index"], m["profile"], m["placement_start"]) for g in inventory(driver) for m in g["mig"]}
    assert mig == {UUIDS[d]: (int(d.split("-")[1]), PROFILES[d.split("-")[3]], int(d.split("-")[4]))
                   for _, _, _, d in results if "-mig-" in d}  # MIG instances exist while prepared
    assert {d["name"]: d["containerEdits"]["env"] for d in spec["devices"]} == {
        f"{uid}-{req}": [f"NVIDIA_VISIBLE_DEVICES={','.join(UUIDS[n] for n in names)}"] for req, names in cdi.items()}
    un = stub.NodeUnprepareResources(dpb.NodeUnprepareResourcesRequest(claims=[ref("c1", uid)]), timeout=10)
    assert un.claims[uid].error == "" and not path.exists()
    assert [g["mig"] for g in inventory(driver)] == [[]] * 4  # and are gone once unprepared
    un = stub.NodeUnprepareResources(dpb.NodeUnprepareResourcesRequest(claims=[ref("c1", uid)]), timeout=10)
    assert un.claims[uid].error == ""  # unpreparing again is no error


# (id, stored claim or None, the claim the kubelet names, error details)
RETRIEVE_ERRORS = [
    ("unknown-claim", None, ("nope", "u1"),
     'get resource claims: retrieve claim default/nope: resourceclaims.resource.k8s.io "nope" not found'),
    ("not-allocated", claim("pending", "u2", None), ("pending", "u2"),
     "get resource claims: claim default/pending not allocated"),
    ("replaced", claim("old", "u-new", [("gpu", "gpu.mockgpu.io", NODE, "gpu-0")]), ("old", "u-old"),
     "get resource claims: claim default/old got replaced"),
]


@pytest.mark.parametrize(("stored", "named", "details"), [r[1:] for r in RETRIEVE_ERRORS],
                         ids=[r[0] for r in RETRIEVE_ERRORS])
def test_claim_that_cannot_be_retrieved_fails_the_call(driver: Driver, api: FakeAPI, stored: dict | None,
                                                       named: tuple[str, str], details: str) -> None:
    if stored is not None:
        api.claims["default", stored["metadata"]["name"]] = stored
    with pytest.raises(grpc.RpcError) as ei:
        driver.dra().NodePrepareResources(dpb.NodePrepareResourcesRequest(claims=[ref(*named)]), timeout=10)
    assert (ei.value.code(), ei.value.details()) == (grpc.StatusCode.UNKNOWN, details)
    assert not list(driver.cdi.glob(f"*{named[1]}*"))


def test_unknown_device_fails_only_that_claim(driver: Driver, api: FakeAPI) -> None:
    api.claims["default", "good"] = claim("good", "ug", [("gpu", "gpu.mockgpu.io", NODE, "gpu-0")])
    api.claims["default", "bad"] = claim("bad", "ub", [("gpu", "gpu.mockgpu.io", NODE, "gpu-7")])
    resp = driver.dra().NodePrepareResources(dpb.NodePrepareResourcesRequest(
        claims=[ref("good", "ug"), ref("bad", "ub")]), timeout=10)
    assert resp.claims["ug"].error == "" and len(resp.claims["ug"].devices) == 1
    assert resp.claims["ub"].error == (
        "prepare devices for claim ub: device gpu-7 of pool dra-0 is not published by driver gpu.mockgpu.io")
    assert not resp.claims["ub"].devices
    assert (driver.cdi / "gpu.mockgpu.io-gpu_ug.json").exists()
    assert not (driver.cdi / "gpu.mockgpu.io-gpu_ub.json").exists()


def test_zz_shutdown_deletes_slices_and_sockets(driver: Driver, api: FakeAPI) -> None:
    polling.wait_for(lambda: len(api.slices) == 3, 20, "slices published")
    assert driver.stop() == 0, driver.log.read_text()
    assert api.slices == {}
    assert not driver.dra_sock.exists() and not driver.reg_sock.exists()
