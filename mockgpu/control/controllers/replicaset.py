"""The ReplicaSet controller, and the ReplicationController controller on the same code: keep ``spec.replicas``
active pods, and report them in the status.

As upstream's ``replicaset_controller``: pods named ``<rs>-<5 chars>`` from the template, the ReplicaSet as
their controller (``blockOwnerDeletion``), events ``SuccessfulCreate`` "Created pod: x" and
``SuccessfulDelete`` "Deleted pod: x", surplus pods deleted in upstream's order (unscheduled, pending, not
ready, newest first), status ``replicas``/``fullyLabeledReplicas``/``readyReplicas``/``availableReplicas``
(ready for ``minReadySeconds``)/``observedGeneration``, and a ``ReplicaFailure`` condition when pods cannot
be created; orphaned pods matching the selector are adopted, owned pods that stop matching it released.
Simplified: pods are created in one burst rather than upstream's slow-start batches.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.controllers import logic
from mockgpu.control.controllers.api import Recorder
from mockgpu.control.controllers.base import Manager

Obj = dict[str, Any]


def delete_pod(mgr: Manager, pod: Obj) -> None:
    """Delete a pod (uid precondition) and tell the cache: marked terminating, or gone."""
    meta = pod["metadata"]
    try:
        out = mgr.api.delete("pods", meta["namespace"], meta["name"], uid=meta.get("uid"))
    except ApiException as exc:
        if exc.status in (404, 409):  # already gone, or a new pod of that name
            mgr.cache.remove("pods", pod)
            return
        raise
    if isinstance(out, dict) and (out.get("metadata") or {}).get("deletionTimestamp"):
        mgr.wrote("pods", out)
    else:
        mgr.cache.remove("pods", out if isinstance(out, dict) and out.get("kind") == "Pod" else pod)


class ReplicaSetController:
    """The controller of one kind of replica set: ReplicaSets, or (``ReplicationControllerController``) the core
    group's ReplicationControllers, which upstream's ``replication`` package runs on this same code."""

    plural, kind, api_version, component = "replicasets", "ReplicaSet", "apps/v1", "replicaset-controller"

    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.recorder = Recorder(mgr.api, self.component)

    @staticmethod
    def selector(owner: Obj) -> Any:
        """The owner's pod selector as a ``metav1.LabelSelector``."""
        return (owner.get("spec") or {}).get("selector")

    def sync(self, ns: str, name: str) -> None:
        rs = self.mgr.cache.get(self.plural, ns, name)
        if rs is None:
            return
        rs = {**rs, "apiVersion": self.api_version, "kind": self.kind}  # a listed item carries neither
        pods = self.mgr.claim("pods", rs, self.selector(rs))
        active = [p for p in pods if logic.pod_active(p)]
        failure: Obj | None = None
        if not rs["metadata"].get("deletionTimestamp"):
            want = int((rs.get("spec") or {}).get("replicas") or 0)
            diff = len(active) - want
            if diff < 0:
                failure = self._create(rs, -diff)
            elif diff > 0:
                for pod in logic.deletion_order(active)[:diff]:
                    delete_pod(self.mgr, pod)
                    self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
            pods = self.mgr.cache.owned("pods", rs)
            active = [p for p in pods if logic.pod_active(p)]
        self._status(rs, active, failure)

    def _create(self, rs: Obj, count: int) -> Obj | None:
        template = (rs.get("spec") or {}).get("template") or {}
        for _ in range(count):
            pod = logic.pod_from_template(template, rs, rs["metadata"]["name"])
            try:
                created = self.mgr.wrote("pods", self.mgr.api.create("pods", rs["metadata"]["namespace"], pod))
            except ApiException as exc:
                message = _status_message(exc)
                self.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {message}")
                return {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": message}
            self.recorder.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
        return None

    def _status(self, rs: Obj, active: list[Obj], failure: Obj | None) -> None:
        spec = rs.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = time.time()
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        status = copy.deepcopy(rs.get("status") or {})
        status.update({
            "replicas": len(active),
            "fullyLabeledReplicas": sum(1 for p in active if labels.items() <= (p["metadata"].get("labels") or {})
                                        .items()),
            "readyReplicas": sum(1 for p in active if logic.pod_ready(p)),
            "availableReplicas": sum(1 for p in active if logic.pod_available(p, min_ready, now)),
            "observedGeneration": rs["metadata"].get("generation", 0)})
        for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
            if not status[key]:
                del status[key]  # zero counts are omitted (omitempty), as upstream's JSON
        if failure is not None:
            logic.set_condition(status, {**failure, "lastTransitionTime": rfc3339()})
        elif logic.get_condition(status, "ReplicaFailure") and len(active) >= int(spec.get("replicas") or 0):
            status["conditions"] = [c for c in status["conditions"] if c.get("type") != "ReplicaFailure"]
            if not status["conditions"]:
                del status["conditions"]
        if status != (rs.get("status") or {}):
            self.mgr.wrote(self.plural, self.mgr.api.replace(self.plural, {**rs, "status": status}, status=True))
        waiting = [p for p in active if logic.pod_ready(p) and not logic.pod_available(p, min_ready, now)]
        if waiting:  # look again when the first ready pod has been ready for minReadySeconds
            self.mgr.enqueue(self.kind, rs["metadata"]["namespace"], rs["metadata"]["name"], after=1.0)


class ReplicationControllerController(ReplicaSetController):
    """``pkg/controller/replication``: the ReplicaSet controller over ReplicationControllers (upstream wraps them
    as ReplicaSets); their selector is an equality map."""

    plural, kind, api_version, component = ("replicationcontrollers", "ReplicationController", "v1",
                                            "replication-controller")

    @staticmethod
    def selector(owner: Obj) -> Any:
        selector = (owner.get("spec") or {}).get("selector")
        return {"matchLabels": dict(selector)} if isinstance(selector, dict) and selector else None


def _status_message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except ValueError:
        return str(exc.reason)
