"""Watches: every store event is offered to each open watch of its resource, in commit order.

Subscribing replays the retained history after the requested version and registers the watcher in one
step on the event loop's thread, between two store writes, so a watch never misses or reorders an event.
A selector-filtered watch follows upstream's watch cache: an object that starts matching arrives as
ADDED, one that stops matching as DELETED.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mockgpu.control.apiserver import protobuf
from mockgpu.control.apiserver.listoptions import ListOptions
from mockgpu.control.apiserver.request import encode, wants_table
from mockgpu.control.apiserver.status import StatusError, bad_request, internal_error, too_old_resource_version
from mockgpu.control.apiserver.store import Event, Obj, Store

#: live events a watcher may have waiting. Upstream's cacheWatcher buffers 10 to 1000 events
#: (``k8s.io/apiserver/pkg/storage/cacher/watch_cache_history.go`` ``suggestedWatchChannelSize``); a watcher
#: that falls further behind is terminated ("Forcing watcher close due to unresponsiveness",
#: ``cache_watcher.go``) and its client re-lists or re-watches: it never holds up the other watchers.
MAX_PENDING = 1000
#: events written to the client in one chunk
BATCH = 500
#: encoded event lines kept for the other watchers of the same event: at most this many, and no more than
#: ``_ENCODED_CACHE_BYTES`` of them (each entry also keeps its object alive), so that a few objects near the
#: size limit (1.5 MiB) cannot pin a gigabyte of lines and objects between them
_ENCODED_CACHE = 1024
_ENCODED_CACHE_BYTES = 4 * 2**20


@dataclass(eq=False)
class Watcher:
    resource: str
    namespace: str | None
    matches: Callable[[Obj], bool]
    #: initial objects and replayed history: served first, bounded by the store and its history, not by
    #: MAX_PENDING (upstream serves them from the watch cache, not the watcher's buffer)
    backlog: deque[tuple[str, Obj]] = field(default_factory=deque)
    pending: deque[tuple[str, Obj]] = field(default_factory=deque)  # live events, at most MAX_PENDING
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    overflowed: bool = False
    #: called once when the watcher is terminated for falling behind (the hub drops it, the server ends it)
    on_overflow: list[Callable[[Watcher], None]] = field(default_factory=list)

    def offer(self, event: Event, live: bool = True) -> None:
        if self.overflowed:
            return
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
        if not live:
            self.backlog.append((typ, obj))
        elif len(self.pending) >= MAX_PENDING:
            self.terminate()
            return
        else:
            self.pending.append((typ, obj))
        self.wake.set()

    def push(self, typ: str, obj: Obj) -> None:
        """An initial event (before any live one)."""
        self.backlog.append((typ, obj))
        self.wake.set()

    def terminate(self) -> None:
        """Too far behind: drop what is waiting and end the watch (the client re-watches)."""
        self.overflowed = True
        self.pending.clear()
        self.backlog.clear()
        self.wake.set()
        callbacks, self.on_overflow = self.on_overflow, []
        for callback in callbacks:
            callback(self)

    @property
    def waiting(self) -> int:
        return len(self.backlog) + len(self.pending)

    async def next_batch(self, timeout: float) -> list[tuple[str, Obj]]:
        """Up to ``BATCH`` events waiting now, or after up to ``timeout`` seconds ([] when none came)."""
        if not self.waiting:
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), timeout)
            except TimeoutError:
                return []
        batch = []
        for queue in (self.backlog, self.pending):
            while queue and len(batch) < BATCH:
                batch.append(queue.popleft())
        return batch


class WatchHub:
    """The open watches of one store, and each event's encoded line shared by the watchers that send it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._watchers: dict[str, set[Watcher]] = {}
        self._encoded: OrderedDict[tuple[int, str, str], tuple[Obj, bytes]] = OrderedDict()
        self._encoded_bytes = 0
        store.listeners.append(self._on_event)

    def _on_event(self, event: Event) -> None:
        for w in list(self._watchers.get(event.resource, ())):
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
                w.offer(event, live=False)
        self._watchers.setdefault(resource, set()).add(w)
        w.on_overflow.append(self.unsubscribe)
        return w

    def unsubscribe(self, w: Watcher) -> None:
        watchers = self._watchers.get(w.resource)
        if watchers is not None:
            watchers.discard(w)
            if not watchers:
                del self._watchers[w.resource]
        if not self._watchers:
            self._encoded.clear()
            self._encoded_bytes = 0
        w.backlog.clear()
        w.pending.clear()

    def count(self) -> int:
        return sum(len(s) for s in self._watchers.values())

    def cached_lines(self) -> int:
        return len(self._encoded)

    def cached_bytes(self) -> int:
        return self._encoded_bytes

    def encoded(self, typ: str, obj: Obj, view: str, encode_line: Callable[[], bytes]) -> bytes:
        """``encode_line()`` for this event as ``view`` presents it, encoded once for all its watchers (the
        object itself is the key: the store's objects are shared by every watcher and never mutated)."""
        key = (id(obj), typ, view)
        hit = self._encoded.get(key)
        if hit is not None and hit[0] is obj:
            self._encoded.move_to_end(key)
            return hit[1]
        line = encode_line()
        if hit is not None:  # an entry whose object went, its id reused
            self._encoded_bytes -= len(self._encoded.pop(key)[1])
        if len(line) > _ENCODED_CACHE_BYTES:
            return line
        self._encoded[key] = (obj, line)  # holding obj keeps its id from being reused while cached
        self._encoded_bytes += len(line)
        while len(self._encoded) > _ENCODED_CACHE or self._encoded_bytes > _ENCODED_CACHE_BYTES:
            self._encoded_bytes -= len(self._encoded.popitem(last=False)[1][1])
        return line


