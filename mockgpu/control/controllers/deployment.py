"""The Deployment controller: ReplicaSets per pod template, rolled out RollingUpdate or Recreate.

Follows upstream's ``deployment_controller`` as a user observes it: the new ReplicaSet ``<deploy>-<hash>``
(template labelled and selected by ``pod-template-hash``, owned by the Deployment), annotations
``deployment.kubernetes.io/revision`` (on the ReplicaSets and the Deployment), ``desired-replicas`` and
``max-replicas``; RollingUpdate scaling within ``maxSurge``/``maxUnavailable`` (25% each by default,
surge rounded up and unavailability down), Recreate (old pods gone before new ones start); ``kubectl rollout
undo`` (an old ReplicaSet whose template matches again becomes the newest revision) and ``rollout restart``;
``ScalingReplicaSet`` events "Scaled up replica set d1-xxx from 0 to 2"; status counts summed over the
ReplicaSets, ``observedGeneration``, conditions ``Available`` (``MinimumReplicasAvailable`` /
``MinimumReplicasUnavailable``) and ``Progressing`` (``NewReplicaSetCreated``, ``FoundNewReplicaSet``,
``ReplicaSetUpdated``, ``NewReplicaSetAvailable``, ``ProgressDeadlineExceeded``); old ReplicaSets beyond
``revisionHistoryLimit`` deleted; orphaned ReplicaSets matching the selector adopted (re-creating a
Deployment deleted with ``--cascade=orphan`` takes its ReplicaSet back). A replica change while
several ReplicaSets are active is spread over them in proportion (upstream's ``dc.scale``); a paused Deployment
scales but does not roll out (``Progressing`` Unknown ``DeploymentPaused``/``DeploymentResumed``). Simplified:
the template hash differs from upstream's value (see ``logic``).
"""

from __future__ import annotations

import copy
import time
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.controllers import logic
from mockgpu.control.controllers.api import Recorder
from mockgpu.control.controllers.base import Manager

Obj = dict[str, Any]


def _replicas(obj: Obj) -> int:
    return int((obj.get("spec") or {}).get("replicas") or 0)


def _status_count(obj: Obj, field: str) -> int:
    return int((obj.get("status") or {}).get(field) or 0)


def _revision(rs: Obj) -> int:
    try:
        return int(((rs.get("metadata") or {}).get("annotations") or {}).get(logic.REVISION) or 0)
    except ValueError:
        return 0


def _created(obj: Obj) -> tuple[float, str]:
    return logic.parse_time(obj["metadata"].get("creationTimestamp")) or 0.0, obj["metadata"]["name"]


def deployment_complete(d: Obj, status: Obj) -> bool:
    """``deploymentutil.DeploymentComplete``: every replica updated and available, nothing older left."""
    want = _replicas(d)
    return (int(status.get("updatedReplicas") or 0) == want and int(status.get("replicas") or 0) == want
            and int(status.get("availableReplicas") or 0) == want
            and int(status.get("observedGeneration") or 0) >= int(d["metadata"].get("generation") or 0))


def deployment_progressing(old: Obj, new: Obj) -> bool:
    """``deploymentutil.DeploymentProgressing``: more updated, ready or available replicas, or fewer old."""
    old_old = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
    new_old = int(new.get("replicas") or 0) - int(new.get("updatedReplicas") or 0)
    return (int(new.get("updatedReplicas") or 0) > int(old.get("updatedReplicas") or 0) or new_old < old_old
            or int(new.get("readyReplicas") or 0) > int(old.get("readyReplicas") or 0)
            or int(new.get("availableReplicas") or 0) > int(old.get("availableReplicas") or 0))


