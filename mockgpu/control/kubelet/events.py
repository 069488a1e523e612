"""Posting the kubelet's pod events (core/v1 Event) from a background thread, in order.

Events are what ``kubectl describe pod`` lists: ``source.component`` ``kubelet`` and ``source.host`` the
node, ``reportingComponent``/``reportingInstance`` likewise, ``involvedObject`` the pod with the
container's ``fieldPath``; the name is ``<pod>.<hex nanoseconds>`` as client-go's recorder makes it.
Posting off the pod worker's thread keeps container start latency free of API round trips.
Simplified: no aggregation of repeated events (count is always 1).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from mockgpu.apimachinery.timefmt import rfc3339

log = logging.getLogger(__name__)


def event_body(pod: dict[str, Any], etype: str, reason: str, message: str, field_path: str, host: str,
               component: str = "kubelet") -> dict[str, Any]:
    meta = pod["metadata"]
    now = rfc3339()
    involved = {"kind": "Pod", "apiVersion": "v1", "namespace": meta.get("namespace", "default"),
                "name": meta["name"], "uid": meta.get("uid", ""), "resourceVersion": meta.get("resourceVersion", "")}
    if field_path:
        involved["fieldPath"] = field_path
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": involved["namespace"]},
        "involvedObject": involved, "reason": reason, "message": message, "type": etype,
        "source": {"component": component, "host": host}, "firstTimestamp": now, "lastTimestamp": now,
        "count": 1, "reportingComponent": component, "reportingInstance": host,
    }


class EventRecorder:
    def __init__(self, core: Any, host: str) -> None:
        self.core = core
        self.host = host
        self._q: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"events-{host}", daemon=True)
        self._thread.start()

    def record(self, pod: dict[str, Any], etype: str, reason: str, message: str, field_path: str = "") -> None:
        self._q.put(event_body(pod, etype, reason, message, field_path, self.host))

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until every queued event was posted (or timeout)."""
        deadline = time.monotonic() + timeout
        while self._q.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self, timeout: float = 2.0) -> None:
        self.flush(timeout)
        self._q.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            body = self._q.get()
            try:
                if body is None:
                    return
                self.core.create_namespaced_event(body["metadata"]["namespace"], body)
            except Exception as exc:  # the namespace or server may be gone; events are best effort upstream too
                log.debug("event %s not posted: %s", body and body.get("reason"), exc)
            finally:
                self._q.task_done()
