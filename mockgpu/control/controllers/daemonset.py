"""The DaemonSet controller: one pod on every node the DaemonSet's pods should run on.

As upstream's ``pkg/controller/daemon``: whether a node should run the daemon pod is decided on the pod the
controller would create (``NodeShouldRunDaemonPod``): the template's ``nodeName``, ``nodeSelector`` and required
node affinity, and the node's NoSchedule/NoExecute taints against the template's tolerations plus the ones the
controller always adds (``not-ready`` and ``unreachable`` NoExecute; ``disk-pressure``, ``memory-pressure``,
``pid-pressure``, ``unschedulable`` NoSchedule; ``network-unavailable`` NoSchedule for ``hostNetwork`` pods); a
pod on a node with an untolerated NoSchedule taint keeps running, one with an untolerated NoExecute taint is
deleted. Pods are named ``<ds>-<5 chars>``, carry ``controller-revision-hash`` and ``pod-template-generation``
labels and are pinned to their node by required node affinity ``matchFields metadata.name In [node]``
(``ReplaceDaemonSetPodNodeNameNodeAffinity``), so the default scheduler binds them. Failed and succeeded pods
are deleted and replaced, extra pods on a node deleted (the oldest kept); RollingUpdate replaces old pods
within ``maxUnavailable`` (rounded up; unavailable old pods first), OnDelete only when a pod is deleted.
Status: ``desiredNumberScheduled``, ``currentNumberScheduled``, ``numberMisscheduled``, ``numberReady``,
``numberAvailable``, ``numberUnavailable``, ``updatedNumberScheduled``, ``observedGeneration``. Node
additions, removals and label or taint changes requeue every DaemonSet. Events ``SuccessfulCreate``
"Created pod: x", ``SuccessfulDelete`` "Deleted pod: x", ``FailedDaemonPod``.

Simplified: no ControllerRevision objects (the revision hash is the template's FNV hash, so ``kubectl rollout
history``/``undo`` do not work for DaemonSets; ``rollout status`` does); ``maxSurge`` is validated and stored
but the rollout always deletes before it creates (as with ``maxSurge: 0``); no back-off for pods that keep
failing.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.control.controllers import logic
from mockgpu.control.controllers.api import Recorder
from mockgpu.control.controllers.base import Manager
from mockgpu.control.controllers.replicaset import _status_message, delete_pod
from mockgpu.sched import nodeselector
from mockgpu.sched.taints import first_untolerated

Obj = dict[str, Any]
REVISION_HASH = "controller-revision-hash"
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


def _toleration(key: str, effect: str) -> Obj:
    return {"key": key, "operator": "Exists", "effect": effect}


DAEMON_TOLERATIONS = (
    _toleration("node.kubernetes.io/not-ready", "NoExecute"),
    _toleration("node.kubernetes.io/unreachable", "NoExecute"),
    _toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
    _toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
    _toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
    _toleration("node.kubernetes.io/unschedulable", "NoSchedule"),
)
NETWORK_UNAVAILABLE = _toleration("node.kubernetes.io/network-unavailable", "NoSchedule")


# ---- pure decisions ---------------------------------------------------------------------------------------

def daemon_tolerations(pod_spec: Obj) -> list[Obj]:
    """``AddOrUpdateDaemonPodTolerations``: the template's tolerations plus the controller's own (a toleration
    already present with the same key, operator and effect is not added twice)."""
    out = [dict(t) for t in pod_spec.get("tolerations") or []]
    extra = list(DAEMON_TOLERATIONS) + ([NETWORK_UNAVAILABLE] if pod_spec.get("hostNetwork") else [])
    for tol in extra:
        if not any(t.get("key") == tol["key"] and (t.get("operator") or "Equal") == tol["operator"]
                   and t.get("effect") == tol["effect"] for t in out):
            out.append(dict(tol))
    return out


def pin_to_node(affinity: Obj | None, node: str) -> Obj:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: the required node-affinity terms become the single term
    ``matchFields metadata.name In [node]``; preferred terms and pod (anti-)affinity are kept."""
    out = copy.deepcopy(affinity) if affinity else {}
    node_affinity = out.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    required["nodeSelectorTerms"] = [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                       "values": [node]}]}]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    return out


def _fits_affinity(pod_spec: Obj, node: Obj) -> bool:
    meta = node.get("metadata") or {}
    labels, name = meta.get("labels") or {}, meta.get("name", "")
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is not None:
        return nodeselector.selector_matches(required.get("nodeSelectorTerms") or [], labels, name)
    return True