class DeploymentController:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.recorder = Recorder(mgr.api, "deployment-controller")

    # ---- the sync loop ----------------------------------------------------------------------------------------

    def sync(self, ns: str, name: str) -> None:
        d = self.mgr.cache.get("deployments", ns, name)
        if d is None:
            return
        rss = self.mgr.claim("replicasets", d)
        if d["metadata"].get("deletionTimestamp"):
            self._sync_status(d, self._find_new(d, rss), rss)
            return
        spec = d.get("spec") or {}
        self._paused_condition(d)
        if spec.get("paused") or self._scaling_event(d, rss):
            new_rs = self._new_rs(d, rss, create=False)
            self._scale_all(d, new_rs, self.mgr.cache.owned("replicasets", d))
            self._sync_status(d, new_rs, self.mgr.cache.owned("replicasets", d))
            return
        if (spec.get("strategy") or {}).get("type") == "Recreate":
            self._recreate(d, rss)
        else:
            self._rolling(d, rss)

    def _find_new(self, d: Obj, rss: list[Obj]) -> Obj | None:
        """The oldest ReplicaSet whose template equals the Deployment's (upstream ``FindNewReplicaSet``)."""
        template = (d.get("spec") or {}).get("template") or {}
        for rs in sorted(rss, key=_created):
            if logic.equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template):
                return rs
        return None

    def _rolling(self, d: Obj, rss: list[Obj]) -> None:
        new_rs = self._new_rs(d, rss, create=True)
        rss = self.mgr.cache.owned("replicasets", d)
        olds = [rs for rs in rss if new_rs is None or rs["metadata"]["uid"] != new_rs["metadata"]["uid"]]
        if new_rs is not None and self._reconcile_new(d, new_rs, rss):
            self._sync_status(d, new_rs, self.mgr.cache.owned("replicasets", d))
            return
        if self._reconcile_old(d, new_rs, olds, rss):
            self._sync_status(d, new_rs, self.mgr.cache.owned("replicasets", d))
            return
        rss = self.mgr.cache.owned("replicasets", d)
        status = self._calculate_status(d, new_rs, rss)
        if deployment_complete(d, status):
            self._cleanup(d, new_rs, rss)
        self._sync_status(d, new_rs, self.mgr.cache.owned("replicasets", d))

    def _recreate(self, d: Obj, rss: list[Obj]) -> None:
        new_rs = self._new_rs(d, rss, create=False)
        olds = [rs for rs in rss if new_rs is None or rs["metadata"]["uid"] != new_rs["metadata"]["uid"]]
        scaled = False
        for rs in olds:
            if _replicas(rs) > 0:
                self._scale(d, rs, 0)
                scaled = True
        if scaled:
            self._sync_status(d, new_rs, self.mgr.cache.owned("replicasets", d))
            return
        old_pods = [p for rs in olds for p in self.mgr.cache.owned("pods", rs) if not logic.pod_terminal(p)]
        if old_pods:  # Recreate waits until the old pods are gone (or finished)
            self._sync_status(d, new_rs, self.mgr.cache.owned("replicasets", d))
            return
        if new_rs is None:
            new_rs = self._new_rs(d, self.mgr.cache.owned("replicasets", d), create=True)
        if new_rs is not None and _replicas(new_rs) != _replicas(d):
            self._scale(d, new_rs, _replicas(d))
        rss = self.mgr.cache.owned("replicasets", d)
        if deployment_complete(d, self._calculate_status(d, new_rs, rss)):
            self._cleanup(d, new_rs, rss)
        self._sync_status(d, new_rs, self.mgr.cache.owned("replicasets", d))

    # ---- the new ReplicaSet -----------------------------------------------------------------------------------

    def _new_rs(self, d: Obj, rss: list[Obj], *, create: bool) -> Obj | None:
        """The new ReplicaSet, its revision brought up to date; created when asked and absent."""
        existing = self._find_new(d, rss)
        max_old = max((_revision(rs) for rs in rss if existing is None or rs is not existing), default=0)
        if existing is not None:
            want = max_old + 1 if _revision(existing) <= max_old else _revision(existing)
            # only the revision: desired/max-replicas change when the ReplicaSet is scaled (proportional scaling
            # reads them as the sizes it was last scaled for)
            annotations = {**(existing["metadata"].get("annotations") or {}), logic.REVISION: str(want)}
            if annotations != (existing["metadata"].get("annotations") or {}):
                patched = self.mgr.api.patch("replicasets", existing["metadata"]["namespace"],
                                             existing["metadata"]["name"], {"metadata": {"annotations": annotations}})
                existing = self.mgr.wrote("replicasets", patched)
            self._set_deployment_revision(d, want)
            return existing
        if not create:
            return None
        return self._create_new(d, max_old + 1)

    def _rs_annotations(self, d: Obj, rs: Obj, revision: int) -> dict[str, str]:
        annotations = dict(rs["metadata"].get("annotations") or {})
        annotations[logic.REVISION] = str(revision)
        annotations[logic.DESIRED_REPLICAS] = str(_replicas(d))
        annotations[logic.MAX_REPLICAS] = str(_replicas(d) + logic.max_surge(d))
        return annotations

    def _create_new(self, d: Obj, revision: int) -> Obj | None:
        spec, meta = d.get("spec") or {}, d["metadata"]
        collisions = (d.get("status") or {}).get("collisionCount")
        template = copy.deepcopy(spec.get("template") or {})
        pod_hash = logic.template_hash(template, collisions)
        template.setdefault("metadata", {}).setdefault("labels", {})[logic.POD_TEMPLATE_HASH] = pod_hash
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[logic.POD_TEMPLATE_HASH] = pod_hash
        if (spec.get("strategy") or {}).get("type") == "Recreate":
            replicas = _replicas(d)
        else:
            rss = self.mgr.cache.owned("replicasets", d)
            replicas = logic.new_rs_replicas(_replicas(d), logic.max_surge(d), sum(_replicas(r) for r in rss), 0)
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": f"{meta['name']}-{pod_hash}", "namespace": meta["namespace"],
                           "labels": dict(template["metadata"]["labels"]),
                           "annotations": {**(meta.get("annotations") or {}), logic.REVISION: str(revision),
                                           logic.DESIRED_REPLICAS: str(_replicas(d)),
                                           logic.MAX_REPLICAS: str(_replicas(d) + logic.max_surge(d))},
                           "ownerReferences": [logic.controller_ref(d)]},
              "spec": {"replicas": replicas, "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                       "selector": selector, "template": template}}
        rs["metadata"]["annotations"].pop(logic.REVISION + "-history", None)
        rs["metadata"]["annotations"].pop("kubectl.kubernetes.io/last-applied-configuration", None)
        try:
            created = self.mgr.wrote("replicasets", self.mgr.api.create("replicasets", meta["namespace"], rs))
        except ApiException as exc:
            if exc.status != 409:
                raise
            other = self.mgr.api.get("replicasets", meta["namespace"], rs["metadata"]["name"])
            if other is not None and logic.owned_by(other, d) and logic.equal_ignore_hash(
                    (other.get("spec") or {}).get("template") or {}, spec.get("template") or {}):
                return self.mgr.wrote("replicasets", other)
            # a hash collision: count it and try another name on the next sync (upstream's collisionCount)
            status = copy.deepcopy(d.get("status") or {})
            status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
            self.mgr.wrote("deployments", self.mgr.api.replace("deployments", {**d, "status": status}, status=True))
            raise
        if replicas > 0:
            self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                f"Scaled up replica set {created['metadata']['name']} from 0 to {replicas}")
        self._set_deployment_revision(d, revision)
        status = copy.deepcopy(d.get("status") or {})
        logic.set_condition(status, self._condition("Progressing", "True", "NewReplicaSetCreated",
                                                    f'Created new replica set "{created["metadata"]["name"]}"'))
        d = self.mgr.cache.get("deployments", meta["namespace"], meta["name"]) or d
        self.mgr.wrote("deployments", self.mgr.api.replace("deployments", {**d, "status": status}, status=True))
        return created

    def _set_deployment_revision(self, d: Obj, revision: int) -> None:
        current = self.mgr.cache.get("deployments", d["metadata"]["namespace"], d["metadata"]["name"]) or d
        if (current["metadata"].get("annotations") or {}).get(logic.REVISION) == str(revision):
            return
        patched = self.mgr.api.patch("deployments", d["metadata"]["namespace"], d["metadata"]["name"],
                                     {"metadata": {"annotations": {logic.REVISION: str(revision)}}})
        self.mgr.wrote("deployments", patched)

    # ---- scaling ----------------------------------------------------------------------------------------------

    def _scale(self, d: Obj, rs: Obj, replicas: int) -> None:
        before = _replicas(rs)
        new = copy.deepcopy(rs)
        new["spec"]["replicas"] = replicas
        new["metadata"]["annotations"] = self._rs_annotations(d, rs, _revision(rs))
        self.mgr.wrote("replicasets", self.mgr.api.replace("replicasets", new))
        if before != replicas:
            verb = "up" if replicas > before else "down"
            self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                f"Scaled {verb} replica set {rs['metadata']['name']} from {before} to {replicas}")

    @staticmethod
    def _scaling_event(d: Obj, rss: list[Obj]) -> bool:
        """Upstream ``isScalingEvent``: an active ReplicaSet was sized for another replica count."""
        for rs in rss:
            desired = (rs["metadata"].get("annotations") or {}).get(logic.DESIRED_REPLICAS)
            if _replicas(rs) > 0 and desired is not None and desired != str(_replicas(d)):
                return True
        return False

    def _scale_all(self, d: Obj, new_rs: Obj | None, rss: list[Obj]) -> None:
        """Upstream ``dc.scale``: one active ReplicaSet follows the Deployment's size; several share it in
        proportion (``logic.proportional_sizes``), the surge included."""
        active = [r for r in rss if _replicas(r) > 0]
        target = active[0] if len(active) == 1 else None
        if not active:
            target = new_rs or (max(rss, key=_created) if rss else None)
        if target is not None:
            if _replicas(target) != _replicas(d):
                self._scale(d, target, _replicas(d))
            return
        if new_rs is not None and _replicas(new_rs) == _replicas(d) \
                and _status_count(new_rs, "availableReplicas") == _replicas(d):  # saturated: the old ones go
            for rs in active:
                if rs["metadata"]["uid"] != new_rs["metadata"]["uid"]:
                    self._scale(d, rs, 0)
            return
        fallback = _status_count(d, "replicas") or None
        rows = []
        for rs in active:
            annotated = (rs["metadata"].get("annotations") or {}).get(logic.MAX_REPLICAS)
            rows.append((rs["metadata"]["name"], _replicas(rs), int(annotated) if annotated else fallback,
                         _created(rs)[0]))
        sizes = logic.proportional_sizes(_replicas(d), logic.max_surge(d), rows)
        for rs in active:
            self._scale(d, rs, sizes[rs["metadata"]["name"]])

    def _paused_condition(self, d: Obj) -> None:
        """Upstream ``checkPausedConditions``: Progressing Unknown ``DeploymentPaused`` / ``DeploymentResumed``."""
        if (d.get("spec") or {}).get("progressDeadlineSeconds") is None:
            return
        status = copy.deepcopy(d.get("status") or {})
        cond = logic.get_condition(status, "Progressing")
        if cond is not None and cond.get("reason") == "ProgressDeadlineExceeded":
            return
        paused_cond = cond is not None and cond.get("reason") == "DeploymentPaused"
        if (d.get("spec") or {}).get("paused") and not paused_cond:
            logic.set_condition(status, self._condition("Progressing", "Unknown", "DeploymentPaused",
                                                        "Deployment is paused"))
        elif not (d.get("spec") or {}).get("paused") and paused_cond:
            logic.set_condition(status, self._condition("Progressing", "Unknown", "DeploymentResumed",
                                                        "Deployment is resumed"))
        else:
            return
        self.mgr.wrote("deployments", self.mgr.api.replace("deployments", {**d, "status": status}, status=True))

    def _reconcile_new(self, d: Obj, new_rs: Obj, rss: list[Obj]) -> bool:
        want, have = _replicas(d), _replicas(new_rs)
        if have == want:
            return False
        if have > want:
            self._scale(d, new_rs, want)
            return True
        target = logic.new_rs_replicas(want, logic.max_surge(d), sum(_replicas(r) for r in rss), have)
        if target == have:
            return False
        self._scale(d, new_rs, target)
        return True

    def _reconcile_old(self, d: Obj, new_rs: Obj | None, olds: list[Obj], rss: list[Obj]) -> bool:
        """Scale old ReplicaSets down as far as ``maxUnavailable`` allows (upstream ``reconcileOldReplicaSets``)."""
        if sum(_replicas(r) for r in olds) == 0:
            return False
        all_pods = sum(_replicas(r) for r in rss)
        min_available = _replicas(d) - logic.max_unavailable(d)
        new_unavailable = (_replicas(new_rs) - _status_count(new_rs, "availableReplicas")) if new_rs else 0
        budget = all_pods - min_available - new_unavailable
        if budget <= 0:
            return False
        scaled = 0
        for rs in sorted(olds, key=_created):  # unhealthy replicas first: they cost no availability
            if scaled >= budget or _replicas(rs) == 0:
                continue
            unhealthy = _replicas(rs) - _status_count(rs, "availableReplicas")
            if unhealthy <= 0:
                continue
            down = min(budget - scaled, unhealthy)
            self._scale(d, rs, _replicas(rs) - down)
            scaled += down
        rss = self.mgr.cache.owned("replicasets", d)
        available = sum(_status_count(r, "availableReplicas") for r in rss)
        room = available - min_available
        if room > 0:
            done = 0
            for rs in sorted((r for r in rss if new_rs is None or r["metadata"]["uid"] != new_rs["metadata"]["uid"]),
                             key=_created):
                if done >= room or _replicas(rs) == 0:
                    continue
                down = min(_replicas(rs), room - done)
                self._scale(d, rs, _replicas(rs) - down)
                done += down
            scaled += done
        return scaled > 0

    def _cleanup(self, d: Obj, new_rs: Obj | None, rss: list[Obj]) -> None:
        """Delete the oldest empty old ReplicaSets beyond ``revisionHistoryLimit``."""
        limit = (d.get("spec") or {}).get("revisionHistoryLimit")
        if limit is None:
            return
        olds = [r for r in rss if (new_rs is None or r["metadata"]["uid"] != new_rs["metadata"]["uid"])
                and not r["metadata"].get("deletionTimestamp")]
        excess = len(olds) - int(limit)
        for rs in sorted(olds, key=lambda r: (_revision(r), _created(r))):
            if excess <= 0:
                break
            if _replicas(rs) != 0 or _status_count(rs, "replicas") != 0:
                continue
            try:
                self.mgr.api.delete("replicasets", rs["metadata"]["namespace"], rs["metadata"]["name"],
                                    uid=rs["metadata"]["uid"])
            except ApiException as exc:
                if exc.status not in (404, 409):
                    raise
            self.mgr.cache.remove("replicasets", rs)
            excess -= 1

    # ---- status -----------------------------------------------------------------------------------------------

    @staticmethod
    def _condition(type_: str, status: str, reason: str, message: str) -> Obj:
        now = rfc3339()
        return {"type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now, "reason": reason,
                "message": message}

    def _calculate_status(self, d: Obj, new_rs: Obj | None, rss: list[Obj]) -> Obj:
        status = copy.deepcopy(d.get("status") or {})
        available = sum(_status_count(r, "availableReplicas") for r in rss)
        status.update({
            "observedGeneration": d["metadata"].get("generation", 0),
            "replicas": sum(_status_count(r, "replicas") for r in rss),
            "updatedReplicas": _status_count(new_rs, "replicas") if new_rs else 0,
            "readyReplicas": sum(_status_count(r, "readyReplicas") for r in rss),
            "availableReplicas": available,
            "unavailableReplicas": max(0, _replicas(d) - available)})
        if available >= _replicas(d) - logic.max_unavailable(d):
            cond = self._condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum "
                                   "availability.")
        else:
            cond = self._condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have "
                                   "minimum availability.")
        logic.set_condition(status, cond)
        for key in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"):
            if not status[key]:
                del status[key]  # omitempty
        return status

    def _sync_status(self, d: Obj, new_rs: Obj | None, rss: list[Obj]) -> None:
        d = self.mgr.cache.get("deployments", d["metadata"]["namespace"], d["metadata"]["name"]) or d
        status = self._calculate_status(d, new_rs, rss)
        deadline = (d.get("spec") or {}).get("progressDeadlineSeconds")
        requeue: float | None = None
        if deadline is not None and not (d.get("spec") or {}).get("paused"):
            current = logic.get_condition(status, "Progressing")
            name = new_rs["metadata"]["name"] if new_rs else ""
            old_status = d.get("status") or {}
            if new_rs is not None and deployment_complete(d, status):
                logic.set_condition(status, self._condition(
                    "Progressing", "True", "NewReplicaSetAvailable", f'ReplicaSet "{name}" has successfully '
                                                                     "progressed."))
            elif new_rs is not None and deployment_progressing(old_status, status):
                cond = self._condition("Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is '
                                                                                     "progressing.")
                if current is not None:  # progress moves lastUpdateTime even with the same reason
                    if current.get("status") == "True":
                        cond["lastTransitionTime"] = current.get("lastTransitionTime", cond["lastTransitionTime"])
                    logic.remove_condition(status, "Progressing")
                logic.set_condition(status, cond)
            elif new_rs is not None and current is None:
                logic.set_condition(status, self._condition("Progressing", "True", "FoundNewReplicaSet",
                                                            f'Found new replica set "{name}"'))
            elif new_rs is not None and current is not None and current.get("status") == "True" \
                    and current.get("reason") != "NewReplicaSetAvailable":
                since = logic.parse_time(current.get("lastUpdateTime")) or time.time()
                left = since + int(deadline) - time.time()
                if left <= 0:
                    logic.set_condition(status, self._condition(
                        "Progressing", "False", "ProgressDeadlineExceeded", f'ReplicaSet "{name}" has timed out '
                                                                             "progressing."))
                else:
                    requeue = left + 0.5
        if status != (d.get("status") or {}):
            self.mgr.wrote("deployments", self.mgr.api.replace("deployments", {**d, "status": status}, status=True))
        if requeue is not None:
            self.mgr.enqueue("Deployment", d["metadata"]["namespace"], d["metadata"]["name"], after=requeue)