def bookmark(kind: str, api_version: str, rv: int, annotations: dict[str, Any] | None = None) -> Obj:
    """The object of a BOOKMARK event: only kind, apiVersion and the version reached."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if annotations:
        meta["annotations"] = annotations
    return {"kind": kind, "apiVersion": api_version, "metadata": meta}


DEFAULT_TIMEOUT_S = 1800  # kube-apiserver's --min-request-timeout


async def serve_watch(request: Any, app: Any, info: Any, opts: ListOptions, namespace: str | None,
                      name: str | None = None) -> Any:
    """``?watch=true``: a chunked stream of ``{"type", "object"}`` JSON lines (or, for a client that prefers
    protobuf, ``protobuf.watch_frame``'s length-prefixed ``WatchEvent`` messages), upstream's semantics:
    resourceVersion unset or "0" → the current objects as ADDED first; N → every change after N (an ERROR
    event with a 410 Status when N is older than the retained history); bookmarks when allowed;
    ``sendInitialEvents`` ends the initial ADDED events with the ``k8s.io/initial-events-end`` bookmark.
    ``name`` (from ``/watch/.../<name>`` or ``?watch`` on an object's URL) narrows it to that object."""
    from aiohttp import HttpVersion11, web

    q = request.query
    store = app.store
    selected = app.matcher(q, info)

    def matches(obj: Obj) -> bool:  # a watch on one object's URL (legacy /watch/.../<name>) sees only it
        return (name is None or obj["metadata"]["name"] == name) and selected(obj)

    given = q.get("resourceVersion", "")
    send_initial = bool(opts.send_initial_events)
    bookmarks = opts.allow_bookmarks
    timeout = opts.timeout_seconds
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
    if watcher is not None and send_initial and bookmarks:  # before any live event
        watcher.push("BOOKMARK", bookmark(info.kind, info.api_version, store.rv,
                                          {"k8s.io/initial-events-end": "true"}))

    as_protobuf = not table and protobuf.wants_protobuf(request.headers.get("Accept", ""))

    def frame(typ: str, obj: Obj) -> bytes:
        """One event: a JSON line, or a length-prefixed ``WatchEvent`` in a protobuf stream."""
        if not as_protobuf:
            return encode({"type": typ, "object": obj}) + b"\n"
        data = protobuf.watch_frame(typ, obj)
        if data is None:  # an object its message cannot carry: the stream says so as upstream's encoder error
            data = protobuf.watch_frame("ERROR", internal_error(f"unable to encode {obj.get('kind')} as protobuf"
                                                                ).status)
        assert data is not None
        return data

    def line(typ: str, obj: Obj) -> bytes:
        if table and typ in ("ADDED", "MODIFIED", "DELETED"):
            return frame(typ, app.table(info, [obj], q, table))
        if typ == "BOOKMARK":
            return frame(typ, obj)
        view = f"{info.group}:protobuf" if as_protobuf else info.group
        return app.hub.encoded(typ, obj, view, lambda: frame(typ, app.present(info, obj)))

    content_type = protobuf.WATCH_CONTENT_TYPE if as_protobuf else "application/json"
    resp = web.StreamResponse(headers={"Content-Type": content_type})
    writing = False

    def stop_writing(_: Watcher) -> None:  # terminated while a write waits on a client that does not read
        if writing and request.transport is not None:
            request.transport.abort()

    try:
        if request.version >= HttpVersion11:
            resp.enable_chunked_encoding()
        else:  # HTTP/1.0 has no chunks: the stream ends when the connection closes (as Go's server does)
            resp.force_close()
        await resp.prepare(request)
        if error is not None:
            await resp.write(frame("ERROR", error.status))
            await resp.write_eof()
            return resp
        assert watcher is not None
        watcher.on_overflow.append(stop_writing)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not watcher.overflowed:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            batch = await watcher.next_batch(min(remaining, app.bookmark_interval))
            if batch:
                data = b"".join(line(t, o) for t, o in batch)
                writing = True
                await resp.write(data)
                writing = False
            elif request.transport is None or request.transport.is_closing():
                break
            elif bookmarks and not watcher.waiting:
                await resp.write(line("BOOKMARK", bookmark(info.kind, info.api_version, store.rv)))
        await resp.write_eof()
    except ConnectionResetError:  # the client went away
        pass
    finally:
        if watcher is not None:
            app.hub.unsubscribe(watcher)
    return resp
