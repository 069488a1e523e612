"""GetPreferredAllocation: which of the kubelet's available devices the plugin would pick.

Two policies, chosen as NVIDIA's plugin chooses them:

* Whole, unreplicated GPUs: a best-effort topology policy in the spirit of go-gpuallocator. Every
  pair of GPUs gets a link score (NVLink 100, same NUMA node 20, across NUMA nodes 10, the
  numbers go-gpuallocator uses for NVLink / same-CPU / cross-CPU), and the set of the requested
  size with the highest summed pair score wins, always containing the must-include devices; ties go
  to the lowest GPU indices. Simplified: go-gpuallocator scores whole partitions of the available
  GPUs (to limit fragmentation for later requests); this scores only the chosen set, and falls back
  to the greedy policy when the number of candidate sets is too large to enumerate.
* Replicas and MIG devices: a greedy pick per physical GPU with the
  ``sharedDevicesAllocationPolicy``: ``distributed`` takes the next device from the physical GPU
  with the fewest devices in use (spreading replicas over GPUs), ``packed`` from the one with the
  most in use that still has one free (filling a GPU before the next).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from math import comb
from typing import Protocol

from mockgpu.deviceplugin.devices import Device, InvalidRequestError
from mockgpu.gpu.inventory import NodeInventory

NVLINK_SCORE = 100
SAME_NUMA_SCORE = 20
CROSS_NUMA_SCORE = 10
MAX_CANDIDATE_SETS = 20000


class NodeResourceManager(Protocol):
    """What the policies read of a resource manager (``resources.NodeResourceManager`` is one)."""

    inventory: NodeInventory
    shared_policy: str

    def devices(self) -> tuple[Device, ...]: ...

    def device(self, device_id: str) -> Device: ...


def preferred_allocation(
    rm: NodeResourceManager, available: Sequence[str], required: Sequence[str], size: int
) -> list[str]:
    """The preferred device IDs for one container request (validated against ``rm``)."""
    avail = list(dict.fromkeys(available))
    must = list(dict.fromkeys(required))
    for i in avail + must:
        rm.device(i)  # UnknownDeviceError for IDs this resource does not own
    if size < 0:
        raise InvalidRequestError(f"invalid allocation size {size}")
    if len(must) > size:
        raise InvalidRequestError(f"{len(must)} must-include devices exceed the allocation size {size}")
    missing = [i for i in must if i not in avail]
    if missing:
        avail += missing  # the kubelet lists must-include devices among the available ones; be lenient
    if size > len(avail):
        raise InvalidRequestError(f"allocation size {size} is larger than the {len(avail)} available devices")
    devices = [rm.device(i) for i in avail]
    whole = all(d.replica is None and d.mig_profile is None for d in devices)
    if whole and comb(len(avail) - len(must), size - len(must)) <= MAX_CANDIDATE_SETS:
        return _best_effort(rm, devices, must, size)
    return _greedy(rm, devices, must, size)


def pair_score(rm: NodeResourceManager, a: Device, b: Device) -> int:
    """go-gpuallocator-style link score between the physical GPUs of two devices."""
    by_index = {g.index: g for g in rm.inventory.gpus}  # the inventory may hold only some GPUs
    ga, gb = by_index[a.gpu_index], by_index[b.gpu_index]
    if gb.index in ga.nvlink_peers or ga.index in gb.nvlink_peers:
        return NVLINK_SCORE
    return SAME_NUMA_SCORE if ga.numa_node == gb.numa_node else CROSS_NUMA_SCORE


def _best_effort(rm: NodeResourceManager, devices: list[Device], must: list[str], size: int) -> list[str]:
    by_id = {d.id: d for d in devices}
    fixed = [by_id[i] for i in must]
    rest = sorted((d for d in devices if d.id not in set(must)), key=lambda d: (d.gpu_index, d.id))
    best: tuple[int, list[Device]] | None = None
    for extra in itertools.combinations(rest, size - len(fixed)):
        chosen = fixed + list(extra)
        score = sum(pair_score(rm, a, b) for a, b in itertools.combinations(chosen, 2))
        if best is None or score > best[0]:
            best = (score, chosen)
    chosen = best[1] if best else fixed
    return [d.id for d in chosen]


def _greedy(rm: NodeResourceManager, devices: list[Device], must: list[str], size: int) -> list[str]:
    available = {d.id for d in devices}
    # Devices of this resource the kubelet did not offer are in use by other containers.
    in_use = Counter(d.gpu_index for d in rm.devices() if d.id not in available)
    chosen = list(must)
    for i in must:
        in_use[rm.device(i).gpu_index] += 1
    free = sorted((d for d in devices if d.id not in set(must)), key=lambda d: (d.gpu_index, d.replica or 0, d.id))
    packed = rm.shared_policy == "packed"
    while len(chosen) < size:
        def rank(d: Device) -> tuple[int, int]:
            used = in_use[d.gpu_index]
            return (-used if packed else used, d.gpu_index)

        pick = min(free, key=rank)
        free.remove(pick)
        chosen.append(pick.id)
        in_use[pick.gpu_index] += 1
    return chosen
