"""Background redraws from API watches: any change to pods, nodes, events or GPU state marks the view
dirty; a redraw thread calls ``refresh`` at most every ``throttle`` seconds while it is dirty.

The watches carry no state into the widgets; they only say *when* to re-read. A watch that fails (the
cluster went away) retries every ``retry`` seconds, and the redraw shows the panel's own error message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mockgpu.widgets.client import ClusterClient
from mockgpu.widgets.snapshot import GPU_STATE_LABEL, GPU_STATE_NAMESPACE


class Live:
    def __init__(self, client: ClusterClient, refresh: Callable[[], Any], *, throttle: float = 0.5,
                 retry: float = 2.0, window: int = 10) -> None:
        self.client = client
        self.refresh = refresh
        self.throttle = throttle
        self.retry = retry
        self.window = window  # seconds each watch request lasts before it is renewed (and the stop flag read)
        self._dirty = threading.Event()
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    def _sources(self) -> list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]:
        core = self.client.core
        return [(core.list_pod_for_all_namespaces, (), {}), (core.list_node, (), {}),
                (core.list_event_for_all_namespaces, (), {}),
                (core.list_namespaced_config_map, (GPU_STATE_NAMESPACE,),
                 {"label_selector": f"{GPU_STATE_LABEL}=true"})]

    def _watch(self, fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        from kubernetes import watch

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
            if not self._dirty.wait(0.5):
                continue
            self._stopped.wait(self.throttle)  # let a burst of events settle into one redraw
            self._dirty.clear()
            if not self._stopped.is_set():
                self.refresh()

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
        for t in self._threads:
            t.join(join)
