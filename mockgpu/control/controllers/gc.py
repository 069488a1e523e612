"""The garbage collector: dependents follow their owners (``metadata.ownerReferences``).

As upstream's ``garbagecollector`` for the kinds the controllers watch (ReplicaSets, Jobs, pods and ResourceClaims
as dependents; Deployments, ReplicaSets, ReplicationControllers, Jobs, DaemonSets, CronJobs, StatefulSets and pods
as owners): a
dependent whose owners are all gone is deleted (background cascading; an absent owner is confirmed with a live
GET before anything is deleted); references to owners that are gone, while others remain, are removed from the
dependent. An owner deleted with ``propagationPolicy=Foreground`` keeps the ``foregroundDeletion`` finalizer
until its ``blockOwnerDeletion`` dependents are gone (they are deleted in the foreground too); one deleted with
``Orphan`` keeps the ``orphan`` finalizer until its dependents no longer reference it. A namespace deleted so has
no dependents here (namespaced objects owned by a Namespace are not tracked): its finalizer is released at once.
Simplified: owners of other kinds (ConfigMaps, Nodes, ...) are never looked up, so their dependents are never
collected.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.control.controllers.base import DEPENDENT_PLURALS, OWNER_KINDS, Manager

Obj = dict[str, Any]
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
JSON_PATCH = "application/json-patch+json"


class GarbageCollector:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr

    def _owner(self, ns: str, ref: Obj) -> Obj | None:
        """The live owner a reference names (cache first, then the API), or None when it is gone."""
        plural = OWNER_KINDS[ref["kind"]]
        owner = self.mgr.cache.get(plural, ns, ref.get("name", ""))
        if owner is not None and owner["metadata"].get("uid") == ref.get("uid"):
            return owner
        live = self.mgr.api.get(plural, ns, ref.get("name", ""))
        if live is not None and live["metadata"].get("uid") == ref.get("uid"):
            return self.mgr.wrote(plural, live)
        return None

    def sync(self, plural: str, ns: str, name: str) -> None:
        if plural in OWNER_KINDS.values() or plural == "namespaces":
            self._sync_owner(plural, ns, name)
        obj = self.mgr.cache.get(plural, ns, name)
        if obj is None or plural not in DEPENDENT_PLURALS:
            return
        refs = obj["metadata"].get("ownerReferences") or []
        gone, foreground, orphaning, alive = [], [], [], []
        for ref in refs:
            if ref.get("kind") not in OWNER_KINDS:
                alive.append(ref)
                continue
            owner = self._owner(ns, ref)
            finalizers = (owner or {}).get("metadata", {}).get("finalizers") or []
            if owner is None:
                gone.append(ref)
            elif owner["metadata"].get("deletionTimestamp") and ORPHAN in finalizers:
                orphaning.append(ref)
            elif owner["metadata"].get("deletionTimestamp") and FOREGROUND in finalizers:
                foreground.append(ref)
            else:
                alive.append(ref)
        if not alive and not orphaning and (gone or foreground):
            if obj["metadata"].get("deletionTimestamp"):
                return
            policy = "Foreground" if foreground else "Background"
            try:
                self.mgr.api.delete(plural, ns, name, uid=obj["metadata"].get("uid"), propagation=policy)
            except ApiException as exc:
                if exc.status not in (404, 409):
                    raise
            return
        # with an owner that stays, references to owners gone or waiting for their dependents are removed
        # (attemptToDeleteItem's dangling and waitingForDependentsDeletion), and those owners may then go
        waiting = foreground if alive else []
        drop = {r.get("uid") for r in gone + orphaning + waiting}
        if drop:
            keep = [r for r in refs if r.get("uid") not in drop]
            # an empty list is no list (omitempty): the field goes, as upstream's patch leaves it
            ops = [{"op": "test", "path": "/metadata/ownerReferences", "value": refs},
                   {"op": "replace", "path": "/metadata/ownerReferences", "value": keep} if keep else
                   {"op": "remove", "path": "/metadata/ownerReferences"}]
            self.mgr.wrote(plural, self.mgr.api.patch(plural, ns, name, ops, JSON_PATCH))
            for ref in orphaning + waiting:  # the orphaning or foreground-deleting owner may now drop its finalizer
                self.mgr.queue.add((f"gc/{OWNER_KINDS[ref['kind']]}", ns, ref.get("name", "")))

    def _sync_owner(self, plural: str, ns: str, name: str) -> None:
        """Release an owner's ``orphan`` or ``foregroundDeletion`` finalizer once its dependents allow it."""
        owner = self.mgr.cache.get(plural, ns, name)
        if owner is None or not owner["metadata"].get("deletionTimestamp"):
            return
        finalizers = list(owner["metadata"].get("finalizers") or [])
        uid = owner["metadata"].get("uid", "")
        deps = self.mgr.cache.dependents(ns, uid)
        done = None
        if ORPHAN in finalizers:
            for dep_plural, dep in deps:
                self.mgr.queue.add((f"gc/{dep_plural}", ns, dep["metadata"]["name"]))
            done = ORPHAN if not deps else None
        elif FOREGROUND in finalizers:
            blocking = [(p, d) for p, d in deps if any(r.get("uid") == uid and r.get("blockOwnerDeletion")
                                                       for r in d["metadata"].get("ownerReferences") or [])]
            for dep_plural, dep in blocking:
                self.mgr.queue.add((f"gc/{dep_plural}", ns, dep["metadata"]["name"]))
            done = FOREGROUND if not blocking else None
        if done is None:
            return
        ops = [{"op": "test", "path": "/metadata/finalizers", "value": finalizers},
               {"op": "replace", "path": "/metadata/finalizers", "value": [f for f in finalizers if f != done]}]
        try:
            out = self.mgr.api.patch(plural, ns, name, ops, JSON_PATCH)
        except ApiException as exc:
            if exc.status == 404:
                return
            raise
        if isinstance(out, dict) and out.get("metadata", {}).get("finalizers"):
            self.mgr.wrote(plural, out)
