"""The real ``mockgpu device-plugin`` process against our kubelet-side DeviceManager, for every node
of clusters/workshop.yaml: registration, ListAndWatch, Allocate, GetPreferredAllocation, and
re-registration after a kubelet restart (kubelet.sock deleted and recreated)."""

from __future__ import annotations

import time

import pytest
from kubelet_harness import GPU, NODES, SPEC, Node, requires_device_plugin

from mockgpu.config.clusterspec import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.control.kubelet.devicemanager import AdmissionError

# What each workshop node must advertise (resource -> device count), from the spec's comments.
EXPECTED = {
    "whole-0": {GPU: 4},
    "mig-0": {"nvidia.com/mig-1g.10gb": 8, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1},
    "shared-0": {GPU: 8},
}
pytestmark = requires_device_plugin


@pytest.fixture(params=NODES)
def node(request):
    n = Node(request.param)
    try:
        yield n.start()
    finally:
        n.close()


def test_every_spec_node_has_expectations() -> None:
    assert sorted(NODES) == sorted(EXPECTED)


def test_registers_lists_and_allocates(node: Node) -> None:
    want = EXPECTED[node.name]
    node.wait_allocatable(want)
    assert node.dm.node_resources()[0] == want
    assert {r for r, _ in node.dm.registrations} == set(want)
    inv = node_inventory(load_spec(SPEC), node.name)
    for resource, count in want.items():
        ids = node.dm.devices(resource)
        assert len(ids) == count and all(ids.values()), ids
        assert node.dm.endpoint(resource).options.get_preferred_allocation_available
        for device_id in ids:
            uuid, _, replica = device_id.partition("::")
            dev = inv.device(uuid)  # KeyError if the plugin lists a device the node does not have
            if node.name == "shared-0":
                assert replica.isdigit() and 0 <= int(replica) < 4
                assert dev.uuid.startswith("GPU-")
            else:
                assert replica == ""
            if resource.startswith("nvidia.com/mig-"):
                assert f"nvidia.com/mig-{dev.profile}" == resource
    # Allocate one device of each resource to its own container; each sees exactly its UUID(s).
    for i, resource in enumerate(sorted(want)):
        alloc = node.dm.allocate(f"pod-{i}", "main", {resource: 1})
        (device_id,) = alloc.devices[resource]
        assert alloc.envs["NVIDIA_VISIBLE_DEVICES"] == device_id.partition("::")[0]
        assert "CUDA_VISIBLE_DEVICES" not in alloc.envs
    total_taken = {r: len([k for k, v in node.dm.pod_devices().items() if r in v]) for r in want}
    assert all(n == 1 for n in total_taken.values())


def test_no_device_is_given_twice_and_exhaustion_is_an_admission_error(node: Node) -> None:
    want = EXPECTED[node.name]
    node.wait_allocatable(want)
    resource, count = max(want.items(), key=lambda kv: kv[1])
    seen: list[str] = []
    for i in range(count):
        seen += node.dm.allocate(f"pod-{i}", "c", {resource: 1}).devices[resource]
    assert sorted(seen) == sorted(node.dm.devices(resource))
    with pytest.raises(AdmissionError) as err:
        node.dm.allocate("one-too-many", "c", {resource: 1})
    assert err.value.message == (
        f"Allocate failed due to requested number of devices unavailable for {resource}. Requested: 1, "
        "Available: 0, which is unexpected"
    )
    node.dm.remove_pod("pod-0")
    assert node.dm.allocate("one-too-many", "c", {resource: 1}).devices[resource]


@pytest.mark.parametrize("node", ["shared-0"], indirect=True)
def test_shared_replicas_see_their_physical_gpus(node: Node) -> None:
    node.wait_allocatable(EXPECTED[node.name])
    alloc = node.dm.allocate("p", "c", {GPU: 3})
    uuids = {d.partition("::")[0] for d in alloc.devices[GPU]}
    assert set(alloc.envs["NVIDIA_VISIBLE_DEVICES"].split(",")) == uuids


@pytest.mark.parametrize("node", ["whole-0"], indirect=True)
def test_preferred_allocation_picks_an_nvlink_pair(node: Node) -> None:
    node.wait_allocatable(EXPECTED[node.name])
    inv = node_inventory(load_spec(SPEC), node.name)
    index = {g.uuid: g for g in inv.gpus}

    def is_nvlink_pair(ids: list[str]) -> bool:
        a, b = (index[i] for i in ids)
        return b.index in a.nvlink_peers

    # Direct RPC: with GPU 2 required, the plugin must add its NVLink peer 3.
    ep = node.dm.endpoint(GPU)
    got = ep.preferred(sorted(index), [inv.gpus[2].uuid], 2)
    assert sorted(index[i].index for i in got) == [2, 3]
    # Through admission: two GPUs come as an NVLink pair (sorted-UUID order alone would not give one).
    alloc = node.dm.allocate("pair", "c", {GPU: 2})
    assert is_nvlink_pair(alloc.devices[GPU]), [index[i].index for i in alloc.devices[GPU]]
    assert set(alloc.envs["NVIDIA_VISIBLE_DEVICES"].split(",")) == set(alloc.devices[GPU])
    alloc2 = node.dm.allocate("pair2", "c", {GPU: 2})
    assert is_nvlink_pair(alloc2.devices[GPU])


def test_plugin_registers_again_after_kubelet_restart(node: Node) -> None:
    want = EXPECTED[node.name]
    node.wait_allocatable(want)
    resource = sorted(want)[0]
    held = node.dm.allocate("survivor", "main", {resource: 1}).devices[resource]
    t0 = time.monotonic()
    node.restart_kubelet()
    assert node.dm.node_resources()[1] == {r: 0 for r in want}  # checkpointed, no plugin yet
    node.wait_allocatable(want)
    assert {r for r, _ in node.dm.registrations} == set(want)
    assert time.monotonic() - t0 < 30
    # The checkpoint kept the allocation: the device is still taken after the restart.
    assert node.dm.get_allocation("survivor", "main").devices[resource] == held
    got = node.dm.allocate("newcomer", "main", {resource: 1}).devices[resource]
    assert got != held
    assert node.proc.poll() is None, node.plugin_log()
