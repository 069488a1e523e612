"""NodeResourcesBalancedAllocation: prefer nodes whose resource fractions stay close to each other.

Formula of kube-scheduler v1.29..v1.35 (``balanced_allocation.go``): fractions ``min(req/alloc, 1)`` over the
configured resources with allocatable > 0 (real requests, pod included, scalar resources the pod does not
request bypassed); two fractions → ``|f1-f2|/2``, more → population standard deviation;
``score = int((1 - std) * 100)``. Since v1.33 PreScore returns Skip when the pod requests none of the
configured resources. Not modelled: the master (expected v1.36) variant of PR #135573 that scores the
*change* of balance. Resource weights are accepted but unused, as upstream.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from mockgpu.sched.framework import Code, Status
from mockgpu.sched.plugins.node_resources_fit import DEFAULT_RESOURCES, resource_vectors
from mockgpu.sched.snapshot import NodeInfo, pod_requests

NAME = "NodeResourcesBalancedAllocation"


@dataclass(frozen=True)
class BalancedArgs:
    resources: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RESOURCES))


def balanced_score(requested: Mapping[str, int], allocatable: Mapping[str, int]) -> int:
    """The 0..100 score from the two vectors (resources with allocatable 0 skipped)."""
    fractions = [min(requested.get(r, 0) / a, 1.0) for r, a in allocatable.items() if a != 0]
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * 100)


class NodeResourcesBalancedAllocation:
    """PreScore + Score plugin; see the module docstring."""

    name = NAME

    def __init__(self, args: BalancedArgs | None = None) -> None:
        self.args = args or BalancedArgs()

    def pre_score(self, pod: Mapping, nodes: list[NodeInfo]) -> Status:
        req = pod_requests(pod)
        if all(req.get(r, 0) == 0 for r in self.args.resources):
            return Status(Code.SKIP)
        return Status.success()

    def score(self, pod: Mapping, node: NodeInfo) -> int:
        requested, allocatable = resource_vectors(pod, node, self.args.resources, use_requested=True)
        return balanced_score(requested, allocatable)
