"""List-then-watch of one resource through the official client, as raw API dicts, in a thread.

``Reflector(list_fn, handler)`` lists, hands every object to ``handler("ADDED", obj)``, then watches from
the list's resourceVersion (with bookmarks), re-listing after 410 Gone or a broken stream, until
``stop()``. ``list_fn(**kwargs)`` is a bound client method such as ``CoreV1Api.list_pod_for_all_namespaces``
with its selectors pre-applied (``functools.partial``); responses are read unparsed
(``_preload_content=False``) so handlers get exactly the JSON the API server sent.
A re-list (after 410 Gone: the watch was down longer than the server's event history) reports the objects
that vanished meanwhile as ``handler("DELETED", last object seen)``, as client-go's ``DeltaFIFO.Replace``
does (``DeletedFinalStateUnknown``): a handler that frees what an object held (the kubelet: a deleted pod's
containers and dirs) is never left holding it for an object it will hear no more about. Objects are told
apart by ``metadata.uid``, so one deleted and re-created under the same name is a DELETED and an ADDED.
The reflector keeps the last object of each key it reported (its store, as client-go's informer has one).
Simplified from client-go's reflector: no resync, no paging, a fixed 0.2-2 s retry back-off.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)
Handler = Callable[[str, dict[str, Any]], None]


class Reflector:
    def __init__(self, list_fn: Callable[..., Any], handler: Handler, *, name: str = "reflector",
                 on_synced: Callable[[], None] | None = None, watch_timeout: int = 300) -> None:
        self.list_fn = list_fn
        self.handler = handler
        self.name = name
        self.on_synced = on_synced
        self.watch_timeout = watch_timeout
        self.synced = threading.Event()
        self._stop = threading.Event()
        self._resp: Any = None
        self._known: dict[str, dict[str, Any]] = {}  # key -> last object reported (read by this thread only)
        self._thread: threading.Thread | None = None

    def start(self) -> Reflector:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        resp = self._resp
        if resp is not None:
            try:
                resp.shutdown()  # unblocks the read in the watch thread
            except Exception:  # already released or closed
                pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def _dispatch(self, etype: str, obj: dict[str, Any]) -> None:
        if self._stop.is_set():
            return
        try:
            self.handler(etype, obj)
        except Exception:
            log.exception("%s: handler failed on %s %s", self.name, etype,
                          (obj.get("metadata") or {}).get("name"))

    def _list(self) -> str:
        resp = self.list_fn(_preload_content=False)
        data = json.loads(resp.data)
        items = data.get("items") or []
        listed = {_key(obj): obj for obj in items}
        vanished = [obj for key, obj in self._known.items() if key not in listed]
        self._known = listed
        for obj in vanished:  # deleted while the watch was down: no event will tell
            self._dispatch("DELETED", obj)
        for obj in items:
            self._dispatch("ADDED", obj)
        if not self.synced.is_set():
            self.synced.set()
            if self.on_synced:
                self.on_synced()
        return data["metadata"]["resourceVersion"]

    def _watch(self, rv: str) -> str | None:
        """Follow the stream; the last resourceVersion seen, or None to re-list."""
        from kubernetes.watch.watch import iter_resp_lines

        resp = self.list_fn(watch=True, resource_version=rv, allow_watch_bookmarks=True,
                            timeout_seconds=self.watch_timeout, _preload_content=False)
        self._resp = resp
        try:
            for line in iter_resp_lines(resp):
                if self._stop.is_set():
                    return rv
                ev = json.loads(line)
                etype, obj = ev.get("type"), ev.get("object") or {}
                if etype == "ERROR":
                    return None if obj.get("code") == 410 else rv
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if etype == "DELETED":
                    self._known.pop(_key(obj), None)
                elif etype in ("ADDED", "MODIFIED"):
                    self._known[_key(obj)] = obj
                if etype != "BOOKMARK":
                    self._dispatch(etype, obj)
        finally:
            self._resp = None
            resp.release_conn()
        return rv

    def _run(self) -> None:
        rv: str | None = None
        delay = 0.2
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._list()
                rv = self._watch(rv)
                delay = 0.2
            except Exception as exc:
                if self._stop.is_set():
                    return
                status = getattr(exc, "status", None)
                if status == 410:
                    rv = None
                log.debug("%s: %s; retrying", self.name, exc)
                if self._stop.wait(delay):
                    return
                delay = min(delay * 2, 2.0)


def _key(obj: dict[str, Any]) -> str:
    """An object's identity: its uid (``namespace/name`` for an object without one)."""
    meta = obj.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}"
