"""The embedded kube-controller-manager: informers, a shared cache, one work queue and the controllers.

Informers (the scheduler's list-then-watch ``Informer``) keep a cache of pods, ReplicaSets, Deployments, Jobs,
DaemonSets, CronJobs, StatefulSets, nodes, ResourceClaims, ResourceClaimTemplates, ResourceSlices and
DeviceTaintRules (the device taint eviction controller's), ResourceQuotas and namespaces (a node change requeues
every DaemonSet). Every change enqueues the objects it concerns (the object, its controller owner, the
dependents of a deleted owner), and one worker thread runs each key's controller — so controllers never race
each other, and a key that changes while queued is synced once. Writes go through to the cache from the API's
answers, so a sync that just created pods sees them on the next pass (what upstream's "expectations" achieve).
Keys that must be looked at again later (minReadySeconds, progress deadlines, Job back-off) are requeued with a
delay.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.selectors import selector_matches
from mockgpu.control.controllers.api import ControllerApi
from mockgpu.control.controllers.base import (  # noqa: F401  (re-exported: tests and callers import them from here)
    DEPENDENT_PLURALS,
    KINDS,
    OWNER_KINDS,
    WATCHED,
    Cache,
    Key,
    Obj,
    WorkQueue,
    node_fingerprint,
)
from mockgpu.control.controllers.clock import Clock, SystemClock
from mockgpu.control.controllers.cronjob import CronJobController
from mockgpu.control.controllers.daemonset import DaemonSetController
from mockgpu.control.controllers.deployment import DeploymentController
from mockgpu.control.controllers.devicetainteviction import RULE, SYNC_ALL, DeviceTaintEvictionController
from mockgpu.control.controllers.gc import GarbageCollector
from mockgpu.control.controllers.job import JobController
from mockgpu.control.controllers.logic import JOB_TRACKING_FINALIZER, claim_decision, controller_of, controller_ref
from mockgpu.control.controllers.namespace import NamespaceController
from mockgpu.control.controllers.replicaset import ReplicaSetController, ReplicationControllerController
from mockgpu.control.controllers.resourceclaim import ResourceClaimController
from mockgpu.control.controllers.resourcequota import ResourceQuotaController
from mockgpu.control.controllers.statefulset import StatefulSetController
from mockgpu.control.scheduler.informer import Informer

log = logging.getLogger("mockgpu.controllers")
class ControllerManager:
    """Runs the ReplicaSet, ReplicationController, Deployment, Job, DaemonSet, CronJob, StatefulSet, resource
    claim, device taint eviction, resource quota, namespace and garbage-collector controllers
    against one cluster. ``clock`` is the CronJob controller's notion of now (tests pass a ``FakeClock`` and
    drive it)."""

    def __init__(self, api_client: Any, *, job_backoff: float = 10.0, clock: Clock | None = None) -> None:
        self.api = ControllerApi(api_client)
        self.cache = Cache()
        self.queue = WorkQueue()
        self.replicasets = ReplicaSetController(self)
        self.replicationcontrollers = ReplicationControllerController(self)
        self.deployments = DeploymentController(self)
        self.jobs = JobController(self, backoff=job_backoff)
        self.daemonsets = DaemonSetController(self)
        self.cronjobs = CronJobController(self, clock or SystemClock())
        self.statefulsets = StatefulSetController(self)
        self.resourceclaims = ResourceClaimController(self)
        self.devicetaints = DeviceTaintEvictionController(self)
        self.resourcequotas = ResourceQuotaController(self)
        self.namespaces = NamespaceController(self)
        self.gc = GarbageCollector(self)
        self._sync: dict[str, Callable[[str, str], None]] = {
            "ReplicaSet": self.replicasets.sync, "ReplicationController": self.replicationcontrollers.sync,
            "Deployment": self.deployments.sync, "Job": self.jobs.sync,
            "DaemonSet": self.daemonsets.sync, "CronJob": self.cronjobs.sync,
            "StatefulSet": self.statefulsets.sync, "Pod": self.resourceclaims.sync_pod,
            "ResourceClaim": self.resourceclaims.sync_claim, SYNC_ALL: self.devicetaints.sync,
            RULE: self.devicetaints.sync_rule, "ResourceQuota": self.resourcequotas.sync,
            "Namespace": self.namespaces.sync}
        self.informers = {p: Informer(self.api, p, self._on_event) for p in WATCHED}
        self._worker = threading.Thread(target=self._run, name="mockgpu-controllers", daemon=True)
        self.failures: dict[Key, int] = {}

    # ---- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> ControllerManager:
        for inf in self.informers.values():
            inf.start()
        self._worker.start()
        return self

    def wait_synced(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        return all(inf.synced.wait(max(0.0, deadline - time.monotonic())) for inf in self.informers.values())

    @property
    def synced(self) -> bool:
        return all(inf.synced.is_set() for inf in self.informers.values())

    def stop(self) -> None:
        self.queue.close()
        for inf in self.informers.values():
            inf.stop()
        if self._worker.is_alive():
            self._worker.join(5)

    # ---- events -> keys ---------------------------------------------------------------------------------------

    def _on_event(self, plural: str, typ: str, data: Any) -> None:
        if typ == "SYNC":
            for gone in self.cache.sync(plural, data):
                self._route(plural, "DELETED", gone)
            for obj in data:
                self._route(plural, "ADDED", obj)
            return
        old = self.cache.get(plural, *Cache._key(data)) if plural in ("nodes", "devicetaintrules") and \
            typ == "MODIFIED" else None
        if typ == "DELETED":
            self.cache.remove(plural, data)
        elif not self.cache.put(plural, data):
            return
        if plural == "nodes" and old is not None and node_fingerprint(old) == node_fingerprint(data):
            return  # a heartbeat: nothing a DaemonSet decides on changed (upstream ``shouldIgnoreNodeUpdate``)
        self._route(plural, typ, data, old)

    def _route(self, plural: str, typ: str, obj: Obj, old: Obj | None = None) -> None:
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace") or "", meta.get("name", "")
        if plural in ("pods", "namespaces"):
            self.namespaces.route(plural, typ, obj)
            if plural == "namespaces":
                if meta.get("deletionTimestamp") and typ != "DELETED" and meta.get("finalizers"):
                    self.queue.add(("gc/namespaces", "", name))  # an orphan/foreground finalizer to release
                return
        if plural in ("pods", "resourcequotas"):
            self.resourcequotas.route(plural, typ, obj)
            if plural == "resourcequotas":
                return
        if plural in ("pods", "resourceclaims", "resourceslices", "devicetaintrules"):
            self.devicetaints.route(plural, typ, obj, old)
            if plural in ("resourceslices", "devicetaintrules"):
                return
        if plural in ("pods", "resourceclaims", "resourceclaimtemplates"):
            self.resourceclaims.route(plural, typ, obj)
            if plural == "resourceclaimtemplates":
                return
        if plural == "nodes":  # a node joined, left or changed: every DaemonSet looks again
            for ds in self.cache.list("daemonsets"):
                self.queue.add(("DaemonSet", ds["metadata"].get("namespace") or "", ds["metadata"]["name"]))
            return
        kind = KINDS.get(plural)
        if kind:
            self.queue.add((kind, ns, name))
            if meta.get("deletionTimestamp") and typ != "DELETED":  # an orphan/foreground finalizer to release
                self.queue.add((f"gc/{plural}", ns, name))
            if typ == "DELETED" or meta.get("deletionTimestamp"):
                for dep_plural, dep in self.cache.dependents(ns, meta.get("uid", "")):
                    self.queue.add((f"gc/{dep_plural}", ns, dep["metadata"]["name"]))
        if typ == "DELETED":  # an owner waiting for its dependents may go now
            for owner_ref in meta.get("ownerReferences") or []:
                if owner_ref.get("kind") in OWNER_KINDS:
                    self.queue.add((f"gc/{OWNER_KINDS[owner_ref['kind']]}", ns, owner_ref.get("name", "")))
        ref = controller_of(obj)
        if plural == "pods" and JOB_TRACKING_FINALIZER in (meta.get("finalizers") or []) and (
                ref is None or ref.get("kind") != "Job" or self.cache.get("jobs", ns, ref.get("name", "")) is None):
            self.queue.add(("Job", ns, ""))  # a tracked pod without its Job: release the finalizer
        if ref is not None and ref.get("kind") in OWNER_KINDS:
            self.queue.add((ref["kind"], ns, ref["name"]))
            if plural == "pods" and ref["kind"] == "ReplicaSet" and (
                    typ == "DELETED" or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")):
                rs = self.cache.get("replicasets", ns, ref["name"])  # a Recreate rollout waits for old pods to go
                owner = controller_of(rs) if rs is not None else None
                if owner is not None and owner.get("kind") == "Deployment":
                    self.queue.add(("Deployment", ns, owner["name"]))
        if meta.get("ownerReferences") and plural in DEPENDENT_PLURALS:
            self.queue.add((f"gc/{plural}", ns, name))

    def enqueue(self, kind: str, ns: str, name: str, after: float = 0.0) -> None:
        self.queue.add((kind, ns, name), after)

    # ---- the worker -------------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            if not self.synced:  # act only on a complete picture of the cluster
                self.queue.add(key, 0.1)
                continue
            what, ns, name = key
            try:
                if what.startswith("gc/"):
                    self.gc.sync(what[3:], ns, name)
                else:
                    self._sync[what](ns, name)
                self.failures.pop(key, None)
            except ApiException as exc:
                if exc.status == 404:  # what the sync wrote to is gone; its deletion event brings the next sync
                    self.failures.pop(key, None)
                    continue
                n = self.failures[key] = self.failures.get(key, 0) + 1
                if exc.status != 409:
                    log.warning("sync %s %s/%s failed: %s %s", what, ns, name, exc.status, exc.reason)
                self.queue.add(key, min(0.05 * 2 ** n, 5.0))
            except Exception:
                n = self.failures[key] = self.failures.get(key, 0) + 1
                log.exception("sync %s %s/%s failed", what, ns, name)
                self.queue.add(key, min(0.05 * 2 ** n, 5.0))

    # ---- helpers for the controllers ----

    def claim(self, plural: str, owner: Obj, selector: Any = None) -> list[Obj]:
        """What ``owner`` controls after claiming (upstream ``ClaimPods``/``ClaimReplicaSets``): orphans that
        match its selector (``selector``, else ``spec.selector``) are adopted, owned objects that no longer match
        are released."""
        if selector is None:
            selector = (owner.get("spec") or {}).get("selector")
        ns = owner["metadata"].get("namespace") or ""
        out = []
        for obj in self.cache.list(plural, ns):
            matches = selector_matches(selector, (obj.get("metadata") or {}).get("labels"))
            decision = claim_decision(obj, owner, matches)
            if decision == "keep":
                out.append(obj)
            elif decision in ("adopt", "release"):
                refs = list(obj["metadata"].get("ownerReferences") or [])
                uid = owner["metadata"].get("uid")
                refs = refs + [controller_ref(owner)] if decision == "adopt" else [r for r in refs
                                                                                   if r.get("uid") != uid]
                patch = {"metadata": {"ownerReferences": refs or None,
                                      "resourceVersion": obj["metadata"].get("resourceVersion")}}
                try:
                    new = self.wrote(plural, self.api.patch(plural, ns, obj["metadata"]["name"], patch))
                except ApiException as exc:
                    if exc.status in (404, 409):  # gone or changed: the next sync looks again
                        continue
                    raise
                if decision == "adopt":
                    out.append(new)
        return out

    # ---- writes -------------------------------------------------------------------------------------------------

    def wrote(self, plural: str, obj: Any) -> Any:
        """Record an object the API returned from a write (so the next sync sees it), and return it."""
        if isinstance(obj, dict) and obj.get("kind") not in (None, "Status") and plural in self.cache.objs:
            self.cache.put(plural, obj)
        return obj
