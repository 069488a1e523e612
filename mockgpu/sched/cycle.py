"""One scheduling cycle for one pod, as kube-scheduler's ``schedulePod`` + ``selectHost``.

Filter every node (in upstream's round-robin order, up to ``numFeasibleNodesToFind``), score the
feasible ones when more than one passed, pick the highest total (ties: the top of Go's heap, see
``mockgpu.sched.select``), or, when none passed, run the preemption dry run and build the FailedScheduling
message. kube-scheduler v1.37.2 semantics.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mockgpu.sched.dra.snapshot import SNAPSHOT_KEY, DraSnapshot
from mockgpu.sched.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Code,
    NormalizeScorePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    Profile,
    ReservePlugin,
    Status,
    cycle_state_scope,
    run_filters_with_nominated,
)
from mockgpu.sched.messages import fit_error
from mockgpu.sched.preemption import preempt
from mockgpu.sched.select import select_host
from mockgpu.sched.snapshot import NodeInfo, cycle_cache, pod_key

ANNOTATION_FILTER = "mockgpu.io/filter-result"
ANNOTATION_SCORE = "mockgpu.io/score-result"
ANNOTATION_FINAL_SCORE = "mockgpu.io/finalscore-result"
ANNOTATION_SELECTED = "mockgpu.io/selected-node"
ANNOTATION_DRA_ALLOCATION = "mockgpu.io/dra-allocation"  # claim name → [{request, device}], every claim of the pod
NO_NODES_AVAILABLE = "no nodes available to schedule pods"  # upstream ErrNoNodesAvailable
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


class PluginScoreError(ValueError):
    """A plugin returned a score outside 0..100 after normalization (upstream: an Error status)."""


@dataclass
class ScheduleResult:
    """Everything one cycle decided, in the shapes the annotations and events need."""

    pod: str
    num_nodes: int
    filter_results: dict[str, dict[str, str]] = field(default_factory=dict)  # node → plugin → "passed"|reason
    statuses: dict[str, Status] = field(default_factory=dict)  # rejected node → its status
    feasible: list[str] = field(default_factory=list)
    raw_scores: dict[str, dict[str, int]] = field(default_factory=dict)  # node → plugin → score
    normalized_scores: dict[str, dict[str, int]] = field(default_factory=dict)
    final_scores: dict[str, dict[str, int]] = field(default_factory=dict)  # normalized × weight
    totals: dict[str, int] = field(default_factory=dict)
    selected_node: str | None = None
    message: str | None = None  # FailedScheduling message when unschedulable
    nominated_node: str | None = None  # preemption: where the pod will go once victims are gone
    victims: list[str] = field(default_factory=list)
    next_start_index: int = 0
    pre_filter_msg: str = ""  # a PreFilter rejection (every node failed with it)
    error: str | None = None  # a plugin Error status: the cycle stopped (upstream: SchedulerError)
    reserved: dict[str, dict[str, Any]] = field(default_factory=dict)  # plugin → what its Reserve kept for the binder

    @property
    def claim_allocations(self) -> dict[str, dict[str, Any]]:
        """DynamicResources' new allocations: ``"namespace/claim" → AllocationResult`` on the chosen node (what
        PreBind writes)."""
        return dict((self.reserved.get("DynamicResources") or {}).get("allocated") or {})

    @property
    def pod_claim_allocations(self) -> dict[str, dict[str, Any]]:
        """Every claim of the pod → its allocation (made by this cycle or before)."""
        return {k: v for k, v in ((self.reserved.get("DynamicResources") or {}).get("claims") or {}).items() if v}

    @property
    def scheduled(self) -> bool:
        return self.selected_node is not None


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int | None) -> int:
    """Upstream's adaptive sample size: all nodes below 100, else a percentage (default 50 − n/125, ≥ 5)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND, 50 - num_all_nodes // 125)
    if pct >= 100:
        return num_all_nodes
    return max(MIN_FEASIBLE_NODES_TO_FIND, num_all_nodes * pct // 100)


def _filter(pod: Mapping[str, Any], nodes: list[NodeInfo], profile: Profile, start: int, res: ScheduleResult,
            nominated: Mapping[str, list[dict[str, Any]]]) -> None:
    n = len(nodes)
    want = num_feasible_nodes_to_find(n, profile.percentage_of_nodes_to_score) if profile.scorers else 1
    processed = 0
    for i in range(n):
        node = nodes[(start + i) % n]
        processed += 1
        status, results = run_filters_with_nominated(profile, pod, node, nominated.get(node.name, ()))
        res.filter_results[node.name] = results
        if status.code is Code.ERROR:
            res.error = f'running "{status.plugin}" filter plugin: {status.message}'
            break
        if status.is_success:
            res.feasible.append(node.name)
            if len(res.feasible) >= want:
                break
        else:
            res.statuses[node.name] = status
    res.next_start_index = (start + processed) % n if n else 0


def _score(pod: Mapping[str, Any], nodes: list[NodeInfo], profile: Profile, res: ScheduleResult) -> None:
    by_name = {n.name: n for n in nodes}
    feasible = [by_name[name] for name in res.feasible]
    for name in res.feasible:
        res.raw_scores[name], res.normalized_scores[name], res.final_scores[name] = {}, {}, {}
    for plugin, weight in profile.scorers:
        if isinstance(plugin, PreScorePlugin) and plugin.pre_score(pod, feasible).code is Code.SKIP:
            continue
        raw = {n.name: plugin.score(pod, n) for n in feasible}
        norm = plugin.normalize(pod, dict(raw)) if isinstance(plugin, NormalizeScorePlugin) else dict(raw)
        for name in res.feasible:
            if not MIN_NODE_SCORE <= norm[name] <= MAX_NODE_SCORE:
                raise PluginScoreError(f"plugin {plugin.name!r} returns an invalid score {norm[name]}, "
                                       f"it should in the range of [0, 100] after normalizing")
            res.raw_scores[name][plugin.name] = raw[name]
            res.normalized_scores[name][plugin.name] = norm[name]
            res.final_scores[name][plugin.name] = norm[name] * weight
    res.totals = {name: sum(res.final_scores[name].values()) for name in res.feasible}


def schedule_one(pod: dict[str, Any], nodes: list[NodeInfo], profile: Profile, rng: random.Random, *,
                 start_index: int = 0, nominated: Mapping[str, list[dict[str, Any]]] | None = None,
                 dra: DraSnapshot | None = None, post_filter: bool = True) -> ScheduleResult:
    """Decide where ``pod`` goes among ``nodes`` under ``profile``; pure.

    ``rng`` is kept for callers (and for a future extender model): v1.37.2 draws no random number to break
    ties between plugin-scored nodes, so the result does not depend on it.

    ``nominated`` maps a node name to the pods nominated to it (``status.nominatedNodeName``, not yet bound).
    As upstream, those of priority ≥ the pod's count during Filter (and the preemption dry run) only: Score
    sees the nodes without them.

    ``dra`` is what DynamicResources reads (DeviceClasses, ResourceSlices, ResourceClaims); pods without
    ``spec.resourceClaims`` never look at it.

    ``post_filter`` False: no preemption dry run and no post-filter text, as upstream schedules a pod inside a
    pod-group cycle (``IsPodGroupSchedulingCycle``: the group's PostFilter runs once for the whole group).
    """
    with cycle_cache(), cycle_state_scope({SNAPSHOT_KEY: dra}):
        return _schedule_one(pod, nodes, profile, rng, start_index, nominated or {}, post_filter)


def _schedule_one(pod: dict[str, Any], nodes: list[NodeInfo], profile: Profile, rng: random.Random,
                  start_index: int, nominated: Mapping[str, list[dict[str, Any]]],
                  post_filter: bool = True) -> ScheduleResult:
    res = ScheduleResult(pod=pod_key(pod), num_nodes=len(nodes))
    if not nodes:
        res.message = NO_NODES_AVAILABLE
        return res
    if _pre_filter(pod, nodes, profile, res, nominated, post_filter):
        return res
    _filter(pod, nodes, profile, start_index % len(nodes), res, nominated)
    if res.error is not None:
        res.feasible = []
        return res
    if not res.feasible:
        if not post_filter:
            res.message = fit_error(len(nodes), res.statuses)
            return res
        pre = preempt(pod, nodes, res.statuses, profile, nominated)
        res.nominated_node, res.victims = pre.nominated_node, pre.victims
        res.message = fit_error(len(nodes), res.statuses, post_filter_msg=pre.message)
        return res
    if len(res.feasible) == 1:
        res.selected_node = res.feasible[0]
    else:
        _score(pod, nodes, profile, res)
        res.selected_node = select_host([(name, res.totals[name]) for name in res.feasible], rng)
    _reserve(pod, profile, res)
    return res


def _pre_filter(pod: dict[str, Any], nodes: list[NodeInfo], profile: Profile, res: ScheduleResult,
                nominated: Mapping[str, list[dict[str, Any]]], post_filter: bool = True) -> bool:
    """Run the PreFilter plugins; True when one ended the cycle (rejection or error)."""
    for plugin in profile.filters:
        if not isinstance(plugin, PreFilterPlugin):
            continue
        status = plugin.pre_filter(pod, nodes)
        if status.code in (Code.SUCCESS, Code.SKIP):
            continue
        if status.code is Code.ERROR:
            res.error = f'running PreFilter plugin "{plugin.name}": {status.message}'
            return True
        status = status.with_plugin(plugin.name)
        res.pre_filter_msg = status.message
        for node in nodes:  # upstream: every node gets the PreFilter status (SetAbsentNodesStatus)
            res.statuses[node.name] = status
            res.filter_results[node.name] = {plugin.name: status.message}
        if not post_filter:
            res.message = fit_error(len(nodes), res.statuses, pre_filter_msg=res.pre_filter_msg)
            return True
        pre = preempt(pod, nodes, {}, profile, nominated)
        res.nominated_node, res.victims = pre.nominated_node, pre.victims
        res.message = fit_error(len(nodes), res.statuses, pre_filter_msg=res.pre_filter_msg,
                                post_filter_msg=pre.message)
        return True
    return False


def _reserve(pod: dict[str, Any], profile: Profile, res: ScheduleResult) -> None:
    for plugin in profile.filters:
        if isinstance(plugin, ReservePlugin):
            kept = plugin.reserve(pod, str(res.selected_node))
            if kept:
                res.reserved[plugin.name] = dict(kept)


def annotations(res: ScheduleResult) -> dict[str, str]:  # type: ignore[no-redef]  # shadows only the __future__ name
    """The pod annotations (JSON, node → plugin → value as strings, like kube-scheduler-simulator)."""
    def dump(table: Mapping[str, Mapping[str, object]]) -> str:
        return json.dumps({n: {p: str(v) for p, v in row.items()} for n, row in table.items()}, sort_keys=True)

    out = {ANNOTATION_FILTER: dump(res.filter_results), ANNOTATION_SCORE: dump(res.raw_scores),
           ANNOTATION_FINAL_SCORE: dump(res.final_scores)}
    if res.selected_node:
        out[ANNOTATION_SELECTED] = res.selected_node
    if res.pod_claim_allocations:
        out[ANNOTATION_DRA_ALLOCATION] = json.dumps(dra_allocation_summary(res.pod_claim_allocations),
                                                    sort_keys=True)
    return out


def dra_allocation_summary(allocations: Mapping[str, Mapping[str, Any]]) -> dict[str, list[dict[str, str]]]:
    """``claim name → [{request, device}]`` for the pod annotation (the pool is the node)."""
    out: dict[str, list[dict[str, str]]] = {}
    for key, alloc in allocations.items():
        results = ((alloc.get("devices") or {}).get("results")) or []
        out[key.split("/", 1)[-1]] = [{"request": r.get("request", ""), "device": r.get("device", "")}
                                      for r in results]
    return out
