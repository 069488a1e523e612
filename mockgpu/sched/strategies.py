"""NodeResourcesFit scoring strategies as pure integer functions, as upstream computes them.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/{least_allocated,most_allocated,
requested_to_capacity_ratio}.go`` and ``helper/shape_score.go`` (checked against v1.37.2; the formulas
have not changed since v1.22's RTCR utilisation fix).

Contract shared with ``mockgpu.sim``:

* ``requested`` already includes the incoming pod (for cpu/memory: the *non-zero* requests, see
  ``mockgpu.sched.snapshot``); ``allocatable`` is the node's allocatable; both in base units
  (millicores for cpu, bytes for memory, counts for extended resources).
* ``weights`` is the configured resource list, in config order (``scoringStrategy.resources``).
  Only these resources are scored. A resource whose allocatable is 0 (or absent) is skipped:
  neither its score nor its weight counts. The caller applies upstream's "bypass" rule (a scalar
  resource the pod does not request is scored as allocatable 0) — see ``resource_vectors`` in
  ``mockgpu.sched.plugins.noderesources_fit``.
* ``shape`` for RequestedToCapacityRatio is in *config units*: ``(utilization 0..100, score 0..10)``,
  utilisation strictly increasing; the score is scaled by 10 here as upstream does.
* Every function returns an integer in 0..100 (``MAX_NODE_SCORE``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum

MAX_NODE_SCORE = 100
MAX_CUSTOM_PRIORITY_SCORE = 10  # RTCR shape scores are 0..10 in the config
MAX_UTILIZATION = 100


class ScoringStrategy(StrEnum):
    """``NodeResourcesFitArgs.scoringStrategy.type`` values."""

    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"
    REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


def _div_trunc(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero), unlike Python's floor division."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def least_requested_score(requested: int, capacity: int) -> int:
    """Free fraction of one resource × 100, floored; 0 if over-committed or no capacity."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    """Used fraction × 100, floored; over-commit (possible through non-zero defaults) caps at 100."""
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def _weighted_floor(per_resource: Callable[[int, int], int], requested: Mapping[str, int],
                    allocatable: Mapping[str, int], weights: Mapping[str, int]) -> int:
    node_score = weight_sum = 0
    for name, weight in weights.items():
        alloc = allocatable.get(name, 0)
        if alloc == 0:
            continue
        node_score += per_resource(requested.get(name, 0), alloc) * weight
        weight_sum += weight
    return node_score // weight_sum if weight_sum else 0


def least_allocated(requested: Mapping[str, int], allocatable: Mapping[str, int], weights: Mapping[str, int]) -> int:
    """LeastAllocated (the default): weighted mean of free fractions, integer-floored (spreads pods)."""
    return _weighted_floor(least_requested_score, requested, allocatable, weights)


def most_allocated(requested: Mapping[str, int], allocatable: Mapping[str, int], weights: Mapping[str, int]) -> int:
    """MostAllocated: weighted mean of used fractions, integer-floored (packs pods)."""
    return _weighted_floor(most_requested_score, requested, allocatable, weights)


def broken_linear(shape: Sequence[tuple[int, int]], utilization: int) -> int:
    """Upstream's piecewise-linear ``BuildBrokenLinearFunction`` with Go integer truncation.

    ``shape`` here is already scaled (scores 0..100). Below the first point → first score; above the
    last → last score.
    """
    for i, (u1, s1) in enumerate(shape):
        if utilization <= u1:
            if i == 0:
                return s1
            u0, s0 = shape[i - 1]
            return s0 + _div_trunc((s1 - s0) * (utilization - u0), u1 - u0)
    return shape[-1][1]


def scaled_shape(shape: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Config shape (score 0..10) → internal shape (score 0..100)."""
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return [(int(u), int(s) * factor) for u, s in shape]


def _round_half_away(numerator: int, denominator: int) -> int:
    """``math.Round(float64(n)/float64(d))`` for non-negative integers, computed exactly."""
    return (2 * numerator + denominator) // (2 * denominator)


def requested_to_capacity_ratio(requested: Mapping[str, int], allocatable: Mapping[str, int],
                                weights: Mapping[str, int], shape: Sequence[tuple[int, int]]) -> int:
    """RequestedToCapacityRatio: the shape applied to each resource's utilisation, weighted, rounded.

    Utilisation is ``requested*100 // allocatable`` (v1.22+), 100 if over-committed. Upstream quirk kept:
    a resource whose shaped score is 0 is left out of both the sum and the weight sum.
    """
    internal = scaled_shape(shape)
    node_score = weight_sum = 0
    for name, weight in weights.items():
        alloc = allocatable.get(name, 0)
        if alloc == 0:
            continue
        req = requested.get(name, 0)
        util = MAX_UTILIZATION if req > alloc else req * MAX_UTILIZATION // alloc
        score = broken_linear(internal, util)
        if score > 0:
            node_score += score * weight
            weight_sum += weight
    return _round_half_away(node_score, weight_sum) if weight_sum else 0


def score(strategy: ScoringStrategy | str, requested: Mapping[str, int], allocatable: Mapping[str, int],
          weights: Mapping[str, int], shape: Sequence[tuple[int, int]] | None = None) -> int:
    """Dispatch on the strategy name; ``shape`` is required for RequestedToCapacityRatio only."""
    kind = ScoringStrategy(strategy)
    if kind is ScoringStrategy.REQUESTED_TO_CAPACITY_RATIO:
        if not shape:
            raise ValueError("RequestedToCapacityRatio needs a non-empty shape")
        return requested_to_capacity_ratio(requested, allocatable, weights, shape)
    return STRATEGIES[kind](requested, allocatable, weights)


STRATEGIES: dict[ScoringStrategy, Callable[..., int]] = {
    ScoringStrategy.LEAST_ALLOCATED: least_allocated,
    ScoringStrategy.MOST_ALLOCATED: most_allocated,
    ScoringStrategy.REQUESTED_TO_CAPACITY_RATIO: requested_to_capacity_ratio,
}