def should_run(ds: Obj, node: Obj) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (should a daemon pod be created here, may an existing one keep running)."""
    pod_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    node_name = (node.get("metadata") or {}).get("name", "")
    if pod_spec.get("nodeName") and pod_spec["nodeName"] != node_name:
        return False, False
    if not _fits_affinity(pod_spec, node):
        return False, False
    taints = (node.get("spec") or {}).get("taints") or []
    tolerations = daemon_tolerations(pod_spec)
    if first_untolerated(taints, tolerations, ("NoSchedule", "NoExecute")) is None:
        return True, True
    return False, first_untolerated(taints, tolerations, ("NoExecute",)) is None


def revision_hash(ds: Obj) -> str:
    return logic.template_hash((ds.get("spec") or {}).get("template") or {})


def daemon_pod(ds: Obj, node: str, hash_: str) -> Obj:
    """The pod the controller creates for ``node``: the template with the revision labels, the controller's
    tolerations and the node-name affinity."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    meta = template.setdefault("metadata", {})
    labels = dict(meta.get("labels") or {})
    generation = ((ds.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    if generation:
        labels[TEMPLATE_GENERATION_LABEL] = generation
    labels[REVISION_HASH] = hash_
    meta["labels"] = labels
    pod = logic.pod_from_template(template, ds, ds["metadata"]["name"])
    spec = pod["spec"]
    spec["tolerations"] = daemon_tolerations(spec)
    spec["affinity"] = pin_to_node(spec.get("affinity"), node)
    return pod


def pod_node(pod: Obj) -> str:
    """The node a daemon pod belongs to: its ``nodeName``, else the node its affinity pins it to."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    for term in terms:
        for req in term.get("matchFields") or []:
            if req.get("key") == "metadata.name" and req.get("operator") == "In" and len(req.get("values") or []) == 1:
                return str(req["values"][0])
    return ""


def is_updated(pod: Obj, ds: Obj, hash_: str) -> bool:
    """``IsPodUpdated``: the pod carries the current revision hash (or, for pods made before hashes, the
    current template generation)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(REVISION_HASH):
        return labels[REVISION_HASH] == hash_
    generation = ((ds.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    return generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == generation


@dataclass
class NodePlan:
    """What one sync does: nodes that need a pod, pods to delete (with why), and the status it reports."""

    create: list[str] = field(default_factory=list)
    delete: list[tuple[Obj, str]] = field(default_factory=list)  # (pod, "failed" | "extra" | "misscheduled" | "update")
    status: Obj = field(default_factory=dict)


def _created(pod: Obj) -> tuple[float, str]:
    meta = pod.get("metadata") or {}
    return logic.parse_time(meta.get("creationTimestamp")) or 0.0, meta.get("name", "")


def plan(ds: Obj, nodes: list[Obj], pods: list[Obj], now: float) -> NodePlan:
    """The DaemonSet controller's ``manage`` + ``rollingUpdate`` + ``updateDaemonSetStatus`` for one sync."""
    spec = ds.get("spec") or {}
    hash_ = revision_hash(ds)
    min_ready = int(spec.get("minReadySeconds") or 0)
    by_node: dict[str, list[Obj]] = {}
    for pod in pods:
        by_node.setdefault(pod_node(pod), []).append(pod)
    out = NodePlan()
    counts = {"desired": 0, "current": 0, "misscheduled": 0, "ready": 0, "available": 0, "updated": 0}
    keep: dict[str, Obj] = {}  # node → its one running daemon pod after this sync
    waiting: set[str] = set()  # nodes whose pod is still terminating (a replacement waits for it)
    node_names = set()
    for node in nodes:
        name = (node.get("metadata") or {}).get("name", "")
        node_names.add(name)
        run, keep_running = should_run(ds, node)
        here = sorted(by_node.get(name, []), key=_created)
        live = [p for p in here if not (p.get("metadata") or {}).get("deletionTimestamp")]
        running = []
        for pod in live:
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Failed", "Succeeded") and keep_running:
                out.delete.append((pod, "failed" if phase == "Failed" else "succeeded"))
            else:
                running.append(pod)
        if run:
            counts["desired"] += 1
        if not keep_running:
            out.delete += [(p, "misscheduled") for p in running]
            if here:
                counts["misscheduled"] += 1
            continue
        if running:
            out.delete += [(p, "extra") for p in running[1:]]
            keep[name] = running[0]
        elif run and len(live) == len(here):  # nothing running and nothing terminating: create
            out.create.append(name)
        elif run:
            waiting.add(name)
        if here and run:
            counts["current"] += 1
            first = running[0] if running else None
            if first is not None and logic.pod_ready(first):
                counts["ready"] += 1
            if first is not None and logic.pod_available(first, min_ready, now):
                counts["available"] += 1
            if first is not None and is_updated(first, ds, hash_):
                counts["updated"] += 1
        elif here and not run:
            counts["misscheduled"] += 1
    for name, here in by_node.items():  # pods on nodes that no longer exist
        if name not in node_names:
            out.delete += [(p, "misscheduled") for p in here if not (p.get("metadata") or {}).get("deletionTimestamp")]
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type") == "RollingUpdate":
        out.delete += _rolling_update(ds, keep, out.create, waiting, hash_, counts["desired"], min_ready, now)
    out.status = {
        "currentNumberScheduled": counts["current"], "numberMisscheduled": counts["misscheduled"],
        "desiredNumberScheduled": counts["desired"], "numberReady": counts["ready"],
        "observedGeneration": (ds.get("metadata") or {}).get("generation", 0),
        "updatedNumberScheduled": counts["updated"], "numberAvailable": counts["available"],
        "numberUnavailable": counts["desired"] - counts["available"]}
    for key in ("updatedNumberScheduled", "numberAvailable", "numberUnavailable", "observedGeneration"):
        if not out.status[key]:
            del out.status[key]  # omitempty in the Go type; the other counts are always written
    return out


def _rolling_update(ds: Obj, keep: dict[str, Obj], creating: list[str], waiting: set[str], hash_: str,
                    desired: int, min_ready: int, now: float) -> list[tuple[Obj, str]]:
    """``rollingUpdate`` with no surge: old pods that are unavailable go at once; available ones only while
    fewer than ``maxUnavailable`` (of the desired nodes, rounded up; at least 1) are unavailable."""
    ru = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    max_unavailable = logic.scaled_value(ru.get("maxUnavailable", 1), desired, True)
    surge = logic.scaled_value(ru.get("maxSurge", 0), desired, True)
    if max_unavailable == 0 and surge == 0:
        max_unavailable = 1
    if max_unavailable == 0:  # surge-only rollouts are simplified to one pod at a time
        max_unavailable = 1
    unavailable = len(creating) + len(waiting)
    replace, candidates = [], []
    for name in sorted(keep):
        pod = keep[name]
        available = logic.pod_available(pod, min_ready, now)
        if is_updated(pod, ds, hash_):
            if not available:
                unavailable += 1
        elif not available:
            replace.append(pod)
            unavailable += 1
        else:
            candidates.append(pod)
    room = max(0, min(max_unavailable - unavailable, len(candidates)))
    return [(p, "update") for p in replace + candidates[:room]]


# ---- the controller ---------------------------------------------------------------------------------------

class DaemonSetController:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.recorder = Recorder(mgr.api, "daemonset-controller")

    def sync(self, ns: str, name: str) -> None:
        ds = self.mgr.cache.get("daemonsets", ns, name)
        if ds is None or ds["metadata"].get("deletionTimestamp"):
            return
        pods = self.mgr.claim("pods", ds)
        nodes = self.mgr.cache.list("nodes")
        now = time.time()
        decided = plan(ds, nodes, pods, now)
        for pod, why in decided.delete:
            if why == "failed":
                spec = pod.get("spec") or {}
                self.recorder.event(ds, "Warning", "FailedDaemonPod",
                                    f"Found failed daemon pod {ns}/{pod['metadata']['name']} on node "
                                    f"{spec.get('nodeName') or pod_node(pod)}, will try to kill it")
            delete_pod(self.mgr, pod)
            self.recorder.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
        hash_ = revision_hash(ds)
        for node in decided.create:
            try:
                created = self.mgr.wrote("pods", self.mgr.api.create("pods", ns, daemon_pod(ds, node, hash_)))
            except ApiException as exc:
                if exc.status in (404, 409):
                    raise
                self.recorder.event(ds, "Warning", "FailedCreate", f"Error creating: {_status_message(exc)}")
                continue
            self.recorder.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
        if decided.delete or decided.create:  # recount from what the writes returned
            decided = plan(ds, nodes, self.mgr.cache.owned("pods", ds), now)
        status = {**{k: v for k, v in (ds.get("status") or {}).items() if k in ("conditions", "collisionCount")},
                  **decided.status}
        if status != (ds.get("status") or {}):
            self.mgr.wrote("daemonsets", self.mgr.api.replace("daemonsets", {**ds, "status": status}, status=True))
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and decided.status.get("numberReady", 0) > decided.status.get("numberAvailable", 0):
            self.mgr.enqueue("DaemonSet", ns, name, after=1.0)
