"""List-then-watch of one resource, as client-go's Reflector: resourceVersion bookkeeping, bookmarks,
resume after a dropped connection from the last version seen, and a fresh list after 410 Gone.

Each informer runs in its own thread and hands ``(kind, type, object)`` to ``sink``; a (re-)list is handed
over as one ``(kind, "SYNC", [objects])`` so the consumer can drop what vanished meanwhile.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.control.scheduler.api import RawApi, watch_events

log = logging.getLogger("mockgpu.scheduler")
Sink = Callable[[str, str, Any], None]


class Informer:
    """Keeps ``sink`` told about every object of ``plural`` (cluster-wide) until ``stop()``.

    ``group``: ``"<group>/<version>"`` for a non-core resource. ``optional``: the server may not serve it (404 on
    the list, e.g. an API server without ``resource.k8s.io``): the informer then reports an empty list once,
    counts as synced, and asks again every ``absent_delay`` seconds.
    """

    def __init__(self, api: RawApi, plural: str, sink: Sink, *, watch_timeout: int = 300,
                 read_timeout: float = 60.0, retry_delay: float = 0.5, group: str = "", optional: bool = False,
                 absent_delay: float = 10.0) -> None:
        self.api, self.plural, self.sink = api, plural, sink
        self.group, self.optional, self.absent_delay = group, optional, absent_delay
        self.watch_timeout, self.read_timeout, self.retry_delay = watch_timeout, read_timeout, retry_delay
        self.resource_version: str | None = None
        self.synced = threading.Event()
        self.relists = 0
        self._stop = threading.Event()
        self._resp: Any = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"mockgpu-scheduler-{plural}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._lock:
            resp = self._resp
        if resp is not None:
            _interrupt(resp)
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                self._watch()
            except ApiException as exc:
                if exc.status == 404 and self.optional and self.resource_version is None:
                    if not self.synced.is_set():
                        self.sink(self.plural, "SYNC", [])
                        self.synced.set()
                    self._stop.wait(self.absent_delay)
                    continue
                if exc.status == 410:
                    self.resource_version = None  # too old: list again
                    continue
                if not self._stop.is_set():
                    log.warning("%s watch failed (%s %s); retrying", self.plural, exc.status, exc.reason)
                    self._stop.wait(self.retry_delay)
            except Exception as exc:  # dropped connection, read timeout, ...: resume from the last version
                if not self._stop.is_set():
                    log.debug("%s watch interrupted: %r; resuming", self.plural, exc)
                    self._stop.wait(self.retry_delay)

    def _list(self) -> None:
        data = self.api.list(self.plural, self.group) if self.group else self.api.list(self.plural)
        self.resource_version = str((data.get("metadata") or {}).get("resourceVersion") or "0")
        self.relists += 1
        self.sink(self.plural, "SYNC", data.get("items") or [])
        self.synced.set()

    def _watch(self) -> None:
        args = (self.plural, self.resource_version or "0", self.watch_timeout, self.read_timeout)
        resp = self.api.watch(*args, group=self.group) if self.group else self.api.watch(*args)
        with self._lock:
            self._resp = resp
        if self._stop.is_set():
            _interrupt(resp)
        try:
            for event in watch_events(resp):
                typ, obj = event.get("type"), event.get("object") or {}
                if typ == "ERROR":
                    code = obj.get("code")
                    if code == 410:
                        self.resource_version = None
                        return
                    raise ApiException(status=code, reason=obj.get("reason") or obj.get("message"))
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if rv:
                    self.resource_version = str(rv)
                if typ != "BOOKMARK":
                    self.sink(self.plural, str(typ), obj)
                if self._stop.is_set():
                    return
        finally:
            with self._lock:
                self._resp = None
            _close(resp)  # never hand a half-read stream back to the pool


def _interrupt(resp: Any) -> None:
    """Unblock a thread reading ``resp`` (shutting the socket down is the only way through TLS reads)."""
    try:
        resp.shutdown()
        return
    except Exception:  # urllib3 < 2.3 or a released connection
        pass
    sock = getattr(getattr(resp, "connection", None), "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _close(resp: Any) -> None:
    try:
        resp.close()
    except Exception:
        pass
