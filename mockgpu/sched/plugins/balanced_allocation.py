"""NodeResourcesBalancedAllocation: prefer placements that improve how evenly a node's resources are used.

As kube-scheduler v1.37.2 (``balanced_allocation.go``, ``resource_allocation.go``). For each configured
resource with allocatable > 0 (real requests, not the non-zero defaults; a scalar resource the pod does not
request is bypassed) the fraction ``min(used/allocatable, 1)`` is taken twice: *without* the pod
(``allocated``: the node's pods) and *with* it. Each set gives a balance score
``int((1 - std) * 100)`` (two fractions: ``std = |f1-f2|/2``; more: population standard deviation; fewer: 0),
and the plugin scores the *change*::

    score = 50 + (50 + score_with_pod - score_without_pod) // 2     (Go integer arithmetic)

so an unchanged balance scores 75, a pod that evens the node out moves towards 100 and one that skews it
towards 50. (mockgpu's v1.35 model scored ``score_with_pod`` alone.) PreScore returns Skip when the pod requests none
of the configured resources (best-effort pods, v1.33+). Resource weights are accepted but unused, as upstream.
Not modelled: DRA-backed extended resources (``DRAExtendedResource``), pod-level resources in-place resize.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mockgpu.sched.framework import MAX_NODE_SCORE, Code, Status
from mockgpu.sched.plugins.node_resources_fit import DEFAULT_RESOURCES, allocation_vectors
from mockgpu.sched.snapshot import NodeInfo, pod_requests

NAME = "NodeResourcesBalancedAllocation"


@dataclass(frozen=True)
class BalancedArgs:
    resources: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RESOURCES))


def balance_score(used: Mapping[str, int], allocatable: Mapping[str, int]) -> int:
    """Upstream ``balancedResourceScore``: 0..100 from one usage vector (resources with allocatable 0 skipped)."""
    fractions = [min(used.get(r, 0) / a, 1.0) for r, a in allocatable.items() if a != 0]
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_score(requested: Mapping[str, int], allocated: Mapping[str, int],
                   allocatable: Mapping[str, int]) -> int:
    """Upstream ``balancedResourceScorer``: the improvement in balance, mapped to 50..100."""
    with_pod = balance_score(requested, allocatable)
    without_pod = balance_score(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + (half + with_pod - without_pod) // 2  # the operand is 0..100, so // is Go's division


class NodeResourcesBalancedAllocation:
    """PreScore + Score plugin; see the module docstring."""

    name = NAME

    def __init__(self, args: BalancedArgs | None = None) -> None:
        self.args = args or BalancedArgs()

    def _pod_requests(self, pod: Mapping[str, Any]) -> Sequence[int]:
        req = pod_requests(pod)
        return [req.get(r, 0) for r in self.args.resources]

    def pre_score(self, pod: Mapping[str, Any], nodes: list[NodeInfo]) -> Status:
        if all(q == 0 for q in self._pod_requests(pod)):
            return Status(Code.SKIP)
        return Status.success()

    def score(self, pod: Mapping[str, Any], node: NodeInfo) -> int:
        if all(q == 0 for q in self._pod_requests(pod)):
            return 0  # upstream Score without PreScore state: best-effort pods score 0
        requested, allocated, allocatable = allocation_vectors(pod, node, self.args.resources, use_requested=True)
        return balanced_score(requested, allocated, allocatable)
