"""What the controllers share, below the manager that runs them: the cache of watched objects, the work queue,
the kinds they sync and own, and ``Manager``, the part of the ``ControllerManager`` a controller calls (the
manager constructs every controller with itself, so they see it through this Protocol, not by importing it)."""

from __future__ import annotations

import heapq
import threading
import time
from typing import Any, Protocol

from mockgpu.control.controllers.api import ControllerApi
from mockgpu.control.controllers.logic import controller_of

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (what, namespace, name): what is a kind, or "gc/<plural>" for a dependent check
WATCHED = ("pods", "replicasets", "replicationcontrollers", "deployments", "jobs", "daemonsets", "cronjobs",
           "statefulsets", "nodes",
           "resourceclaims", "resourceclaimtemplates", "resourceslices", "devicetaintrules", "resourcequotas",
           "namespaces")
#: owners the garbage collector looks up (a Pod owns the ResourceClaims made from its templates)
OWNER_KINDS = {"ReplicaSet": "replicasets", "ReplicationController": "replicationcontrollers",
               "Deployment": "deployments", "Job": "jobs", "DaemonSet": "daemonsets",
               "CronJob": "cronjobs", "StatefulSet": "statefulsets", "Pod": "pods"}
#: plural → the kind of the controller that syncs it (pods: the resource claim controller, routed on its own)
KINDS = {plural: kind for kind, plural in OWNER_KINDS.items() if kind != "Pod"}
DEPENDENT_PLURALS = ("replicasets", "jobs", "pods", "resourceclaims")  # what the garbage collector deletes


def _rv(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def node_fingerprint(node: Obj) -> tuple:
    """What DaemonSets look at on a node: labels, spec (taints, unschedulable) and condition statuses."""
    conditions = sorted((c.get("type", ""), c.get("status", ""))
                        for c in (node.get("status") or {}).get("conditions") or [])
    return (repr(sorted(((node.get("metadata") or {}).get("labels") or {}).items())),
            repr(node.get("spec") or {}), tuple(conditions))


class Cache:
    """Objects by plural and (namespace, name), never moved back to an older resourceVersion."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.objs: dict[str, dict[tuple[str, str], Obj]] = {p: {} for p in WATCHED}
        self._gone: dict[tuple[str, str, str], int] = {}  # (plural, ns, name) → rv when last removed

    @staticmethod
    def _key(obj: Obj) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return meta.get("namespace") or "", meta.get("name", "")

    def put(self, plural: str, obj: Obj) -> bool:
        """Store ``obj`` unless the cache already holds a newer version; True when stored."""
        key = self._key(obj)
        with self.lock:
            current = self.objs[plural].get(key)
            if current is not None and _rv(current) > _rv(obj):
                return False
            if current is None and self._gone.get((plural, *key), -1) >= _rv(obj):
                return False
            self.objs[plural][key] = obj
            return True

    def remove(self, plural: str, obj: Obj) -> Obj | None:
        key = self._key(obj)
        with self.lock:
            current = self.objs[plural].get(key)
            if current is not None and current["metadata"].get("uid") != (obj.get("metadata") or {}).get("uid"):
                return None  # a newer object of the same name
            self._gone[(plural, *key)] = max(_rv(obj), _rv(current or {}))
            return self.objs[plural].pop(key, None)

    def sync(self, plural: str, items: list[Obj]) -> list[Obj]:
        """Replace ``plural`` with a fresh list; the objects that vanished."""
        with self.lock:
            fresh = {self._key(o): o for o in items}
            gone = [o for k, o in self.objs[plural].items() if k not in fresh]
            self.objs[plural] = fresh
            return gone

    def get(self, plural: str, ns: str, name: str) -> Obj | None:
        with self.lock:
            return self.objs[plural].get((ns, name))

    def list(self, plural: str, ns: str | None = None) -> list[Obj]:
        with self.lock:
            return [o for (n, _), o in sorted(self.objs[plural].items()) if ns is None or n == ns]

    def owned(self, plural: str, owner: Obj) -> list[Obj]:
        """Objects of ``plural`` whose controller reference names ``owner``'s uid."""
        uid = owner["metadata"].get("uid")
        ns = owner["metadata"].get("namespace") or ""
        return [o for o in self.list(plural, ns) if (controller_of(o) or {}).get("uid") == uid]

    def dependents(self, ns: str, uid: str) -> list[tuple[str, Obj]]:
        """(plural, object) of everything in ``ns`` with an owner reference to ``uid``."""
        out = []
        for plural in DEPENDENT_PLURALS:
            for o in self.list(plural, ns):
                if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or []):
                    out.append((plural, o))
        return out


class WorkQueue:
    """Keys to sync, each at most once in the queue; delayed keys wait in a heap."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ready: list[Key] = []
        self._queued: set[Key] = set()
        self._delayed: list[tuple[float, Key]] = []
        self.closed = False

    def add(self, key: Key, after: float = 0.0) -> None:
        with self._cond:
            if after > 0:
                heapq.heappush(self._delayed, (time.monotonic() + after, key))
            elif key not in self._queued:
                self._queued.add(key)
                self._ready.append(key)
            self._cond.notify()

    def get(self) -> Key | None:
        with self._cond:
            while not self.closed:
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    _, key = heapq.heappop(self._delayed)
                    if key not in self._queued:
                        self._queued.add(key)
                        self._ready.append(key)
                if self._ready:
                    key = self._ready.pop(0)
                    self._queued.discard(key)
                    return key
                timeout = self._delayed[0][0] - now if self._delayed else None
                self._cond.wait(timeout)
            return None

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()


class Manager(Protocol):
    """The manager as its controllers see it (``manager.ControllerManager`` is one)."""

    api: ControllerApi
    cache: Cache
    queue: WorkQueue

    def enqueue(self, kind: str, ns: str, name: str, after: float = 0.0) -> None: ...

    def claim(self, plural: str, owner: Obj, selector: Any = None) -> list[Obj]: ...

    def wrote(self, plural: str, obj: Any) -> Any: ...
