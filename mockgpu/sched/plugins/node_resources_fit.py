"""NodeResourcesFit: does the node have room for the pod's requests, and how full would it be.

Filter as upstream ``fitsRequest`` (kube-scheduler v1.34+): "Too many pods" first, then cpu, memory,
ephemeral-storage and each scalar resource (``Insufficient <name>``), strict ``>`` against allocatable minus
requested. A shortfall where the request exceeds the node's whole allocatable is *unresolvable* (v1.34+),
which makes preemption report "Preemption is not helpful for scheduling". Upstream walks scalar resources in
Go map order; here they are checked in sorted order so messages are reproducible.

Score with the configured strategy over the configured resources (``mockgpu.sched.strategies``), using the
non-zero requests for cpu/memory and the "bypass" rule for scalar resources the pod does not request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mockgpu.apimachinery.names import is_extended_resource_name
from mockgpu.sched import strategies
from mockgpu.sched.framework import Status
from mockgpu.sched.snapshot import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    NodeInfo,
    is_scalar_resource_name,
    pod_requests,
)
from mockgpu.sched.strategies import ScoringStrategy

NAME = "NodeResourcesFit"
TOO_MANY_PODS = "Too many pods"
DEFAULT_RESOURCES = {CPU: 1, MEMORY: 1}


@dataclass(frozen=True)
class FitArgs:
    """``NodeResourcesFitArgs`` after v1 defaulting."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    strategy: ScoringStrategy = ScoringStrategy.LEAST_ALLOCATED
    resources: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RESOURCES))
    shape: Sequence[tuple[int, int]] = ()


@dataclass(frozen=True)
class Insufficient:
    """One shortfall; ``unresolvable`` when even an empty node could not hold the request."""

    resource: str
    reason: str
    unresolvable: bool = False


def _ignored(name: str, args: FitArgs) -> bool:
    if not is_extended_resource_name(name):
        return False
    return name in args.ignored_resources or name.split("/", 1)[0] in args.ignored_resource_groups


def insufficient_resources(request: Mapping[str, int], node: NodeInfo, args: FitArgs) -> list[Insufficient]:
    """Every shortfall of ``request`` on ``node`` in upstream's order."""
    alloc, used = node.allocatable, node.requested
    out: list[Insufficient] = []
    if node.pod_count + 1 > alloc.get(PODS, 0):
        out.append(Insufficient(PODS, TOO_MANY_PODS))
    scalars = {k: v for k, v in request.items() if is_scalar_resource_name(k)}
    if not any(request.get(r, 0) for r in (CPU, MEMORY, EPHEMERAL_STORAGE)) and not scalars:
        return out
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE):
        q = request.get(name, 0)
        if q > 0 and q > alloc.get(name, 0) - used.get(name, 0):
            out.append(Insufficient(name, f"Insufficient {name}", q > alloc.get(name, 0)))
    for name in sorted(scalars):
        q = scalars[name]
        if q == 0 or _ignored(name, args):
            continue
        if q > alloc.get(name, 0) - used.get(name, 0):
            out.append(Insufficient(name, f"Insufficient {name}", q > alloc.get(name, 0)))
    return out


def resource_vectors(pod: Mapping[str, Any], node: NodeInfo, resources: Mapping[str, int], *,
                     use_requested: bool) -> tuple[dict[str, int], dict[str, int]]:
    """``(requested incl. pod, allocatable)`` per configured resource; see ``allocation_vectors``."""
    requested, _, allocatable = allocation_vectors(pod, node, resources, use_requested=use_requested)
    return requested, allocatable


def allocation_vectors(pod: Mapping[str, Any], node: NodeInfo, resources: Mapping[str, int], *,
                       use_requested: bool) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """``(requested, allocated, allocatable)`` per configured resource, as upstream's
    ``calculateNodeAllocatableRequest`` (resource_allocation.go, v1.37.2).

    ``allocated`` is what the node's pods already use, ``requested`` that plus the incoming pod. cpu and memory
    come from the non-zero sums (``use_requested=False``, NodeResourcesFit scoring) or the real requests
    (``True``, BalancedAllocation); ephemeral-storage and scalar resources always from the real requests.
    A scalar resource the pod does not request is bypassed, and so is every resource the node has no
    allocatable for (all three entries 0, which every scorer skips). Names that are neither cpu, memory,
    ephemeral-storage nor scalar (``pods``, ``storage``) are not tracked per node upstream: also 0.
    """
    pod_req = pod_requests(pod, non_zero=not use_requested, pod_level=use_requested)
    node_req = node.requested if use_requested else {**node.requested, **node.non_zero_requested}
    requested: dict[str, int] = {}
    allocated: dict[str, int] = {}
    allocatable: dict[str, int] = {}
    for name in resources:
        requested[name] = allocated[name] = allocatable[name] = 0
        p = pod_req.get(name, 0)
        if p == 0 and is_scalar_resource_name(name):
            continue
        if name not in (CPU, MEMORY, EPHEMERAL_STORAGE) and not is_scalar_resource_name(name):
            continue
        alloc = node.allocatable.get(name, 0)
        if alloc == 0:
            continue
        allocatable[name] = alloc
        allocated[name] = node_req.get(name, 0)
        requested[name] = allocated[name] + p
    return requested, allocated, allocatable


class NodeResourcesFit:
    """Filter + Score plugin; see the module docstring."""

    name = NAME

    def __init__(self, args: FitArgs | None = None) -> None:
        self.args = args or FitArgs()

    def filter(self, pod: Mapping[str, Any], node: NodeInfo) -> Status:
        short = insufficient_resources(pod_requests(pod), node, self.args)
        if not short:
            return Status.success()
        resolvable = not any(s.unresolvable for s in short)
        return Status.unschedulable(*(s.reason for s in short), resolvable=resolvable)

    def score(self, pod: Mapping[str, Any], node: NodeInfo) -> int:
        requested, allocatable = resource_vectors(pod, node, self.args.resources, use_requested=False)
        return strategies.score(self.args.strategy, requested, allocatable, self.args.resources,
                                self.args.shape or None)
