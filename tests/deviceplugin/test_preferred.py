"""GetPreferredAllocation: topology for whole GPUs, distributed/packed for replicas."""

from __future__ import annotations

import pytest
from dp_inventories import make_gpu, mig_node, plain_node, whole_node

from mockgpu.config.nvidia import DevicePluginConfig
from mockgpu.deviceplugin.resources import InvalidRequestError, UnknownDeviceError, resource_managers
from mockgpu.gpu.inventory import NodeInventory


def cfg(**data) -> DevicePluginConfig:
    return DevicePluginConfig.model_validate({"version": "v1", **data})


def whole_rm():
    (rm,) = resource_managers(whole_node(), cfg())
    return rm


def idx(rm, ids):
    return [rm.device(i).gpu_index for i in ids]


# (id, available GPU indices, must-include indices, size, expected indices)
WHOLE = [
    ("nvlink-pair-first", [0, 1, 2, 3], [], 2, [0, 1]),
    ("nvlink-pair-when-0-busy", [1, 2, 3], [], 2, [2, 3]),
    ("must-include-3-takes-its-peer", [0, 1, 2, 3], [3], 2, [3, 2]),
    ("must-include-across-pairs", [0, 1, 2, 3], [0, 2], 2, [0, 2]),
    ("three-prefers-pair-plus-numa", [0, 1, 2, 3], [], 3, [0, 1, 2]),
    ("cross-numa-tie-takes-lowest-index", [0, 2, 3], [0], 2, [0, 2]),
    ("all-four", [0, 1, 2, 3], [], 4, [0, 1, 2, 3]),
    ("size-equals-must-include", [0, 1, 2, 3], [1], 1, [1]),
]


@pytest.mark.parametrize(("avail", "must", "size", "expected"), [c[1:] for c in WHOLE], ids=[c[0] for c in WHOLE])
def test_whole_gpu_topology(avail, must, size, expected) -> None:
    rm = whole_rm()
    uuids = [d.id for d in rm.devices()]
    got = rm.preferred_allocation([uuids[i] for i in avail], [uuids[i] for i in must], size)
    assert idx(rm, got) == expected


def test_cross_numa_pair_scores_lower_than_same_numa() -> None:
    # GPUs 1 and 2 have no NVLink; with 0 and 3 busy, the only pair is cross-NUMA; with 1, 2, 3 free and
    # 3 required, its NVLink peer 2 wins over 1.
    rm = whole_rm()
    u = [d.id for d in rm.devices()]
    assert idx(rm, rm.preferred_allocation([u[1], u[2], u[3]], [u[3]], 2)) == [3, 2]


def test_same_numa_wins_without_nvlink() -> None:
    inv = NodeInventory("c", "pcie-0", tuple(make_gpu("pcie-0", i, "L4", numa=i // 2) for i in range(4)))
    (rm,) = resource_managers(inv, cfg())
    u = [d.id for d in rm.devices()]
    assert idx(rm, rm.preferred_allocation(u, [u[2]], 2)) == [2, 3]
    assert idx(rm, rm.preferred_allocation(u, [], 2)) == [0, 1]


def shared_rm(policy: str, count: int = 2, replicas: int = 4):
    (rm,) = resource_managers(plain_node(count=count), cfg(
        flags={"plugin": {"sharedDevicesAllocationPolicy": policy}},
        sharing={"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}}))
    return rm


# (id, policy, ids in use elsewhere (gpu, replica), size, expected GPU indices of the answer)
SHARED = [
    ("distributed-spreads", "distributed", [], 2, [0, 1]),
    ("packed-fills-one-gpu", "packed", [], 2, [0, 0]),
    ("distributed-avoids-busy-gpu", "distributed", [(0, 0), (0, 1)], 2, [1, 1]),
    ("packed-joins-busy-gpu", "packed", [(1, 0)], 3, [1, 1, 1]),
    ("distributed-balances-four", "distributed", [], 4, [0, 1, 0, 1]),
]


@pytest.mark.parametrize(("policy", "busy", "size", "expected"), [c[1:] for c in SHARED], ids=[c[0] for c in SHARED])
def test_shared_policies(policy, busy, size, expected) -> None:
    rm = shared_rm(policy)
    busy_ids = {f"{rm.inventory.gpus[g].uuid}::{r}" for g, r in busy}
    avail = [d.id for d in rm.devices() if d.id not in busy_ids]
    got = rm.preferred_allocation(avail, [], size)
    assert idx(rm, got) == expected
    assert len(set(got)) == size and set(got) <= set(avail)


def test_shared_must_include_counts_toward_gpu_use() -> None:
    rm = shared_rm("packed")
    u1 = rm.inventory.gpus[1].uuid
    got = rm.preferred_allocation([d.id for d in rm.devices()], [f"{u1}::2"], 2)
    assert got[0] == f"{u1}::2" and idx(rm, got) == [1, 1]


def test_mig_devices_use_greedy_policy() -> None:
    rms = resource_managers(mig_node(), cfg(flags={"migStrategy": "mixed"}))
    rm = next(r for r in rms if r.resource == "nvidia.com/mig-1g.10gb")
    avail = [d.id for d in rm.devices()]
    assert idx(rm, rm.preferred_allocation(avail, [], 2)) == [0, 1]  # distributed over the two parents


@pytest.mark.parametrize(("avail", "must", "size", "exc"), [
    (["GPU-unknown"], [], 1, UnknownDeviceError),
    ([0, 1], [0, 1], 1, InvalidRequestError),
    ([0], [], 2, InvalidRequestError),
], ids=["unknown-id", "must-include-exceeds-size", "size-exceeds-available"])
def test_bad_preferred_requests(avail, must, size, exc) -> None:
    rm = whole_rm()
    u = [d.id for d in rm.devices()]

    def ids(xs):
        return [u[x] if isinstance(x, int) else x for x in xs]

    with pytest.raises(exc):
        rm.preferred_allocation(ids(avail), ids(must), size)
