"""One pod-group scheduling cycle, as kube-scheduler v1.37.2's ``schedule_one_podgroup.go``
(``podGroupSchedulingDefaultAlgorithm`` and ``submitPodGroupAlgorithmResult``): the pods of a gang are placed
together or not at all.

The group's queued pods are tried one after another (``schedule_one`` without the per-pod preemption, as upstream
runs no PostFilter inside a pod-group cycle), each placed pod *assumed* on a copy of the nodes so the next one sees
it; GangScheduling's PlacementFeasible is asked before the first pod and after each one, and ends the cycle as
soon as ``minCount`` can no longer be reached. A group that ends short of ``minCount`` (Wait or Unschedulable) is
rejected as a whole and nothing is bound; its status then gets the group PostFilter's outcome appended.

What the pods and the PodGroup get (checked against the real scheduler in tests/conformance/test_gang.py):

* the group fits: every placed pod is bound; the PodGroup gets ``PodGroupInitiallyScheduled=True``, reason
  ``Scheduled``, message "".
* it does not: a pod that found a node gets ``pod group is unschedulable, <group message>``, a pod that found
  none its own FailedScheduling text (``0/2 nodes are available: 2 Insufficient nvidia.com/gpu.``, no preemption
  part; the earlier pods of the cycle count on their nodes); a pod the cycle did not reach gets the group message
  without the PostFilter's part (``minCount (4) cannot be satisfied: 0 scheduled, 3 remaining``);
  the PodGroup gets ``PodGroupInitiallyScheduled=False``, reason ``Unschedulable``, the group message.

Simplified: the group PostFilter (pod-group preemption, ``PodGroupPostFilter``) is not modelled; a rejected
group always gets the text upstream writes when it finds no victims (``pod group preemption: No preemption
victims found for incoming preemptor``). DRA claims of a gang's pods are not assumed against each other within
one cycle. Pure: no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mockgpu.sched.cycle import ScheduleResult, schedule_one
from mockgpu.sched.dra.snapshot import DraSnapshot
from mockgpu.sched.framework import Code, Profile, Status
from mockgpu.sched.plugins.gang_scheduling import placement_feasible
from mockgpu.sched.snapshot import NodeInfo

POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"  # errPodGroupUnschedulable
NO_GROUP_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"
CONDITION = "PodGroupInitiallyScheduled"


@dataclass
class GroupResult:
    """The cycle's verdict: per pod (in the order given) its own result (None when the cycle did not reach it)
    and the message it gets when the group is rejected; the group's status and condition."""

    status: Status
    results: list[ScheduleResult | None] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    next_start_index: int = 0

    @property
    def scheduled(self) -> bool:
        return self.status.is_success

    def condition(self) -> dict[str, str]:
        """``PodGroupInitiallyScheduled`` as ``submitPodGroupAlgorithmResult`` writes it (without the time)."""
        if self.scheduled:
            return {"type": CONDITION, "status": "True", "reason": "Scheduled", "message": self.status.message}
        return {"type": CONDITION, "status": "False", "reason": "Unschedulable", "message": self.status.message}


def schedule_pod_group(pods: Sequence[dict[str, Any]], nodes: list[NodeInfo], profile: Profile,
                       rng: random.Random, *, min_count: int, scheduled: int, start_index: int = 0,
                       nominated: Mapping[str, list[dict[str, Any]]] | None = None,
                       dra: DraSnapshot | None = None) -> GroupResult:
    """Place ``pods`` (the group's queued pods, in queue order) together; ``scheduled`` is how many pods of the
    group are already bound or assumed. ``nodes`` is not changed."""
    work = [n.clone() for n in nodes]
    by_name = {n.name: n for n in work}
    out = GroupResult(Status.success())
    remaining = len(pods)
    status = placement_feasible(min_count, scheduled, remaining)
    if status.code is Code.UNSCHEDULABLE:
        out.status = status
        return _rejected(out, pods)
    for pod in pods:
        res = schedule_one(pod, work, profile, rng, start_index=start_index, nominated=nominated, dra=dra,
                           post_filter=False)
        start_index = res.next_start_index
        out.results.append(res)
        remaining -= 1
        if res.error is not None:
            out.status = Status(Code.ERROR, (f"failed to schedule other pod from a pod group: {res.error}",))
            break
        if res.scheduled:
            scheduled += 1
            placed = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": res.selected_node}}
            by_name[str(res.selected_node)].add_pod(placed)
        status = placement_feasible(min_count, scheduled, remaining)
        out.status = status
        if status.code is Code.UNSCHEDULABLE:
            break
    out.next_start_index = start_index
    if out.status.is_success:  # a pod that found no node keeps its own FailedScheduling text
        out.results += [None] * (len(pods) - len(out.results))
        out.messages = ["" if r is None or r.scheduled else str(r.message) for r in out.results]
        return out
    if out.status.code is Code.ERROR:
        out.results += [None] * (len(pods) - len(out.results))
        out.messages = [out.status.message for _ in pods]
        return out
    out.status = Status(Code.UNSCHEDULABLE, out.status.reasons, out.status.plugin)
    return _rejected(out, pods)


def _rejected(out: GroupResult, pods: Sequence[dict[str, Any]]) -> GroupResult:
    """The group short of minCount: the group PostFilter's outcome appended, each pod's message. A pod the cycle
    did not reach keeps the group's status from before the append (``completePodGroupAlgorithmResult`` clones
    it first)."""
    before = out.status.message
    out.status = Status(Code.UNSCHEDULABLE, (*out.status.reasons, NO_GROUP_VICTIMS), out.status.plugin)
    out.results += [None] * (len(pods) - len(out.results))
    group = out.status.message
    out.messages = []
    for res in out.results:
        if res is None:
            out.messages.append(before)
        elif res.scheduled:
            out.messages.append(f"{POD_GROUP_UNSCHEDULABLE}, {group}")
        else:
            out.messages.append(str(res.message))
    return out
