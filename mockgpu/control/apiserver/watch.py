"""Watches: every store event is offered to each open watch of its resource, in commit order.

Subscribing replays the retained history after the requested version and registers the watcher in one
step on the event loop's thread, between two store writes, so a watch never misses or reorders an event.
A selector-filtered watch follows upstream's watch cache: an object that starts matching arrives as
ADDED, one that stops matching as DELETED.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mockgpu.control.apiserver.status import too_old_resource_version
from mockgpu.control.apiserver.store import Event, Obj, Store

#: a watcher this far behind its client is closed (the client re-lists), as upstream's cacher does.
MAX_PENDING = 50000


@dataclass(eq=False)
class Watcher:
    resource: str
    namespace: str | None
    matches: Callable[[Obj], bool]
    pending: deque[tuple[str, Obj]] = field(default_factory=deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    overflowed: bool = False

    def offer(self, event: Event) -> None:
        obj, old = event.obj, event.old
        if self.namespace is not None and (obj["metadata"].get("namespace") or "") != self.namespace:
            return
        now = event.type != "DELETED" and self.matches(obj)
        before = old is not None and self.matches(old)
        if event.type == "DELETED":
            typ = "DELETED" if before else None
        elif now and before:
            typ = "MODIFIED"
        elif now:
            typ = "ADDED"
        elif before:  # stopped matching: upstream sends DELETED with the previous object at the new version
            typ = "DELETED"
            obj = {**old, "metadata": {**old["metadata"], "resourceVersion": obj["metadata"]["resourceVersion"]}}
        else:
            typ = None
        if typ is None:
            return
        if len(self.pending) >= MAX_PENDING:
            self.overflowed = True
        else:
            self.pending.append((typ, obj))
        self.wake.set()

    def push(self, typ: str, obj: Obj) -> None:
        self.pending.append((typ, obj))
        self.wake.set()

    async def next_batch(self, timeout: float) -> list[tuple[str, Obj]]:
        """Events waiting now, or after up to ``timeout`` seconds ([] when none came)."""
        if not self.pending:
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), timeout)
            except TimeoutError:
                return []
        batch = list(self.pending)
        self.pending.clear()
        return batch


class WatchHub:
    """The open watches of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._watchers: dict[str, set[Watcher]] = {}
        store.listeners.append(self._on_event)

    def _on_event(self, event: Event) -> None:
        for w in self._watchers.get(event.resource, ()):
            w.offer(event)

    def subscribe(self, resource: str, namespace: str | None, matches: Callable[[Obj], bool],
                  since: int | None, *, initial: list[Obj] | None = None) -> Watcher:
        """A watcher that gets ``initial`` as ADDED, then every change after ``since`` (None: from now).

        Raises a 410 StatusError when ``since`` is older than the retained history.
        """
        if since is not None and since < self.store.compacted:
            raise too_old_resource_version(since, self.store.compacted + 1)
        w = Watcher(resource, namespace, matches)
        for obj in initial or ():
            w.push("ADDED", obj)
        if since is not None:
            for event in self.store.history_after(since, resource):
                w.offer(event)
        self._watchers.setdefault(resource, set()).add(w)
        return w

    def unsubscribe(self, w: Watcher) -> None:
        self._watchers.get(w.resource, set()).discard(w)

    def count(self) -> int:
        return sum(len(s) for s in self._watchers.values())


def bookmark(kind: str, api_version: str, rv: int, annotations: dict[str, Any] | None = None) -> Obj:
    """The object of a BOOKMARK event: only kind, apiVersion and the version reached."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if annotations:
        meta["annotations"] = annotations
    return {"kind": kind, "apiVersion": api_version, "metadata": meta}


DEFAULT_TIMEOUT_S = 1800  # kube-apiserver's --min-request-timeout


async def serve_watch(request: Any, app: Any, info: Any, namespace: str | None, name: str | None = None) -> Any:
    """``?watch=true``: a chunked stream of ``{"type", "object"}`` JSON lines, upstream's semantics:
    resourceVersion unset or "0" → the current objects as ADDED first; N → every change after N (an ERROR
    event with a 410 Status when N is older than the retained history); bookmarks when allowed;
    ``sendInitialEvents`` ends the initial ADDED events with the ``k8s.io/initial-events-end`` bookmark.
    ``name`` (from ``/watch/.../<name>`` or ``?watch`` on an object's URL) narrows it to that object."""
    from aiohttp import web

    from mockgpu.control.apiserver.request import TRUE, encode, int_param, wants_table
    from mockgpu.control.apiserver.status import StatusError, bad_request

    q = request.query
    store = app.store
    selected = app.matcher(q, info)

    def matches(obj: Obj) -> bool:  # a watch on one object's URL (legacy /watch/.../<name>) sees only it
        return (name is None or obj["metadata"]["name"] == name) and selected(obj)

    given = q.get("resourceVersion", "")
    send_initial = q.get("sendInitialEvents") in TRUE
    bookmarks = q.get("allowWatchBookmarks") in TRUE
    timeout = int_param(q, "timeoutSeconds")
    if timeout is None or timeout < 0:
        timeout = DEFAULT_TIMEOUT_S
    table = wants_table(request.headers.get("Accept", ""))
    error: StatusError | None = None
    watcher: Watcher | None = None
    if given in ("", "0") or send_initial:
        initial = [o for o in store.list(info.plural, namespace) if matches(o)]
        watcher = app.hub.subscribe(info.plural, namespace, matches, store.rv, initial=initial)
    else:
        try:
            since = int(given)
            if since < 0:
                raise ValueError(given)
        except ValueError:
            raise bad_request(f'invalid resource version "{given}"') from None
        try:
            watcher = app.hub.subscribe(info.plural, namespace, matches, since)
        except StatusError as err:
            error = err
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)

    def line(typ: str, obj: Obj) -> bytes:
        if table and typ in ("ADDED", "MODIFIED", "DELETED"):
            obj = app.table(info, [obj], q, table)
        elif typ != "BOOKMARK":
            obj = app.present(info, obj)
        return encode({"type": typ, "object": obj}) + b"\n"

    try:
        if error is not None:
            await resp.write(encode({"type": "ERROR", "object": error.status}) + b"\n")
            await resp.write_eof()
            return resp
        assert watcher is not None
        if send_initial and bookmarks:
            watcher.push("BOOKMARK", bookmark(info.kind, info.api_version, store.rv,
                                              {"k8s.io/initial-events-end": "true"}))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not watcher.overflowed:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            batch = await watcher.next_batch(min(remaining, app.bookmark_interval))
            if batch:
                await resp.write(b"".join(line(t, o) for t, o in batch))
            elif request.transport is None or request.transport.is_closing():
                break
            elif bookmarks and not watcher.pending:
                await resp.write(line("BOOKMARK", bookmark(info.kind, info.api_version, store.rv)))
        await resp.write_eof()
    except ConnectionResetError:  # the client went away
        pass
    finally:
        if watcher is not None:
            app.hub.unsubscribe(watcher)
    return resp
