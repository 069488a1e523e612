"""The StatefulSet controller: pods with stable ordinal names, created, replaced and updated in order.

As upstream's ``pkg/controller/statefulset``: pods ``<sts>-<ordinal>`` (from ``spec.ordinals.start``), each
labelled ``controller-revision-hash`` (``<sts>-<hash>``), ``statefulset.kubernetes.io/pod-name`` and
``apps.kubernetes.io/pod-index``, with ``hostname`` the pod name and ``subdomain`` the ``serviceName``.
``OrderedReady``: a missing pod is created only when every lower ordinal is Running and Ready (for
``minReadySeconds``), one per sync; scale-down deletes the highest ordinal first, one at a time, only while the
rest are healthy. ``Parallel``: all missing pods created and all surplus pods deleted at once. Failed (and
succeeded) pods are deleted and recreated under the same name. RollingUpdate replaces pods whose revision differs
from the update revision from the highest ordinal down to ``partition``, at most ``maxUnavailable`` (default 1,
the v1.37 default of MaxUnavailableStatefulSet) unavailable at a time and only while the others are healthy;
OnDelete replaces a pod only when someone deletes it. Status ``replicas``, ``readyReplicas``,
``availableReplicas`` (ready for ``minReadySeconds``), ``currentReplicas``, ``updatedReplicas``,
``currentRevision``, ``updateRevision`` (the current revision becomes the update revision once every pod is
updated and ready), ``collisionCount``, ``observedGeneration``, so ``kubectl rollout status sts/x`` works,
partitions included. Events ``SuccessfulCreate`` "create Pod web-0 in StatefulSet web successful" (upstream
title-cases the verb: "Create Pod ..."), ``SuccessfulDelete``, ``RecreatingFailedPod``.

Simplified: no ControllerRevision objects (the revision is ``<sts>-<FNV hash of the template>``; ``kubectl
rollout history``/``undo`` do not work), so a pod below the partition that is deleted comes back from the current
template rather than the older revision's; ``volumeClaimTemplates`` create no PersistentVolumeClaims: each pod
gets an ``emptyDir`` volume of the claim's name instead (the data lives as long as the pod, not the ordinal).
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.control.controllers import logic
from mockgpu.control.controllers.api import Recorder
from mockgpu.control.controllers.base import Manager
from mockgpu.control.controllers.replicaset import _status_message, delete_pod

Obj = dict[str, Any]
REVISION_HASH = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


# ---- pure decisions ---------------------------------------------------------------------------------------

def revision_name(sts: Obj) -> str:
    """The update revision's name, as upstream names the ControllerRevision: ``<sts>-<template hash>``."""
    return f"{sts['metadata']['name']}-{logic.template_hash((sts.get('spec') or {}).get('template') or {})}"


def start_ordinal(sts: Obj) -> int:
    ordinals = (sts.get("spec") or {}).get("ordinals") or {}
    return int(ordinals.get("start") or 0)


def ordinal_of(sts: Obj, pod: Obj) -> int | None:
    """``getOrdinal``: the number after ``<sts>-`` in the pod's name, or None for a name not of that shape."""
    m = re.fullmatch(re.escape(sts["metadata"]["name"]) + r"-(\d+)", (pod.get("metadata") or {}).get("name", ""))
    return int(m.group(1)) if m else None


def stateful_pod(sts: Obj, ordinal: int, revision: str) -> Obj:
    """``newVersionedStatefulSetPod``: the template with the identity labels, hostname and subdomain, and the
    claim templates' volumes (emptyDir here)."""
    spec = sts.get("spec") or {}
    name = f"{sts['metadata']['name']}-{ordinal}"
    template = copy.deepcopy(spec.get("template") or {})
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), REVISION_HASH: revision, POD_NAME_LABEL: name,
                      POD_INDEX_LABEL: str(ordinal)}
    pod = logic.pod_from_template(template, sts, sts["metadata"]["name"])
    del pod["metadata"]["generateName"]
    pod["metadata"]["name"] = name
    pod_spec = pod["spec"]
    pod_spec["hostname"] = name
    if spec.get("serviceName"):
        pod_spec["subdomain"] = spec["serviceName"]
    templates = spec.get("volumeClaimTemplates")
    claims = [c["metadata"]["name"] for c in (templates if isinstance(templates, list) else [])
              if isinstance(c, dict) and (c.get("metadata") or {}).get("name")]
    if claims:
        own = [v for v in pod_spec.get("volumes") or [] if v.get("name") not in claims]
        pod_spec["volumes"] = [{"name": c, "emptyDir": {}} for c in claims] + own
    return pod


def running_and_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and logic.pod_ready(pod)


def _terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _revision(pod: Obj) -> str:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_HASH, "")


@dataclass
class Plan:
    """One sync's decisions: ordinals to create, pods to delete (with why), and the status to report."""

    create: list[int] = field(default_factory=list)
    delete: list[tuple[Obj, str]] = field(default_factory=list)  # why: "failed", "succeeded", "scale", "update"
    status: Obj = field(default_factory=dict)


