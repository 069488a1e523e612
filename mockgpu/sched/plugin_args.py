"""Plugin args from ``pluginConfig``: v1 defaulting and validation for the modelled plugins.

As upstream ``apis/config/v1/defaults.go`` and ``validation/validation_pluginargs.go``: NodeResourcesFit
without ``scoringStrategy`` gets LeastAllocated over cpu:1, memory:1; an empty resource list gets cpu and
memory; a weight of 0/unset becomes 1 (so only negative or > 100 weights are rejected in a v1 file);
a type is then required; RequestedToCapacityRatio needs a shape (utilization 0..100 strictly increasing,
score 0..10). BalancedAllocation resources default to cpu, memory; weights must be 1; no duplicates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mockgpu.apimachinery.names import qualified_name
from mockgpu.sched import config_fields as F
from mockgpu.sched.config_fields import Reader
from mockgpu.sched.plugins.balanced_allocation import BalancedArgs
from mockgpu.sched.plugins.node_resources_fit import DEFAULT_RESOURCES, FitArgs
from mockgpu.sched.strategies import ScoringStrategy

_SUPPORTED_TYPES = ", ".join(f'"{t.value}"' for t in sorted(ScoringStrategy, key=lambda t: t.value))


def _check_kind(r: Reader, args: Mapping[str, Any], path: str, kind: str) -> None:
    got = args.get("kind")
    if got is not None and got != kind:
        raise r.fail(f"{path}.kind", f'Invalid value: "{got}": must be "{kind}" for this plugin')


def _resources(r: Reader, raw: Any, path: str) -> list[tuple[str, int]]:
    out = []
    for i, item in enumerate(r.seq(raw, path)):
        p = f"{path}[{i}]"
        item = r.mapping(item, p, F.RESOURCE_FIELDS)
        name = r.string(item.get("name"), f"{p}.name")
        if not name:
            raise r.fail(f"{p}.name", "Required value: resource name must be set")
        weight = r.integer(item.get("weight"), f"{p}.weight", 0) or 1  # v1 defaulting: 0/unset → 1
        out.append((name, weight))
    return out


def _shape(r: Reader, raw: Any, path: str) -> list[tuple[int, int]]:
    points = []
    for i, item in enumerate(r.seq(raw, path)):
        p = f"{path}[{i}]"
        item = r.mapping(item, p, F.POINT_FIELDS)
        points.append((r.integer(item.get("utilization"), f"{p}.utilization", 0) or 0,
                       r.integer(item.get("score"), f"{p}.score", 0) or 0))
    if not points:
        raise r.fail(path, "Required value: at least one point must be specified")
    for i in range(1, len(points)):
        if points[i - 1][0] >= points[i][0]:
            raise r.fail(f"{path}[{i}].utilization",
                         f"Invalid value: {points[i][0]}: values must be sorted in increasing order")
    for i, (u, s) in enumerate(points):
        if not 0 <= u <= 100:
            raise r.fail(f"{path}[{i}].utilization", f"Invalid value: {u}: not in valid range [0, 100]")
        if not 0 <= s <= 10:
            raise r.fail(f"{path}[{i}].score", f"Invalid value: {s}: not in valid range [0, 10]")
    return points


def fit_args(r: Reader, raw: Any, path: str) -> FitArgs:
    """Defaulted, validated ``NodeResourcesFitArgs``."""
    args = r.mapping(raw, path, F.FIT_ARGS_FIELDS)
    _check_kind(r, args, path, "NodeResourcesFitArgs")
    ignored = [r.string(x, f"{path}.ignoredResources[{i}]")
               for i, x in enumerate(r.seq(args.get("ignoredResources"), f"{path}.ignoredResources"))]
    for i, name in enumerate(ignored):
        if qualified_name(name):  # upstream: validation.IsQualifiedName
            raise r.fail(f"{path}.ignoredResources[{i}]", f'Invalid value: "{name}": must be a qualified name')
    groups = [r.string(x, f"{path}.ignoredResourceGroups[{i}]")
              for i, x in enumerate(r.seq(args.get("ignoredResourceGroups"), f"{path}.ignoredResourceGroups"))]
    for i, group in enumerate(groups):
        if "/" in group:
            raise r.fail(f"{path}.ignoredResourceGroups[{i}]",
                         f"Invalid value: \"{group}\": resource group name can't contain '/'")
    spath = f"{path}.scoringStrategy"
    if args.get("scoringStrategy") is None:
        return FitArgs(tuple(ignored), tuple(groups))
    strat = r.mapping(args.get("scoringStrategy"), spath, F.STRATEGY_FIELDS)
    kind = r.string(strat.get("type"), f"{spath}.type")
    if kind not in {t.value for t in ScoringStrategy}:
        raise r.fail(f"{spath}.type", f'Unsupported value: "{kind}": supported values: {_SUPPORTED_TYPES}')
    resources = _resources(r, strat.get("resources"), f"{spath}.resources") or list(DEFAULT_RESOURCES.items())
    for i, (name, weight) in enumerate(resources):
        if not 0 < weight <= 100:
            raise r.fail(f"{spath}.resources[{i}].weight",
                         f"Invalid value: {weight}: resource weight of {name} not in valid range (0, 100]")
    rtcr_path = f"{spath}.requestedToCapacityRatio"
    shape: list[tuple[int, int]] = []
    if kind == ScoringStrategy.REQUESTED_TO_CAPACITY_RATIO:
        if strat.get("requestedToCapacityRatio") is None:
            raise r.fail(rtcr_path, "Required value: must be specified when type is RequestedToCapacityRatio")
        rtcr = r.mapping(strat.get("requestedToCapacityRatio"), rtcr_path, F.RTCR_FIELDS)
        shape = _shape(r, rtcr.get("shape"), f"{rtcr_path}.shape")
    elif strat.get("requestedToCapacityRatio") is not None:
        raise r.fail(rtcr_path, "Forbidden: must be nil when type is not RequestedToCapacityRatio")
    return FitArgs(tuple(ignored), tuple(groups), ScoringStrategy(kind), dict(resources), tuple(shape))


def balanced_args(r: Reader, raw: Any, path: str) -> BalancedArgs:
    """Defaulted, validated ``NodeResourcesBalancedAllocationArgs``."""
    args = r.mapping(raw, path, F.BALANCED_ARGS_FIELDS)
    _check_kind(r, args, path, "NodeResourcesBalancedAllocationArgs")
    resources = _resources(r, args.get("resources"), f"{path}.resources")
    seen: set[str] = set()
    for i, (name, weight) in enumerate(resources):
        if name in seen:
            raise r.fail(f"{path}.resources[{i}].name", f'Duplicate value: "{name}"')
        seen.add(name)
        if weight != 1:
            raise r.fail(f"{path}.resources[{i}].weight", f"Invalid value: {weight}: must be 1")
    return BalancedArgs(dict(resources) or dict(DEFAULT_RESOURCES))
