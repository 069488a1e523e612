"""What the scheduler writes when a pod cannot be placed: condition, annotations, event, preemption.

As upstream's ``handleSchedulingFailure``: condition ``PodScheduled=False`` with reason ``Unschedulable`` (or
``SchedulerError`` for errors such as "no nodes available to schedule pods") and the FailedScheduling text
as its message (written only when it changed; ``lastTransitionTime`` only moves when the status flips), a
``FailedScheduling`` Warning event per attempt (aggregated by the recorder), ``status.nominatedNodeName``
after a successful preemption dry run. Preemption as upstream's ``prepareCandidate``: each victim gets the
``DisruptionTarget`` condition (reason ``PreemptionByScheduler``), is deleted gracefully and gets a
``Preempted`` event. A pod whose nominated node still has a lower-priority pod terminating *because the
scheduler preempted it* (``DisruptionTarget``/``PreemptionByScheduler``) does not preempt again, unless the
filters now call that node UnschedulableAndUnresolvable (upstream v1.37.2 ``PodEligibleToPreemptOthers``).

mockgpu additions: the filter/score annotations (so the pod inspector can show every node's reason) and
``mockgpu.io/first-unschedulable-time`` (set once, for the pending timeline).
"""

from __future__ import annotations

from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import micro_time, rfc3339
from mockgpu.control.scheduler.api import RawApi
from mockgpu.control.scheduler.cache import Cache
from mockgpu.control.scheduler.events import EventRecorder
from mockgpu.control.scheduler.queue import QueuedPod, SchedulingQueue
from mockgpu.control.scheduler.writers import Writers
from mockgpu.sched.cycle import ANNOTATION_SELECTED, ScheduleResult, annotations
from mockgpu.sched.framework import Code
from mockgpu.sched.messages import fit_error
from mockgpu.sched.snapshot import pod_key, pod_priority


class Scheduler(Protocol):
    """What failure handling reads and writes of the loop (``scheduler.Scheduler`` is one; it calls this module)."""

    api: RawApi
    cache: Cache
    queue: SchedulingQueue
    recorder: EventRecorder
    writers: Writers
    failures_written: dict[str, tuple]


ANNOTATION_FIRST_UNSCHEDULABLE = "mockgpu.io/first-unschedulable-time"
TERMINATING_ON_NOMINATED = "preemption: not eligible due to a terminating pod on the nominated node."