def plan(sts: Obj, pods: list[Obj], now: float) -> Plan:
    """``updateStatefulSet`` for one pass: create, replace, scale down and roll out, in upstream's order."""
    spec, old_status = sts.get("spec") or {}, sts.get("status") or {}
    replicas, start = int(spec.get("replicas") or 0), start_ordinal(sts)
    ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
    update_rev = revision_name(sts)
    current_rev = old_status.get("currentRevision") or update_rev
    min_ready = int(spec.get("minReadySeconds") or 0)
    by_ordinal: dict[int, Obj] = {}
    for pod in pods:
        i = ordinal_of(sts, pod)
        if i is not None:
            by_ordinal[i] = pod
    wanted = range(start, start + replicas)
    condemned = sorted((i for i in by_ordinal if i not in wanted), reverse=True)
    out = Plan()
    blocked = False  # an OrderedReady pass stops at the first pod that is not Running and Ready
    for i in wanted:
        pod = by_ordinal.get(i)
        if pod is None:
            if not (ordered and blocked):
                out.create.append(i)
            if ordered:
                blocked = True
            continue
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Failed", "Succeeded") and not _terminating(pod):
            out.delete.append((pod, "failed" if phase == "Failed" else "succeeded"))
            blocked = blocked or ordered
            continue
        if ordered and (_terminating(pod) or not running_and_ready(pod)
                        or not logic.pod_available(pod, min_ready, now)):
            blocked = True  # upstream waits for Running and available (ready for minReadySeconds)
    healthy = not blocked and all(i in by_ordinal and running_and_ready(by_ordinal[i]) and
                                  not _terminating(by_ordinal[i]) for i in wanted)
    if condemned:
        if not ordered:
            out.delete += [(by_ordinal[i], "scale") for i in condemned if not _terminating(by_ordinal[i])]
        elif healthy and not _terminating(by_ordinal[condemned[0]]):
            out.delete.append((by_ordinal[condemned[0]], "scale"))
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type") == "RollingUpdate" and not out.create and not out.delete:
        ru = strategy.get("rollingUpdate") or {}
        partition = int(ru.get("partition") or 0)
        max_unavailable = max(1, logic.scaled_value(ru.get("maxUnavailable", 1), replicas, False))
        targets = [i for i in wanted if i - start >= partition]
        unavailable = sum(1 for i in wanted if i not in by_ordinal or _terminating(by_ordinal[i])
                          or not running_and_ready(by_ordinal[i]))
        if not ordered or unavailable == 0:
            room = max_unavailable - unavailable
            for i in sorted(targets, reverse=True):
                pod = by_ordinal.get(i)
                if room <= 0:
                    break
                if pod is not None and not _terminating(pod) and _revision(pod) != update_rev:
                    out.delete.append((pod, "update"))
                    room -= 1
    out.status = _status(sts, list(by_ordinal.values()), current_rev, update_rev, now)
    return out


def _status(sts: Obj, pods: list[Obj], current_rev: str, update_rev: str, now: float) -> Obj:
    """``computeReplicaStatus`` and ``completeRollingUpdate``."""
    spec = sts.get("spec") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    live = [p for p in pods if not _terminating(p)]
    ready = [p for p in pods if running_and_ready(p)]
    status: Obj = {
        "replicas": len(pods), "readyReplicas": len(ready),
        "availableReplicas": sum(1 for p in ready if logic.pod_available(p, min_ready, now)),
        "currentReplicas": sum(1 for p in live if _revision(p) == current_rev),
        "updatedReplicas": sum(1 for p in live if _revision(p) == update_rev),
        "currentRevision": current_rev, "updateRevision": update_rev, "collisionCount": 0,
        "observedGeneration": (sts.get("metadata") or {}).get("generation", 0)}
    want = int(spec.get("replicas") or 0)
    if ((spec.get("updateStrategy") or {}).get("type") == "RollingUpdate" and status["updatedReplicas"] == want
            and status["readyReplicas"] == want and status["replicas"] == want):
        status["currentRevision"] = update_rev
        status["currentReplicas"] = status["updatedReplicas"]
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas"):
        if not status[key]:
            del status[key]  # omitempty
    return status


# ---- the controller ---------------------------------------------------------------------------------------

class StatefulSetController:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.recorder = Recorder(mgr.api, "statefulset-controller")

    def _event(self, sts: Obj, verb: str, pod_name: str) -> None:
        self.recorder.event(sts, "Normal", f"Successful{verb.title()}",
                            f"{verb.title()} Pod {pod_name} in StatefulSet {sts['metadata']['name']} successful")

    def sync(self, ns: str, name: str) -> None:
        sts = self.mgr.cache.get("statefulsets", ns, name)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        pods = self.mgr.claim("pods", sts)
        now = time.time()
        decided = plan(sts, pods, now)
        for pod, why in decided.delete:
            if why in ("failed", "succeeded"):
                word = "failed" if why == "failed" else "terminated"
                self.recorder.event(sts, "Warning", "RecreatingFailedPod" if why == "failed"
                                    else "RecreatingTerminatedPod",
                                    f"StatefulSet {ns}/{name} is recreating {word} Pod {pod['metadata']['name']}")
            delete_pod(self.mgr, pod)
            self._event(sts, "delete", pod["metadata"]["name"])
        revision = decided.status["updateRevision"]
        for ordinal in decided.create:
            try:
                created = self.mgr.wrote("pods", self.mgr.api.create("pods", ns, stateful_pod(sts, ordinal, revision)))
            except ApiException as exc:
                if exc.status == 409:  # the previous pod of that name is still going away
                    continue
                self.recorder.event(sts, "Warning", "FailedCreate",
                                    f"Create Pod {name}-{ordinal} in StatefulSet {name} failed error: "
                                    f"{_status_message(exc)}")
                raise
            self._event(sts, "create", created["metadata"]["name"])
        if decided.delete or decided.create:
            decided = plan(sts, self.mgr.cache.owned("pods", sts), now)
        status = {**{k: v for k, v in (sts.get("status") or {}).items() if k == "conditions"}, **decided.status}
        if status != (sts.get("status") or {}):
            self.mgr.wrote("statefulsets",
                           self.mgr.api.replace("statefulsets", {**sts, "status": status}, status=True))
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and decided.status.get("readyReplicas", 0) > decided.status.get("availableReplicas", 0):
            self.mgr.enqueue("StatefulSet", ns, name, after=1.0)
