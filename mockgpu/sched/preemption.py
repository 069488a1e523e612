"""DefaultPreemption's dry run: which nodes could take the pod if lower-priority pods were evicted.

As upstream ``preemption.Evaluator`` (kube-scheduler v1.30+): nodes whose filter status is
UnschedulableAndUnresolvable are "not helpful"; on the others every pod of strictly lower priority is
removed, the filters run again, and victims are reprieved greedily (most important first) while the pod
still fits. The result is either a nominated node with its victims and (v1.37.2) the post-filter message
``preemption: found a potential placement for pod on node <node>, preempting <n> victims``, or the post-filter
message ``preemption: 0/N nodes are available: ...``. Either message ends the FailedScheduling text.

Simplified: PodDisruptionBudgets are not consulted, every node is a dry-run candidate (upstream samples
at least 100 nodes or 10 % from a random offset), and the best candidate is chosen by upstream's first three
criteria (lowest highest-victim priority, lowest priority sum, fewest victims), then node order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mockgpu.sched.framework import Code, Profile, Status, run_filters_with_nominated
from mockgpu.sched.messages import fit_error
from mockgpu.sched.snapshot import NodeInfo, pod_key, pod_priority

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "preemption: not eligible due to preemptionPolicy=Never."
FOUND = "preemption: found a potential placement for pod on node {node}, preempting {count} victims"


@dataclass
class PreemptionResult:
    """``nominated_node`` and ``victims`` (pod keys) on success; ``message`` is the post-filter message."""

    nominated_node: str | None = None
    victims: list[str] = field(default_factory=list)
    message: str = ""
    node_statuses: dict[str, Status] = field(default_factory=dict)


def _select_victims(pod: Mapping[str, Any], node: NodeInfo, profile: Profile,
                    nominated: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Status]:
    prio = pod_priority(pod)
    potential = [p for p in node.pods if pod_priority(p) < prio]
    if not potential:
        return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
    trial = node.clone()
    for p in potential:
        trial.remove_pod(pod_key(p))
    status, _ = run_filters_with_nominated(profile, pod, trial, nominated)
    if not status.is_success:
        return [], status
    victims = []
    for p in sorted(potential, key=pod_priority, reverse=True):  # most important reprieved first
        trial.add_pod(p)
        if not run_filters_with_nominated(profile, pod, trial, nominated)[0].is_success:
            trial.remove_pod(pod_key(p))
            victims.append(p)
    return victims, Status.success()


def preempt(pod: Mapping[str, Any], nodes: list[NodeInfo], statuses: Mapping[str, Status], profile: Profile,
            nominated: Mapping[str, list[dict[str, Any]]] | None = None) -> PreemptionResult:
    """Run the dry run for an unschedulable pod; ``statuses`` are the filter statuses by node name,
    ``nominated`` the pods nominated to each node (counted as in Filter)."""
    if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
        return PreemptionResult(message=NEVER)
    out: dict[str, Status] = {}
    candidates: list[tuple[str, list[dict[str, Any]]]] = []
    for node in nodes:
        st = statuses.get(node.name)
        if st is None or st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            out[node.name] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_HELPFUL,))
            continue
        victims, vst = _select_victims(pod, node, profile, list((nominated or {}).get(node.name, ())))
        if vst.is_success:
            candidates.append((node.name, victims))
        else:
            out[node.name] = vst
    if not candidates:
        absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_HELPFUL,))
        return PreemptionResult(message="preemption: " + fit_error(len(nodes), out, absent_status=absent),
                                node_statuses=out)

    def rank(c: tuple[str, list[dict[str, Any]]]) -> tuple[int, int, int]:
        prios = [pod_priority(v) for v in c[1]]
        # upstream offsets each priority by MaxInt32+1 so that more victims weigh more in the sum
        return (max(prios, default=-(2**31)), sum(p + 2**31 for p in prios), len(prios))

    best = min(candidates, key=rank)
    return PreemptionResult(nominated_node=best[0], victims=[pod_key(v) for v in best[1]],
                            message=FOUND.format(node=best[0], count=len(best[1])), node_statuses=out)
