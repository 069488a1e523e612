"""Gang scheduling in the loop: PodGroups watched, a gang's pods held by GangScheduling's PreEnqueue until the
group can form, then placed together by one pod-group cycle (``mockgpu.sched.podgroup_cycle``), and the
PodGroup's ``PodGroupInitiallyScheduled`` condition written (kube-scheduler v1.37.2's ``scheduleOnePodGroup``,
``submitPodGroupAlgorithmResult``, ``updatePodGroupCondition``).

PodGroups come from an optional informer of ``scheduling.k8s.io/v1beta1``: a server without the
``GenericWorkload`` gate does not serve it (and drops pods' ``spec.schedulingGroup``), so the scheduler then
schedules every pod on its own, as kube-scheduler without the gate (GangScheduling is in the default profile only
with it). Simplified (as the queue's hints): a PodGroup event, or a new pod that names a group, moves every
unschedulable pod; the pods a cycle takes are the group's pods waiting in any queue, in activeQ order.
"""

from __future__ import annotations

import copy
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.scheduler import failure
from mockgpu.control.scheduler.queue import QueuedPod
from mockgpu.sched.framework import Code, Profile
from mockgpu.sched.plugins.gang_scheduling import min_count, pod_group_name, pre_enqueue
from mockgpu.sched.podgroup_cycle import CONDITION, GroupResult, schedule_pod_group
from mockgpu.sched.snapshot import pod_priority

PLURAL = "podgroups"


def group_key(pod: dict[str, Any]) -> str | None:
    """``namespace/podGroupName`` of a pod in a group, else None."""
    name = pod_group_name(pod)
    return f"{(pod.get('metadata') or {}).get('namespace') or 'default'}/{name}" if name else None


class PodGroups:
    """The PodGroups the informer saw, by ``namespace/name``."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, Any]] = {}

    def apply(self, typ: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
        if typ == "DELETED":
            self.groups.pop(key, None)
        else:
            self.groups[key] = obj

    def sync(self, items: list[dict[str, Any]]) -> None:
        self.groups = {}
        for obj in items:
            self.apply("ADDED", obj)

    def get(self, key: str) -> dict[str, Any] | None:
        return self.groups.get(key)


def _members(s: Any, key: str) -> tuple[list[QueuedPod], int]:
    """The group's pods waiting in the queue (activeQ order) and how many are bound or assumed."""
    waiting = [q for q in s.queue.pending() if group_key(q.pod) == key]
    placed = sum(1 for node in s.cache.nodes() for p in node.pods if group_key(p) == key)
    return waiting, placed


def schedule(s: Any, q: QueuedPod, profile: Profile) -> bool:
    """Handle a popped pod that names a PodGroup; False when it is not a gang's (schedule it alone)."""
    key = group_key(q.pod)
    if key is None:
        return False
    podgroup = s.podgroups.get(key)
    waiting, placed = _members(s, key)
    status = pre_enqueue(q.pod, podgroup, len(waiting) + 1 + placed)
    if not status.is_success:
        s.queue.failed(q, unschedulable=True)  # PreEnqueue: waits for an event, nothing written (as upstream)
        return True
    count = min_count(podgroup) if podgroup is not None else None
    if count is None:
        return False  # a basic policy: every pod on its own
    others = [t for t in (s.queue.take(w.key) for w in waiting if w.key != q.key) if t is not None]
    members = _ordered([q, *others])
    s.cycles += 1
    res = schedule_pod_group([m.pod for m in members], s.cache.nodes(), profile, s.rng, min_count=count,
                             scheduled=placed, start_index=s._start_index, nominated=s.cache.nominated_pods(),
                             dra=s.dra.snapshot())
    s._start_index = res.next_start_index
    _submit(s, members, res, profile.scheduler_name)
    _write_condition(s, key, podgroup, res)
    return True


def _ordered(members: list[QueuedPod]) -> list[QueuedPod]:
    """activeQ order: priority, then creationTimestamp, then arrival."""
    return sorted(members, key=lambda m: (-pod_priority(m.pod),
                                          str((m.pod.get("metadata") or {}).get("creationTimestamp") or ""), m.seq))


def _submit(s: Any, members: list[QueuedPod], res: GroupResult, component: str) -> None:
    for m, pod_res, message in zip(members, res.results, res.messages, strict=True):
        if res.scheduled and pod_res is not None and pod_res.scheduled:
            s._assume_and_bind(m, pod_res, component)
        elif res.status.code is Code.ERROR:
            failure.record_error(s, m, component, message)
        else:
            failure.record_group_rejected(s, m, pod_res, component, message)


def _write_condition(s: Any, key: str, podgroup: dict[str, Any] | None, res: GroupResult) -> None:
    """``updatePodGroupCondition``: the condition set (others kept), its time moved only when its status flips;
    nothing written when it is unchanged."""
    if podgroup is None:
        return
    want = res.condition()
    conditions = copy.deepcopy(((podgroup.get("status") or {}).get("conditions")) or [])
    old = next((c for c in conditions if c.get("type") == CONDITION), None)
    if old is not None and all(old.get(k) == v for k, v in want.items()):
        return
    cond = {**want, "lastTransitionTime": old.get("lastTransitionTime") if old is not None and
            old.get("status") == want["status"] else rfc3339()}
    conditions = [c for c in conditions if c.get("type") != CONDITION] + [cond]
    podgroup.setdefault("status", {})["conditions"] = conditions  # until the watch brings the stored one
    ns, name = key.split("/", 1)

    def write() -> None:
        try:
            s.api.patch_podgroup_status(ns, name, {"status": {"conditions": conditions}})
        except ApiException as exc:
            if exc.status != 404:
                raise

    s.writers.submit(f"podgroup:{key}", write)

