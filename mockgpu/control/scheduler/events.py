"""Core/v1 Events for pods, aggregated as client-go's event recorder does.

An event identical to one already sent (same reporting component, pod, type, reason and message) is not
created again: the existing Event's ``count`` goes up and its ``lastTimestamp`` moves (one PATCH), as the
recorder's EventCorrelator does. Names are ``<pod>.<unix nanos in hex>`` like upstream. The component is the
profile's scheduler name (upstream makes one recorder per profile), so ``kubectl describe`` shows
``default-scheduler`` for the default profile.

Simplified: the correlator's spam filter and its "(combined from similar events)" aggregation are not
modelled; the dedup cache holds the last 4096 events.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import OrderedDict

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.scheduler.api import RawApi
from mockgpu.sched.messages import truncate_event_message

MAX_REMEMBERED = 4096





class EventRecorder:
    """Posts pod events; safe to call from several threads."""

    def __init__(self, api: RawApi, instance: str | None = None) -> None:
        self.api = api
        self.instance = instance or f"mockgpu-scheduler-{socket.gethostname()}"
        self._sent: OrderedDict[tuple, tuple[str, int]] = OrderedDict()  # key → (event name, count)
        self._lock = threading.Lock()

    def pod_event(self, pod: dict, component: str, type_: str, reason: str, action: str, message: str) -> None:
        meta = pod.get("metadata") or {}
        ns, name, uid = meta.get("namespace") or "default", meta.get("name", ""), meta.get("uid", "")
        message = truncate_event_message(message)
        key = (component, ns, name, uid, type_, reason, message)
        now = rfc3339()
        with self._lock:
            seen = self._sent.get(key)
        if seen is not None:
            event_name, count = seen
            try:
                self.api.patch_event(ns, event_name, {"count": count + 1, "lastTimestamp": now})
                self._remember(key, event_name, count + 1)
                return
            except ApiException as exc:
                if exc.status != 404:
                    raise  # 404: the event expired or was deleted; create it afresh
        event_name = f"{name}.{time.time_ns():x}"
        self.api.create_event(ns, {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": event_name, "namespace": ns},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name, "uid": uid,
                               "resourceVersion": meta.get("resourceVersion", "")},
            "reason": reason, "message": message, "type": type_, "action": action,
            "source": {"component": component}, "reportingComponent": component,
            "reportingInstance": self.instance, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        })
        self._remember(key, event_name, 1)

    def _remember(self, key: tuple, name: str, count: int) -> None:
        with self._lock:
            self._sent[key] = (name, count)
            self._sent.move_to_end(key)
            while len(self._sent) > MAX_REMEMBERED:
                self._sent.popitem(last=False)
