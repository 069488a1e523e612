"""The API server's object store: every object in memory, every write committed to SQLite first.

One SQLite database per cluster (WAL journal). Each write is one transaction that upserts the object,
appends a watch event and advances the cluster-wide ``resourceVersion`` counter; it is committed before the
caller answers the client, so nothing acknowledged is lost when the control plane is killed and restarted
(``synchronous=NORMAL`` in WAL mode survives a process crash; only an OS crash may lose the last commits).

The most recent ``history`` events — and no more than ``history_bytes`` of their JSON, so that a few large
objects written many times cannot pin hundreds of MiB — are kept both in memory and in the ``events``
table, so a watch can resume from any version newer than ``compacted`` — also after a restart; older
versions get 410 Gone, as from kube-apiserver once etcd has compacted them (its watch cache too is bounded,
by capacity and by age).

Lists continued with a ``continue`` token are a different matter upstream: they read etcd, which
kube-apiserver compacts every ``--etcd-compaction-interval`` (5 min) to the revision it recorded at the
previous interval. ``list_compacted`` follows that clock (advanced on writes), so a token stays good for 5–10
minutes however much watch history the byte bound drops. A continued page is served at its first page's version
(``list_at``: the retained history undone) while the history reaches back that far, else from the current objects.

The store is used from one thread (the server's event loop); callers treat returned objects as read-only.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mockgpu.control.apiserver.limits import check_stored_size
from mockgpu.privatefs import secure_sqlite

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)
ETCD_COMPACTION_INTERVAL = 300.0  # kube-apiserver's --etcd-compaction-interval default
HISTORY_BYTES = 16 * 2**20  # JSON of the retained events (object and old object)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    data TEXT NOT NULL, PRIMARY KEY (resource, namespace, name));
CREATE TABLE IF NOT EXISTS events (rv INTEGER PRIMARY KEY, type TEXT NOT NULL, resource TEXT NOT NULL,
    data TEXT NOT NULL, old TEXT);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


@dataclass(frozen=True)
class Event:
    """One change: ``obj`` as it is after the change (for DELETED: as it was, with the new version)."""

    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    resource: str
    obj: Obj
    old: Obj | None  # the object before a MODIFIED or DELETED; None for ADDED


@dataclass(frozen=True)
class _Stored:
    """A retained event: its JSON (as the ``events`` table holds it) kept deflated in memory, since it is read
    only when a watch resumes from an older version. ``size`` is the JSON's length, which ``history_bytes``
    bounds; what the history costs in memory is a fraction of it (objects repeat their field names)."""

    rv: int
    type: str
    resource: str
    packed: bytes  # zlib of the object's JSON, then (if any) the old object's, split at ``split``
    split: int
    size: int

    @classmethod
    def of(cls, rv: int, typ: str, resource: str, data: str, old: str | None) -> _Stored:
        raw = data.encode()
        both = raw + (old.encode() if old else b"")
        return cls(rv, typ, resource, zlib.compress(both, 1), len(raw) if old else -1, len(data) + len(old or ""))

    def event(self) -> Event:
        both = zlib.decompress(self.packed)
        data, old = (both, None) if self.split < 0 else (both[:self.split], both[self.split:])
        return Event(self.rv, self.type, self.resource, json.loads(data), json.loads(old) if old else None)


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace") or "", meta["name"]


class Store:
    """Objects by resource and (namespace, name), a resourceVersion counter and a bounded event history."""

    def __init__(self, path: str | Path, *, history: int = 10000, history_bytes: int = HISTORY_BYTES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = str(path)
        self.history_size = history
        self.history_bytes = history_bytes
        if self.path != ":memory:":
            secure_sqlite(self.path)  # 0600 before SQLite opens it: its -wal and -shm files take that mode
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._objects: dict[str, dict[Key, Obj]] = {}
        self.listeners: list[Callable[[Event], None]] = []
        self.rv = self._meta("rv")
        self.compacted = self._meta("compacted")
        self._clock = clock
        # etcd's compaction as kube-apiserver drives it: (when, rv) recorded at the last interval
        self.list_compacted = 0
        self._mark = (clock(), self.rv)
        for resource, ns, name, data in self._db.execute("SELECT resource, namespace, name, data FROM objects"):
            self._objects.setdefault(resource, {})[(ns, name)] = json.loads(data)
        # retained events as their stored JSON (decoded only when a watch resumes from them: a third of the
        # memory of the objects), and the sum of their sizes
        self._history: deque[_Stored] = deque()
        self._bytes = 0
        for row in self._db.execute("SELECT rv, type, resource, data, old FROM events ORDER BY rv"):
            self._retain(_Stored.of(*row))

    def _meta(self, key: str) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        self._db.close()

    # ---- reads -------------------------------------------------------------------------------------------

    def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        return self._objects.get(resource, {}).get((namespace or "", name))

    def list(self, resource: str, namespace: str | None = None) -> list[Obj]:
        """Objects sorted by (namespace, name), as etcd's key order gives upstream."""
        objs = self._objects.get(resource, {})
        keys = sorted(k for k in objs if namespace is None or k[0] == namespace)
        return [objs[k] for k in keys]

    def list_at(self, resource: str, namespace: str | None, rv: int) -> list[Obj] | None:
        """Objects as they were at version ``rv``, sorted as ``list``: the snapshot a continued list is served
        from (etcd serves every page at its first page's revision), rebuilt by undoing the retained events newer
        than ``rv``; None when the history no longer reaches back to ``rv``."""
        if rv < self.compacted or rv > self.rv:
            return None
        objs = dict(self._objects.get(resource, {}))
        for event in reversed(list(self.history_after(rv, resource))):
            meta = event.obj["metadata"]
            key = (meta.get("namespace") or "", meta["name"])
            if event.type == "ADDED" or event.old is None:
                objs.pop(key, None)
            else:
                objs[key] = event.old
        return [objs[k] for k in sorted(k for k in objs if namespace is None or k[0] == namespace)]

    def count(self, resource: str) -> int:
        return len(self._objects.get(resource, {}))

    def history_after(self, rv: int, resource: str) -> Iterator[Event]:
        """Retained events of ``resource`` newer than ``rv``, oldest first."""
        if not self._history or self._history[-1].rv <= rv:
            return iter(())
        start = 0
        if self._history[0].rv <= rv:  # binary search: rvs in the deque are increasing
            lo, hi = 0, len(self._history)
            while lo < hi:
                mid = (lo + hi) // 2
                if self._history[mid].rv <= rv:
                    lo = mid + 1
                else:
                    hi = mid
            start = lo
        return (e.event() for i, e in enumerate(self._history) if i >= start and e.resource == resource)

    # ---- writes ------------------------------------------------------------------------------------------

    def create(self, resource: str, obj: Obj) -> Obj:
        return self._write(resource, "ADDED", obj, None)

    def update(self, resource: str, obj: Obj, old: Obj) -> Obj:
        return self._write(resource, "MODIFIED", obj, old)

    def delete(self, resource: str, old: Obj) -> Obj:
        gone = json.loads(json.dumps(old))
        return self._write(resource, "DELETED", gone, old)

    def _write(self, resource: str, typ: str, obj: Obj, old: Obj | None) -> Obj:
        rv = self.rv + 1
        obj["metadata"]["resourceVersion"] = str(rv)
        ns, name = key_of(obj)
        data = json.dumps(obj, separators=(",", ":"))
        if typ != "DELETED":
            check_stored_size(data)  # etcd's request limit: nothing is written
        old_data = json.dumps(old, separators=(",", ":")) if old is not None else None
        db = self._db
        db.execute("BEGIN")
        try:
            if typ == "DELETED":
                db.execute("DELETE FROM objects WHERE resource=? AND namespace=? AND name=?", (resource, ns, name))
            else:
                db.execute("INSERT OR REPLACE INTO objects VALUES (?,?,?,?)", (resource, ns, name, data))
            db.execute("INSERT INTO events VALUES (?,?,?,?,?)", (rv, typ, resource, data, old_data))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('rv', ?)", (rv,))
            stored = _Stored.of(rv, typ, resource, data, old_data)
            compact_to = self._compaction_point(rv, stored.size)
            if compact_to:
                db.execute("DELETE FROM events WHERE rv <= ?", (compact_to,))
                db.execute("INSERT OR REPLACE INTO meta VALUES ('compacted', ?)", (compact_to,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.rv = rv
        self._advance_list_compaction()
        objs = self._objects.setdefault(resource, {})
        if typ == "DELETED":
            objs.pop((ns, name), None)
        else:
            objs[(ns, name)] = obj
        self._retain(stored)
        if compact_to:
            while self._history and self._history[0].rv <= compact_to:
                self._bytes -= self._history.popleft().size
            self.compacted = compact_to
        event = Event(rv, typ, resource, obj, old)
        for listener in self.listeners:
            listener(event)
        return obj

    def _advance_list_compaction(self) -> None:
        now = self._clock()
        if now - self._mark[0] >= ETCD_COMPACTION_INTERVAL:
            self.list_compacted = self._mark[1]
            self._mark = (now, self.rv)

    def _retain(self, stored: _Stored) -> None:
        self._history.append(stored)
        self._bytes += stored.size

    def _compaction_point(self, rv: int, size: int) -> int:
        """The version up to which history goes, or 0: in batches (a tenth of its bound) once the count
        exceeds ``history``, or when the bytes with the new event would exceed ``history_bytes`` (then down
        to nine tenths of it; the new event itself is always kept)."""
        slack = max(1, self.history_size // 10)
        point = rv - self.history_size if len(self._history) + 1 > self.history_size + slack else 0
        if self._bytes + size > self.history_bytes:
            budget, kept = self.history_bytes * 9 // 10 - size, 0
            for stored in reversed(self._history):
                kept += stored.size
                if kept > budget:
                    point = max(point, stored.rv)
                    break
        return point
