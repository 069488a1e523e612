"""The scheduling queue: activeQ, backoffQ and the unschedulable pods, as kube-scheduler's PriorityQueue.

* **activeQ** is ordered as the PrioritySort plugin: higher ``spec.priority`` first, then FIFO by the pod's
  ``creationTimestamp`` (ties: the order this scheduler first saw the pods).
* **backoffQ** holds pods waiting out their backoff: ``initial × 2^(attempts-1)`` seconds capped at ``max``
  (``podInitialBackoffSeconds`` 1 / ``podMaxBackoffSeconds`` 10), counted from the last failure.
* **unschedulable** pods wait for a cluster event that might help (``move_all``) or for the periodic flush
  after ``unschedulable_timeout`` seconds (upstream ``podMaxInUnschedulablePodsDuration``, 5 min).

Simplified: upstream's per-plugin queueing hints are collapsed into one rule — any relevant event moves every
unschedulable pod (the caller decides which events are relevant); a pod keeps its creationTimestamp place
in activeQ across retries (upstream re-stamps it when it is re-queued). No I/O; ``clock`` is injected.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from mockgpu.sched.snapshot import pod_key, pod_priority


@dataclass
class QueuedPod:
    """One pending pod and its queue bookkeeping."""

    pod: dict
    seq: int
    attempts: int = 0
    last_failure: float = 0.0
    unschedulable_since: float = 0.0
    where: str = ""  # "active" | "backoff" | "unschedulable" | "gated" | "" (popped)
    version: int = 0  # bumped each time the entry is (re)pushed, so stale heap entries are skipped

    @property
    def key(self) -> str:
        return pod_key(self.pod)

    @property
    def gated(self) -> bool:
        return bool((self.pod.get("spec") or {}).get("schedulingGates"))


@dataclass
class SchedulingQueue:
    """Pending pods of this scheduler; every method is called from the scheduler's own thread."""

    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    unschedulable_timeout: float = 300.0
    clock: Callable[[], float] = field(default=lambda: 0.0)
    _pods: dict[str, QueuedPod] = field(default_factory=dict)
    _active: list[tuple[int, str, int, int, str]] = field(default_factory=list)
    _backoff: list[tuple[float, int, int, str]] = field(default_factory=list)
    _seq: itertools.count = field(default_factory=itertools.count)
    _next_flush: float = 0.0

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def keys(self) -> set[str]:
        return set(self._pods)

    def get(self, key: str) -> QueuedPod | None:
        return self._pods.get(key)

    def where(self, key: str) -> str | None:
        q = self._pods.get(key)
        return q.where if q else None

    # ---- adding and updating ---------------------------------------------------------------------------

    def add(self, pod: dict) -> None:
        """A new pending pod (or one seen again after a failed binding) goes to activeQ, gated ones wait."""
        key = pod_key(pod)
        q = self._pods.get(key)
        if q is None:
            q = self._pods[key] = QueuedPod(pod=pod, seq=next(self._seq))
        q.pod = pod
        self._to_active(q)

    def update(self, pod: dict, *, spec_changed: bool) -> None:
        """A pending pod changed; a spec change (e.g. gates removed, tolerations added) re-queues it now."""
        q = self._pods.get(pod_key(pod))
        if q is None:
            return
        q.pod = pod
        if spec_changed and q.where in ("unschedulable", "gated", "backoff"):
            self._to_active(q)

    def delete(self, key: str) -> None:
        self._pods.pop(key, None)  # its heap entries become stale and are skipped

    # ---- popping ---------------------------------------------------------------------------------------

    def pop(self) -> QueuedPod | None:
        """The next pod to schedule (after moving expired backoffs and flushing stale unschedulables)."""
        self._tick()
        while self._active:
            _, _, _, version, key = heapq.heappop(self._active)
            q = self._pods.get(key)
            if q is not None and q.where == "active" and q.version == version:
                q.where = ""
                q.attempts += 1
                return q
        return None

    def take(self, key: str) -> QueuedPod | None:
        """Take a pending, ungated pod out of whichever queue holds it (a pod-group cycle takes its group's pods
        together, as upstream pops a whole pod group); None when it is not waiting there."""
        q = self._pods.get(key)
        if q is None or q.where in ("", "gated"):
            return None
        q.where = ""  # its heap entries become stale
        q.attempts += 1
        return q

    def pending(self) -> list[QueuedPod]:
        """Every pod waiting in a queue (not the popped ones), in activeQ order."""
        return sorted((q for q in self._pods.values() if q.where),
                      key=lambda q: (-pod_priority(q.pod), str((q.pod.get("metadata") or {}).get("creationTimestamp")
                                                               or ""), q.seq))

    def done(self, key: str) -> None:
        """The popped pod was bound (or handed to the binder): forget it."""
        self._pods.pop(key, None)

    def failed(self, q: QueuedPod, *, unschedulable: bool) -> None:
        """After a failed cycle: unschedulable pods wait for an event, errors go straight to backoff."""
        if q.key not in self._pods:
            return
        now = self.clock()
        q.last_failure = now
        if unschedulable:
            q.where, q.unschedulable_since = "unschedulable", now
        else:
            self._to_backoff(q)

    def requeue(self, pod: dict) -> None:
        """A pod whose binding failed comes back (with backoff, as upstream's error path)."""
        key = pod_key(pod)
        q = self._pods.get(key)
        if q is None:
            q = self._pods[key] = QueuedPod(pod=pod, seq=next(self._seq), attempts=1)
        q.pod, q.last_failure = pod, self.clock()
        self._to_backoff(q)

    def move_all(self) -> int:
        """A cluster event that may help: every unschedulable pod goes to backoffQ or, if done backing off,
        to activeQ (upstream ``MoveAllToActiveOrBackoffQueue``). Returns how many moved."""
        moved = [q for q in self._pods.values() if q.where == "unschedulable"]
        for q in moved:
            self._to_backoff(q)
        return len(moved)

    def next_wakeup(self) -> float | None:
        """Seconds until a backoff expires or the unschedulable flush is due (None: nothing timed)."""
        now = self.clock()
        times = []
        if self._backoff:
            times.append(self._backoff[0][0])
        unsched = [q.unschedulable_since for q in self._pods.values() if q.where == "unschedulable"]
        if unsched:
            times.append(max(min(unsched) + self.unschedulable_timeout, self._next_flush))
        return max(0.0, min(times) - now) if times else None

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for q in self._pods.values():
            out[q.where or "in-flight"] = out.get(q.where or "in-flight", 0) + 1
        return out

    # ---- internals ----------------------------------------------------------------------------------------

    def backoff_duration(self, attempts: int) -> float:
        d = self.initial_backoff * (2 ** max(0, attempts - 1))
        return min(d, self.max_backoff)

    def _to_active(self, q: QueuedPod) -> None:
        if q.gated:
            q.where = "gated"
            return
        q.where, q.version = "active", q.version + 1
        created = str((q.pod.get("metadata") or {}).get("creationTimestamp") or "")
        heapq.heappush(self._active, (-pod_priority(q.pod), created, q.seq, q.version, q.key))

    def _to_backoff(self, q: QueuedPod) -> None:
        expiry = q.last_failure + self.backoff_duration(q.attempts)
        if expiry <= self.clock():
            self._to_active(q)
            return
        q.where, q.version = "backoff", q.version + 1
        heapq.heappush(self._backoff, (expiry, q.seq, q.version, q.key))

    def _tick(self) -> None:
        now = self.clock()
        while self._backoff and self._backoff[0][0] <= now:
            _, _, version, key = heapq.heappop(self._backoff)
            q = self._pods.get(key)
            if q is not None and q.where == "backoff" and q.version == version:
                self._to_active(q)
        if now < self._next_flush:
            return
        self._next_flush = now + min(30.0, self.unschedulable_timeout / 2)  # upstream checks every 30 s
        for q in list(self._pods.values()):
            if q.where == "unschedulable" and now - q.unschedulable_since >= self.unschedulable_timeout:
                self._to_backoff(q)
