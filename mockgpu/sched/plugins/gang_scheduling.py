"""GangScheduling, as kube-scheduler v1.37.2's ``pkg/scheduler/framework/plugins/gangscheduling`` (enabled in the
default profile with the ``GenericWorkload`` gate, ``applyGangScheduling`` of ``default_plugins.go``).

A pod joins a group with ``spec.schedulingGroup.podGroupName``; a PodGroup with ``schedulingPolicy.gang.minCount``
is admitted only as a whole:

* PreEnqueue: a pod waits (nothing written, as every PreEnqueue rejection) until its PodGroup exists and the
  scheduler knows at least ``minCount`` pods of the group (scheduled or not): ``waiting for pods's pod group "g"
  to appear in scheduling queue``, ``waiting for minCount pods from a gang to appear in scheduling queue``.
* PlacementFeasible, asked by the pod-group cycle (``podgroup_cycle``) before and after each pod it places:
  Unschedulable ``minCount (N) cannot be satisfied: S scheduled, R remaining`` once the group cannot reach
  ``minCount`` any more, Wait ``minCount (N) is not yet satisfied: ...`` while it still can.
* Permit: a pod of a gang waits (at most 5 minutes) until ``minCount`` pods of its group are scheduled. The
  pod-group cycle admits a group only with ``minCount`` pods placed at once, so every pod it binds is allowed
  at once; Permit is not modelled apart from that.

Pure functions over the PodGroup object (a dict as the API returns it); no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mockgpu.sched.framework import Code, Status

NAME = "GangScheduling"
PERMIT_TIMEOUT_SECONDS = 300.0  # permitTimeoutDuration
WAITING_FOR_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"


def pod_group_name(pod: Mapping[str, Any]) -> str | None:
    """``spec.schedulingGroup.podGroupName``, or None for a pod outside any group."""
    group = (pod.get("spec") or {}).get("schedulingGroup") or {}
    name = group.get("podGroupName") if isinstance(group, dict) else None
    return str(name) if name else None


def min_count(podgroup: Mapping[str, Any]) -> int | None:
    """The gang's ``minCount``; None for a ``basic`` policy (no gang: every pod on its own)."""
    gang = ((podgroup.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
    if not isinstance(gang, dict):
        return None
    return int(gang.get("minCount") or 0)


def pre_enqueue(pod: Mapping[str, Any], podgroup: Mapping[str, Any] | None, all_pods: int) -> Status:
    """``preEnqueueHierarchiesDisabled``: ``all_pods`` is how many pods of the group the scheduler knows."""
    name = pod_group_name(pod)
    if name is None:
        return Status.success()
    if podgroup is None:
        return Status.unschedulable(f'waiting for pods\'s pod group "{name}" to appear in scheduling queue',
                                    resolvable=False).with_plugin(NAME)
    count = min_count(podgroup)
    if count is None or all_pods >= count:
        return Status.success()
    return Status.unschedulable(WAITING_FOR_MIN_COUNT, resolvable=False).with_plugin(NAME)


def placement_feasible(count: int, scheduled: int, remaining: int) -> Status:
    """``PlacementFeasible``: can the group still reach ``count`` pods, and has it?"""
    if remaining + scheduled < count:
        return Status(Code.UNSCHEDULABLE, (f"minCount ({count}) cannot be satisfied: {scheduled} scheduled, "
                                           f"{remaining} remaining",), NAME)
    if scheduled < count:
        return Status(Code.WAIT, (f"minCount ({count}) is not yet satisfied: {scheduled} scheduled, "
                                  f"{remaining} remaining",), NAME)
    return Status.success()
