"""Device health as DRA device taints: which devices of the driver's slices get ``gpu.mockgpu.io/xid=<Xid>:NoExecute``
(from ``Driver.health()``), and the publisher keeping a republished taint's ``timeAdded``."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from kubernetes import config

from mockgpu.config.clusterspec import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.dra.health import TAINT_KEY, health_taint, with_health_taints
from mockgpu.dra.publish import SlicePublisher
from mockgpu.dra.slices import node_slices
from mockgpu.gpu.driver import Driver, Health, write_node_driver

from .fake_api import FakeAPI

ROOT = Path(__file__).resolve().parents[2]
INV = node_inventory(load_spec(ROOT / "clusters" / "dra.yaml"), "dra-0")


def _taints(slices: list[dict]) -> dict[str, list[dict]]:
    return {d["name"]: d["taints"] for s in slices for d in s["spec"].get("devices") or [] if d.get("taints")}


@pytest.mark.parametrize(("health", "want"), [
    (None, None),
    (Health(True, ()), None),
    (Health(True, (13, 31)), None),  # application errors leave the device healthy
    (Health(False, (79,)), {"key": TAINT_KEY, "value": "79", "effect": "NoExecute"}),
    (Health(False, (48, 13)), {"key": TAINT_KEY, "value": "48", "effect": "NoExecute"}),  # the newest fatal one
], ids=["unknown", "healthy", "application-xids", "xid-79", "xid-48-then-13"])
def test_health_taint(health: Health | None, want: dict | None) -> None:
    assert health_taint(health) == want


def test_injected_xid_taints_the_gpu_and_its_mig_devices_only(tmp_path: Path) -> None:
    write_node_driver(tmp_path / "drv", INV)
    driver = Driver(tmp_path / "drv")
    slices = node_slices(INV)
    assert _taints(with_health_taints(slices, driver.health())) == {}
    gpu0 = INV.gpus[0]
    driver.inject_xid(gpu0.uuid, 79)
    tainted = with_health_taints(slices, driver.health())
    assert _taints(slices) == {}  # the input is not changed
    by_device = _taints(tainted)
    parent = {d["name"]: (d["attributes"].get("parentUUID") or d["attributes"]["uuid"])["string"]
              for s in slices for d in s["spec"].get("devices") or []}
    assert set(by_device) == {name for name, uuid in parent.items() if uuid == gpu0.uuid}
    assert "gpu-0" in by_device and "gpu-1" not in by_device
    assert by_device["gpu-0"] == [{"key": TAINT_KEY, "value": "79", "effect": "NoExecute"}]
    driver.clear_xids(gpu0.uuid)  # a reset: the taint goes
    assert _taints(with_health_taints(slices, driver.health())) == {}


@pytest.fixture
def api(tmp_path: Path):
    a = FakeAPI().start()
    a.nodes["dra-0"] = {"metadata": {"name": "dra-0", "uid": "n-uid"}}
    a.client = config.new_client_from_config(config_file=str(a.kubeconfig(tmp_path / "kc")))
    yield a
    a.stop()


def test_republishing_keeps_time_added_of_the_same_taint(api: FakeAPI) -> None:
    health = {INV.gpus[0].uuid: Health(False, (79,))}
    want = with_health_taints(node_slices(INV), health)
    for s in want:  # what the server stored: its defaulting gave the taint a time
        stored = copy.deepcopy(s)
        stored["metadata"]["resourceVersion"] = "1"
        stored["spec"]["pool"]["generation"] = 1
        for d in stored["spec"].get("devices") or []:
            for t in d.get("taints") or []:
                t["timeAdded"] = "2026-01-01T00:00:00Z"
        api.slices[s["metadata"]["name"]] = stored
    assert SlicePublisher(api.client, "dra-0", want).sync() is False  # nothing changed: nothing written
    assert api.writes == []
    other = with_health_taints(node_slices(INV), {INV.gpus[0].uuid: Health(False, (48,))})
    assert SlicePublisher(api.client, "dra-0", other).sync() is True  # another Xid: a new taint, no old time
    written = _taints(list(api.slices.values()))
    assert written["gpu-0"] == [{"key": TAINT_KEY, "value": "48", "effect": "NoExecute"}]
