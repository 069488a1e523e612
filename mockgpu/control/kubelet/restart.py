"""Restart policy and the kubelet's crash-loop back-off.

Upstream (``pkg/kubelet/kuberuntime``, ``client-go/util/flowcontrol.Backoff``): a container that
exits is restarted per the pod's ``restartPolicy`` (Always: always; OnFailure: when the exit code
is not 0; Never: never). The first restart is immediate; each later one waits a back-off that
starts at 10 s and doubles up to 300 s; the back-off resets once the container has gone 10
minutes (2 x the maximum) without a new failure. While waiting, the container shows ``waiting``
with reason ``CrashLoopBackOff`` and message ``back-off 40s restarting failed container=NAME pod=NAME_NAMESPACE(UID)``.

``scale`` shrinks every real wait (not the durations in messages) so tests and labs need not sit
through minutes; the messages keep upstream's numbers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

INITIAL_BACKOFF = 10.0
MAX_BACKOFF = 300.0
RESTART_POLICIES = ("Always", "OnFailure", "Never")


def should_restart(policy: str, exit_code: int) -> bool:
    """Whether a container that exited with exit_code is started again."""
    if policy == "Always":
        return True
    if policy == "OnFailure":
        return exit_code != 0
    if policy == "Never":
        return False
    raise ValueError(f"unknown restartPolicy {policy!r}; expected one of {', '.join(RESTART_POLICIES)}")


def go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration.String prints whole seconds: 10s, 1m20s, 5m0s."""
    total = int(round(seconds))
    minutes, secs = divmod(total, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def backoff_table(n: int, initial: float = INITIAL_BACKOFF, cap: float = MAX_BACKOFF) -> list[float]:
    """The waits before restarts 1..n of an uninterrupted crash loop: 0, 10, 20, 40, 80, 160, 300, ..."""
    out, d = [0.0], initial
    while len(out) < n:
        out.append(d)
        d = min(d * 2, cap)
    return out[:n]


def crashloop_message(delay: float, container: str, pod: str, namespace: str, uid: str) -> str:
    return f"back-off {go_duration(delay)} restarting failed container={container} pod={pod}_{namespace}({uid})"


@dataclass
class _Entry:
    delay: float  # the back-off the next restart will wait
    last_update: float


@dataclass
class CrashLoopBackoff:
    """Per-container back-off state, keyed by e.g. (pod uid, container name).

    Follows the kubelet's ``doBackOff``: the first exit of a container is restarted at once and
    arms a 10 s back-off; each later exit waits the armed back-off, which then doubles (cap
    300 s). Restart k therefore waits 0, 10, 20, 40, 80, 160, 300, 300, ... seconds.
    """

    initial: float = INITIAL_BACKOFF
    cap: float = MAX_BACKOFF
    scale: float = 1.0  # multiply real waits by this (tests: 0.01)
    clock: Callable[[], float] = time.monotonic
    _entries: dict[object, _Entry] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on_exit(self, key: object) -> float:
        """Record an exit of key; returns the back-off (upstream seconds) before it may restart."""
        now = self.clock()
        with self._lock:
            e = self._entries.get(key)
            if e is None or now - e.last_update > 2 * self.cap * self.scale:
                self._entries[key] = _Entry(self.initial, now)
                return 0.0
            delay = e.delay
            self._entries[key] = _Entry(min(delay * 2, self.cap), now + delay * self.scale)
            return delay

    def wait_seconds(self, delay: float) -> float:
        """The real time to wait for an upstream back-off of delay seconds."""
        return delay * self.scale

    def reset(self, key: object) -> None:
        with self._lock:
            self._entries.pop(key, None)
