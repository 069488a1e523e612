"""SlicePublisher against a fake API: create, leave an unchanged pool alone, bump the pool generation and drop
stale slices when the wanted slices change, delete everything on shutdown."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from kubernetes import config

from mockgpu.config.clusterspec import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.dra.publish import SlicePublisher
from mockgpu.dra.slices import node_slices

from .fake_api import FakeAPI

ROOT = Path(__file__).resolve().parents[2]
INV = node_inventory(load_spec(ROOT / "clusters" / "dra.yaml"), "dra-0")


@pytest.fixture
def api(tmp_path: Path):
    a = FakeAPI().start()
    a.nodes["dra-0"] = {"metadata": {"name": "dra-0", "uid": "n-uid"}}
    a.client = config.new_client_from_config(config_file=str(a.kubeconfig(tmp_path / "kc")))
    yield a
    a.stop()


def test_create_then_unchanged(api: FakeAPI) -> None:
    pub = SlicePublisher(api.client, "dra-0", node_slices(INV))
    assert pub.sync() is True
    assert sorted(api.writes) == sorted(("create", s["metadata"]["name"]) for s in node_slices(INV))
    api.writes.clear()
    assert pub.sync() is False and api.writes == []


def test_changed_pool_gets_a_new_generation_and_loses_stale_slices(api: FakeAPI) -> None:
    old = node_slices(INV, gpus=[0, 1, 2, 3])
    for s in old:
        s = copy.deepcopy(s)
        s["spec"]["pool"]["generation"] = 3
        api.slices[s["metadata"]["name"]] = {**s, "metadata": {**s["metadata"], "resourceVersion": "1"}}
    stale = copy.deepcopy(old[-1])
    stale["metadata"] = {"name": "dra-0-gpu.mockgpu.io-devices-9", "resourceVersion": "1"}
    api.slices["dra-0-gpu.mockgpu.io-devices-9"] = stale
    other = copy.deepcopy(old[0])
    other["metadata"] = {"name": "other-driver-slice", "resourceVersion": "1"}
    other["spec"]["driver"] = "other.example.com"
    api.slices["other-driver-slice"] = other
    want = node_slices(INV, gpus=[0, 1])  # fewer GPUs now
    assert SlicePublisher(api.client, "dra-0", want).sync() is True
    ours = {n: s for n, s in api.slices.items() if s["spec"]["driver"] == "gpu.mockgpu.io"}
    assert sorted(ours) == sorted(s["metadata"]["name"] for s in want)
    assert {s["spec"]["pool"]["generation"] for s in ours.values()} == {4}
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in ours.values()} == {len(want)}
    assert "other-driver-slice" in api.slices  # another driver's slice is not ours to touch
    assert ("delete", "dra-0-gpu.mockgpu.io-devices-9") in api.writes


def test_delete_all(api: FakeAPI) -> None:
    pub = SlicePublisher(api.client, "dra-0", node_slices(INV))
    pub.sync()
    pub.delete_all()
    assert api.slices == {}
