"""The resource quota controller: ``status.hard`` from ``spec.hard`` and ``status.used`` from what the namespace's
objects use, as kube-controller-manager's ``pkg/controller/resourcequota`` (``syncResourceQuota``) does.

A quota is synced when it is created or its ``spec.hard`` changes, and when a pod of its namespace is deleted or
stops counting (upstream's replenishment controller); the admission plugin charges new objects itself.
Usage per resource is the evaluators' (``control/quota``): pods for ``pods``, ``count/pods``, compute and
``requests.<extended>`` resources; object counts for ``count/<resource>`` and the legacy names, listed through
the API (the group's preferred version from discovery). Used values of resources no evaluator tracks
(``limits.nvidia.com/gpu``) are left out, as upstream. The status is written only when it changed.
Every quota is recounted every ``FULL_RESYNC`` seconds, as upstream's sync period. Simplified: a quota that
counts objects other than pods is recounted every ``OBJECT_COUNT_RESYNC`` seconds instead of on each deletion of
such an object (upstream's quota monitors watch every counted resource).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException

from mockgpu.control.controllers.base import Manager
from mockgpu.control.quota import evaluators
from mockgpu.control.quota.evaluators import Evaluator
from mockgpu.control.quota.resources import mask, parse_list, to_raw

Obj = dict[str, Any]
KIND = "ResourceQuota"
OBJECT_COUNT_RESYNC = 5.0
FULL_RESYNC = 300.0  # upstream's --resource-quota-sync-period default (5m)


def evaluators_for(hard: list[str]) -> list[Evaluator]:
    """The evaluators that track a resource of ``hard``: pods, and one object count per counted resource."""
    out: dict[tuple[str, str], Evaluator] = {}
    for name in hard:
        if evaluators.PODS.matching([name]):
            out[("", "pods")] = evaluators.PODS
        elif name.startswith("count/"):
            resource, _, group = name[len("count/"):].partition(".")
            out[(group, resource)] = evaluators.evaluator_for(group, resource)
        elif ("", name) in evaluators.LEGACY_COUNT_NAMES:
            out[("", name)] = evaluators.evaluator_for("", name)
    return list(out.values())


class ResourceQuotaController:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self._versions: dict[str, str | None] = {}  # group → preferred version (None: not served)
        self._due: dict[tuple[str, str], float] = {}  # (ns, name) → when its pending resync runs

    def route(self, plural: str, typ: str, obj: Obj) -> None:
        """As upstream's event handlers: a quota whose ``spec.hard`` is not yet its ``status.hard`` (new, or
        changed), and every quota of the namespace when a pod is deleted or stops counting (replenishment).
        Status updates (the admission plugin's charges) and new pods do not trigger a recount."""
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or ""
        if plural == "resourcequotas":
            status = obj.get("status") or {}
            if typ != "DELETED" and (status.get("used") is None or to_raw(parse_list(status.get("hard"))) !=
                                     to_raw(parse_list((obj.get("spec") or {}).get("hard")))):
                self.mgr.enqueue(KIND, ns, meta.get("name", ""))
            return
        if typ == "DELETED" or meta.get("deletionTimestamp") or \
                not evaluators.counts_against_quota(obj, datetime.now(UTC)):
            for quota in self.mgr.cache.list("resourcequotas", ns):
                self.mgr.enqueue(KIND, ns, quota["metadata"]["name"])

    def sync(self, ns: str, name: str) -> None:
        """Recount from a fresh read: the quota first, then the objects, and write the status with the quota's
        resourceVersion, so that a pod admitted (and charged) after the read makes the write a 409 and the
        manager syncs again, rather than the recount forgetting it."""
        quota = self.mgr.api.get("resourcequotas", ns, name)
        if quota is None or (quota.get("metadata") or {}).get("deletionTimestamp"):
            self._due.pop((ns, name), None)
            return
        status = quota.get("status") or {}
        hard = parse_list((quota.get("spec") or {}).get("hard"))
        used = parse_list(status.get("used"))
        now = datetime.now(UTC)
        counts_objects = False
        for ev in evaluators_for(list(hard)):
            counts_objects = counts_objects or ev is not evaluators.PODS
            objects = self._list(ev.group, ev.resource, ns)
            if objects is not None:
                used.update(evaluators.usage_of(quota, ev, objects, now))
        new_status = {"hard": to_raw(hard), "used": to_raw(mask(used, hard))}
        self._resync(ns, name, OBJECT_COUNT_RESYNC if counts_objects else FULL_RESYNC)
        if status.get("hard") is not None and status.get("used") is not None and \
                to_raw(parse_list(status.get("hard"))) == new_status["hard"] and \
                to_raw(parse_list(status.get("used"))) == new_status["used"]:
            return
        body = {**quota, "status": new_status}
        self.mgr.wrote("resourcequotas", self.mgr.api.replace("resourcequotas", body, status=True))

    def _resync(self, ns: str, name: str, after: float) -> None:
        """One pending resync per quota, however many event-driven syncs ran meanwhile."""
        now = time.monotonic()
        due = self._due.get((ns, name))
        if due is not None and due > now:
            return
        self._due[(ns, name)] = now + after
        self.mgr.enqueue(KIND, ns, name, after)

    def _list(self, group: str, resource: str, ns: str) -> list[Obj] | None:
        """The namespace's objects of a resource (None when the server does not serve it)."""
        if group not in self._versions:
            try:
                self._versions[group] = "v1" if not group else \
                    self.mgr.api.request("GET", f"/apis/{quote(group)}")["preferredVersion"]["version"]
            except (ApiException, KeyError, TypeError):
                self._versions[group] = None
        version = self._versions[group]
        if version is None:
            return None
        prefix = "/api/v1" if not group else f"/apis/{quote(group)}/{quote(version)}"
        try:
            out = self.mgr.api.request("GET", f"{prefix}/namespaces/{quote(ns, safe='')}/{quote(resource)}")
        except ApiException as exc:
            if exc.status in (404, 405):
                return None
            raise
        return list(out.get("items") or [])
