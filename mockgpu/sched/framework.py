"""The scheduling framework's vocabulary: status codes, plugin protocols, profiles.

Mirrors kube-scheduler's framework (``pkg/scheduler/framework/interface.go``) for the extension points this
model runs: PreEnqueue, PreFilter, Filter, PreScore (only to let a plugin Skip), Score, NormalizeScore and
Reserve. Plugins are plain objects built from their (defaulted, validated) args; they do no I/O. What a plugin
computes in PreFilter for the pod of the running cycle lives in ``cycle_state()`` (upstream's CycleState); a
Filter that returns ``Code.SKIP`` counts as passed and is not recorded (upstream skips Filter for a plugin whose
PreFilter said Skip).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Protocol, runtime_checkable

from mockgpu.sched.dra.snapshot import DraSnapshot
from mockgpu.sched.snapshot import NodeInfo

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class Code(IntEnum):
    """Upstream ``framework.Code`` values (same order and numbers)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(frozen=True)
class Status:
    """A plugin's verdict; ``reasons`` are the strings counted in the FailedScheduling histogram."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def success(cls) -> Status:
        return cls()

    @classmethod
    def unschedulable(cls, *reasons: str, resolvable: bool = True) -> Status:
        code = Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return cls(code, tuple(reasons))

    @property
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def is_rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin)


@runtime_checkable
class FilterPlugin(Protocol):
    """Decides whether the pod may run on one node."""

    name: str

    def filter(self, pod: Mapping[str, Any], node: NodeInfo) -> Status: ...


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    """Gates a pod before it enters the active queue (rejected: it waits, nothing is written)."""

    def pre_enqueue(self, pod: Mapping[str, Any], snapshot: DraSnapshot | None = None) -> Status: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    """Runs once per cycle before Filter; a rejection makes every node fail with its message (PreFilterMsg)."""

    def pre_filter(self, pod: Mapping[str, Any], nodes: list[NodeInfo]) -> Status: ...


@runtime_checkable
class ReservePlugin(Protocol):
    """After a node was chosen: what the plugin keeps for the binder (e.g. DRA allocations), as a mapping."""

    def reserve(self, pod: Mapping[str, Any], node_name: str) -> Mapping[str, object]: ...


_STATE: ContextVar[dict[str, Any] | None] = ContextVar("mockgpu_sched_cycle_state", default=None)


@contextmanager
def cycle_state_scope(initial: Mapping[str, object] | None = None) -> Iterator[dict[str, Any]]:
    """Open the CycleState of one scheduling cycle (``schedule_one`` does this)."""
    state = dict(initial or {})
    token = _STATE.set(state)
    try:
        yield state
    finally:
        _STATE.reset(token)


def cycle_state() -> dict[str, Any]:
    """The running cycle's state; outside a cycle a fresh dict each call (nothing is remembered)."""
    state = _STATE.get()
    return {} if state is None else state


@runtime_checkable
class ScorePlugin(Protocol):
    """Ranks a feasible node 0..100 (after ``normalize`` when the plugin has one)."""

    name: str

    def score(self, pod: Mapping[str, Any], node: NodeInfo) -> int: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    """Optional: return ``Code.SKIP`` to leave this pod unscored by the plugin."""

    def pre_score(self, pod: Mapping[str, Any], nodes: list[NodeInfo]) -> Status: ...


@runtime_checkable
class NormalizeScorePlugin(Protocol):
    """Optional: rescale the raw scores of all feasible nodes (``node name → score``) to 0..100."""

    def normalize(self, pod: Mapping[str, Any], scores: dict[str, int]) -> dict[str, int]: ...


def default_normalize(scores: Mapping[str, int], *, reverse: bool = False,
                      max_priority: int = MAX_NODE_SCORE) -> dict[str, int]:
    """Upstream ``helper.DefaultNormalizeScore``: scale so the highest becomes 100 (or 0 if reversed)."""
    top = max(scores.values(), default=0)
    if top == 0:
        return {n: (max_priority if reverse else s) for n, s in scores.items()}
    out = {}
    for n, s in scores.items():
        v = max_priority * s // top
        out[n] = max_priority - v if reverse else v
    return out


@dataclass
class Profile:
    """One scheduler profile: the filters in order and the score plugins with their weights."""

    scheduler_name: str
    filters: list[FilterPlugin] = field(default_factory=list)
    scorers: list[tuple[ScorePlugin, int]] = field(default_factory=list)
    percentage_of_nodes_to_score: int | None = None

    def filter_names(self) -> list[str]:
        return [p.name for p in self.filters]

    def score_weights(self) -> dict[str, int]:
        return {p.name: w for p, w in self.scorers}


PASSED = "passed"


def run_filters(profile: Profile, pod: Mapping[str, Any], node: NodeInfo) -> tuple[Status, dict[str, str]]:
    """Run the profile's filters in order, stopping at the first rejection (as upstream).

    Returns the node's status (tagged with the rejecting plugin) and ``plugin → "passed" | reason`` for
    the plugins that ran, the shape of the ``mockgpu.io/filter-result`` annotation.
    """
    results: dict[str, str] = {}
    for plugin in profile.filters:
        status = plugin.filter(pod, node)
        if status.code is Code.SKIP:
            continue
        if status.is_success:
            results[plugin.name] = PASSED
            continue
        results[plugin.name] = status.message
        return status.with_plugin(plugin.name), results
    return Status.success(), results


def run_filters_with_nominated(profile: Profile, pod: Mapping[str, Any], node: NodeInfo,
                               nominated: Sequence[Mapping[str, Any]] = ()) -> tuple[Status, dict[str, str]]:
    """Upstream ``RunFilterPluginsWithNominatedPods``: filter once with the pods nominated to this node whose
    priority is at least the pod's (the pod itself excluded) added, and, if any were added and that passed,
    once more without them; the pod must pass both. ``nominated`` are the pods nominated to ``node``.
    """
    prio = _priority(pod)
    me = _key(pod)
    extra = [p for p in nominated if _priority(p) >= prio and _key(p) != me]
    if not extra:
        return run_filters(profile, pod, node)
    with_nominated = node.clone()
    for p in extra:
        with_nominated.add_pod(p)
    status, results = run_filters(profile, pod, with_nominated)
    if not status.is_success:
        return status, results
    return run_filters(profile, pod, node)


def _priority(pod: Mapping[str, Any]) -> int:
    return int((pod.get("spec") or {}).get("priority") or 0)


def _key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