def _condition(pod: dict, reason: str, message: str) -> dict[str, Any]:
    cond: dict[str, Any] = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
    old = next((c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"),
               None)
    if old is None or old.get("status") != "False":
        cond["lastTransitionTime"] = rfc3339()
        cond["lastProbeTime"] = None
    return cond


def _terminating_by_preemption(p: dict) -> bool:
    """Upstream ``PodTerminatingByPreemption``: deleting, and its DisruptionTarget says the scheduler did it."""
    if not (p.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for cond in (p.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "DisruptionTarget":
            return cond.get("status") == "True" and cond.get("reason") == "PreemptionByScheduler"
    return False


def _terminating_lower_priority(s: Scheduler, node: str, pod: dict, res: ScheduleResult) -> bool:
    status = res.statuses.get(node)
    if status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        return False  # the nominated node cannot help any more: preempt again elsewhere
    info = s.cache.info(node)
    prio = pod_priority(pod)
    return info is not None and any(_terminating_by_preemption(p) and pod_priority(p) < prio for p in info.pods)


def record_unschedulable(s: Scheduler, q: QueuedPod, res: ScheduleResult, component: str) -> None:
    pod, key = q.pod, q.key
    message, nominated, victims = str(res.message), res.nominated_node, list(res.victims)
    previous = s.cache.nominated_node(key) or (pod.get("status") or {}).get("nominatedNodeName")
    if previous and _terminating_lower_priority(s, previous, pod, res):
        message = fit_error(res.num_nodes, res.statuses, pre_filter_msg=res.pre_filter_msg,
                            post_filter_msg=TERMINATING_ON_NOMINATED)
        nominated, victims = None, []
    victim_pods = []
    if nominated:
        info = s.cache.info(nominated)
        wanted = set(victims)
        victim_pods = [p for p in (info.pods if info else []) if pod_key(p) in wanted]
        s.cache.nominate(pod, nominated)
    s.queue.failed(q, unschedulable=True)
    notes = {k: v for k, v in annotations(res).items() if k != ANNOTATION_SELECTED}
    _write_failure(s, pod, component, "Unschedulable", message, notes, nominated, victim_pods)


def record_group_rejected(s: Scheduler, q: QueuedPod, res: ScheduleResult | None, component: str,
                          message: str) -> None:
    """A pod of a gang the pod-group cycle rejected (``submitPodGroupAlgorithmResult``): Unschedulable with the
    message the cycle gave it (its own FailedScheduling text, or the group's); no preemption of its own."""
    s.queue.failed(q, unschedulable=True)
    notes = {k: v for k, v in annotations(res).items() if k != ANNOTATION_SELECTED} if res is not None else {}
    _write_failure(s, q.pod, component, "Unschedulable", message, notes, None, [])


def record_error(s: Scheduler, q: QueuedPod, component: str, message: str) -> None:
    s.queue.failed(q, unschedulable=False)
    _write_failure(s, q.pod, component, "SchedulerError", message, {}, None, [])


def _write_failure(s: Scheduler, pod: dict, component: str, reason: str, message: str, notes: dict[str, str],
                   nominated: str | None, victims: list[dict]) -> None:
    key = pod_key(pod)
    meta = pod.get("metadata") or {}
    ns, name = meta.get("namespace") or "default", meta.get("name", "")
    previous = s.failures_written.get(key)
    if ANNOTATION_FIRST_UNSCHEDULABLE not in (meta.get("annotations") or {}) and previous is None:
        notes = {**notes, ANNOTATION_FIRST_UNSCHEDULABLE: micro_time()}
    state = (reason, message, nominated, tuple(sorted((k, v) for k, v in notes.items()
                                                       if k != ANNOTATION_FIRST_UNSCHEDULABLE)))
    changed = previous != state
    s.failures_written[key] = state
    status: dict[str, Any] = {"conditions": [_condition(pod, reason, message)]}
    if nominated:
        status["nominatedNodeName"] = nominated

    def write() -> None:
        try:
            if changed and notes:
                s.api.patch_pod(ns, name, {"metadata": {"annotations": notes}})
            if changed:
                s.api.patch_pod(ns, name, {"status": status}, status=True)
            for victim in victims:
                _preempt(s, victim, pod, nominated or "", component)
            s.recorder.pod_event(pod, component, "Warning", "FailedScheduling", "Scheduling", message)
        except ApiException as exc:
            if exc.status != 404:  # 404: the pod was deleted meanwhile
                raise

    s.writers.submit(key, write)


def _preempt(s: Scheduler, victim: dict, preemptor: dict, node: str, component: str) -> None:
    meta = victim.get("metadata") or {}
    ns, name = meta.get("namespace") or "default", meta.get("name", "")
    cond = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
            "message": f"{component}: preempting to accommodate a higher priority pod",
            "lastTransitionTime": rfc3339()}
    try:
        s.api.patch_pod(ns, name, {"status": {"conditions": [cond]}}, status=True)
        s.api.delete_pod(ns, name, meta.get("uid"))
    except ApiException as exc:
        if exc.status in (404, 409):
            return  # gone already (or replaced by a new pod of the same name)
        raise
    uid = (preemptor.get("metadata") or {}).get("uid", "")
    s.recorder.pod_event(victim, component, "Normal", "Preempted", "Preempting",
                         f"Preempted by pod {uid} on node {node}")
