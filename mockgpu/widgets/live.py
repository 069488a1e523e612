"""Background redraws: the widgets on screen follow the cluster without a cell being re-run.

One ``Live`` per cluster client (``Live.of(client)``), shared by every panel that follows that cluster, so
a lab with five live widgets still runs one set of watches: a thread per watched list (pods, nodes, events,
GPU-state ConfigMaps) and one redraw thread. Any watch event marks the view dirty; the redraw thread then
calls every subscriber's ``refresh`` at most every ``throttle`` seconds, and at least every ``period``
seconds (a pending pod's wait and its cost grow without any API event).

The watches carry no state into the widgets; they only say *when* to re-read. A watch that fails (the
cluster went away) retries every ``retry`` seconds, and the redraw shows the panel's own error message.
``stop()`` ends it (the last subscriber leaving, ``LabCluster.close`` or the kernel exiting: ``stop_all``
runs at interpreter exit); the threads are daemons, so a kernel that is killed never waits for them.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import watch

from mockgpu.widgets.client import ClusterClient
from mockgpu.widgets.snapshot import GPU_STATE_LABEL, GPU_STATE_NAMESPACE

log = logging.getLogger(__name__)

_LIVE: dict[int, Live] = {}  # id(client) → its running Live
_LIVE_LOCK = threading.Lock()


class Live:
    def __init__(self, client: ClusterClient, refresh: Callable[[], Any] | None = None, *, throttle: float = 0.5,
                 retry: float = 2.0, window: int = 10, period: float = 5.0) -> None:
        self.client = client
        self.throttle = throttle
        self.retry = retry
        self.window = window  # seconds each watch request lasts before it is renewed (and the stop flag read)
        self.period = period  # redraw at least this often while running
        self._subscribers: list[Callable[[], Any]] = [refresh] if refresh is not None else []
        self._lock = threading.Lock()
        self._dirty = threading.Event()
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    @classmethod
    def of(cls, client: ClusterClient, throttle: float = 0.5) -> Live:
        """The running Live of ``client`` (started on first use)."""
        with _LIVE_LOCK:
            live = _LIVE.get(id(client))
            if live is None or live.stopped:
                live = _LIVE[id(client)] = cls(client, throttle=throttle).start()
            return live

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subscribers)

    def add(self, refresh: Callable[[], Any]) -> Live:
        with self._lock:
            if refresh not in self._subscribers:
                self._subscribers.append(refresh)
        self._dirty.set()
        return self

    def remove(self, refresh: Callable[[], Any]) -> None:
        """Unsubscribe; the last subscriber leaving stops the watches."""
        with self._lock:
            if refresh in self._subscribers:
                self._subscribers.remove(refresh)
            empty = not self._subscribers
        if empty:
            self.stop()

    def _sources(self) -> list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]:
        core = self.client.core
        return [(core.list_pod_for_all_namespaces, (), {}), (core.list_node, (), {}),
                (core.list_event_for_all_namespaces, (), {}),
                (core.list_namespaced_config_map, (GPU_STATE_NAMESPACE,),
                 {"label_selector": f"{GPU_STATE_LABEL}=true"})]

    def _watch(self, fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        while not self._stopped.is_set():
            try:
                stream = watch.Watch().stream(fn, *args, timeout_seconds=self.window, **kw)
                for _ in stream:
                    self._dirty.set()
                    if self._stopped.is_set():
                        break
            except Exception:  # noqa: BLE001 - any failure: mark dirty (the redraw shows why) and retry
                self._dirty.set()
                self._stopped.wait(self.retry)

    def _redraw(self) -> None:
        while not self._stopped.is_set():
            self._dirty.wait(self.period)  # an event, or the period is over: redraw either way
            self._stopped.wait(self.throttle)  # let a burst of events settle into one redraw
            self._dirty.clear()
            if self._stopped.is_set():
                break
            with self._lock:
                subscribers = list(self._subscribers)
            for refresh in subscribers:
                try:
                    refresh()
                except Exception:  # noqa: BLE001 - one broken panel must not stop the others' redraws
                    log.exception("live redraw failed")

    def start(self) -> Live:
        for fn, args, kw in self._sources():
            t = threading.Thread(target=self._watch, args=(fn, args, kw), daemon=True, name="mockgpu-watch")
            t.start()
            self._threads.append(t)
        t = threading.Thread(target=self._redraw, daemon=True, name="mockgpu-redraw")
        t.start()
        self._threads.append(t)
        self._dirty.set()
        return self

    def stop(self, join: float = 0.0) -> None:
        """Stop redrawing now; the watch threads end when their current request does (within ``window`` s)."""
        self._stopped.set()
        self._dirty.set()
        with _LIVE_LOCK:
            if _LIVE.get(id(self.client)) is self:
                del _LIVE[id(self.client)]
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(join)

    def threads_alive(self) -> int:
        return sum(t.is_alive() for t in self._threads)


def stop_all(client: ClusterClient | None = None) -> None:
    """Stop the Live of ``client`` (every Live for None): at ``LabCluster.close`` and interpreter exit."""
    with _LIVE_LOCK:
        lives = [lv for key, lv in _LIVE.items() if client is None or key == id(client)]
    for live in lives:
        live.stop()


atexit.register(stop_all)
