"""API writes off the scheduling thread, ordered per pod.

Upstream binds in a goroutine per pod so the next scheduling cycle does not wait for the API server; here a
few worker threads do the writes (bindings, status patches, events, victim deletions). Tasks for the same
key always go to the same worker, so the writes for one pod happen in the order they were decided.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import zlib
from collections.abc import Callable

log = logging.getLogger("mockgpu.scheduler")
Task = Callable[[], None]


class Writers:
    """``submit(key, task)`` runs ``task`` on the worker owning ``key``; ``stop()`` drains and joins."""

    def __init__(self, count: int = 4) -> None:
        self._queues: list[queue.SimpleQueue[Task | None]] = [queue.SimpleQueue() for _ in range(max(1, count))]
        self._threads = [threading.Thread(target=self._work, args=(q,), name=f"mockgpu-scheduler-writer-{i}",
                                          daemon=True) for i, q in enumerate(self._queues)]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def submit(self, key: str, task: Task) -> None:
        self._queues[zlib.crc32(key.encode()) % len(self._queues)].put(task)

    def stop(self, timeout: float = 5.0) -> None:
        """Finish what was submitted, waiting at most ``timeout`` in all (threads are daemons)."""
        for q in self._queues:
            q.put(None)
        deadline = time.monotonic() + timeout
        for t in self._threads:
            if t.is_alive():
                t.join(max(0.0, deadline - time.monotonic()))

    @staticmethod
    def _work(q: queue.SimpleQueue[Task | None]) -> None:
        while True:
            task = q.get()
            if task is None:
                return
            try:
                task()
            except Exception:
                log.exception("scheduler API write failed")
