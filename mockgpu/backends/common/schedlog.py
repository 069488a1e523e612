"""What the real kube-scheduler says about each pod, read from its JSON log (``--logging-format=json -v=10``).

At verbosity 10 kube-scheduler logs, per scheduling attempt, every score plugin's weighted, normalised score
per node ("Plugin scored node for pod"), each node's total ("Calculated node's final score for pod"), and
the raw score of the resource scorers ("Listed internal info for allocatable resources, requested resources
and score"); at 2 the outcome ("Successfully bound pod to node" / "Unable to schedule pod; no fit;
waiting"); at 3 the node and pod events its cache saw. ``SchedulerLog`` reads the file incrementally
and keeps the latest attempt of each pod; ``feed`` takes the same lines from any other source (on kind:
the scheduler pod's log streamed through the API, ``mockgpu.backends.kind.schedresults``).
It does not see per-node filter reasons: kube-scheduler does not log them (only the aggregated
FailedScheduling message).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCORED = "Plugin scored node for pod"
TOTAL = "Calculated node's final score for pod"
RAW = "Listed internal info for allocatable resources, requested resources and score"
BOUND = "Successfully bound pod to node"
NO_FIT = "Unable to schedule pod; no fit; waiting"
ATTEMPT = "Attempting to schedule pod"
FIT_STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")


@dataclass
class Attempt:
    """One scheduling attempt of one pod."""

    scores: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> plugin -> weighted score
    totals: dict[str, int] = field(default_factory=dict)  # node -> total
    raw: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> resource scorer -> raw score
    bound_to: str | None = None
    unschedulable: str | None = None  # the error message when no node fits
    done: bool = False


def _key(obj: Any) -> str:
    """``namespace/name`` of a klog.KObj as the JSON logger writes it (or a plain string)."""
    if isinstance(obj, dict):
        ns = obj.get("namespace") or ""
        return f"{ns}/{obj.get('name', '')}" if ns else str(obj.get("name", ""))
    return str(obj or "")


class SchedulerLog:
    """Incremental reader of one kube-scheduler JSON log (thread-safe)."""

    def __init__(self, path: Path | None = None) -> None:
        """``path``: the log file ``read`` follows; None when the lines come through ``feed`` only."""
        self.path = Path(path) if path is not None else None
        self._offset = 0
        self._partial = b""  # a line ``feed`` got only part of so far
        self._lock = threading.Lock()
        self.nodes: set[str] = set()  # nodes in the scheduler's cache
        self.pods: set[str] = set()  # assigned pods its cache has seen (namespace/name)
        self.attempts: dict[str, Attempt] = {}  # pod (namespace/name) -> latest attempt
        self.finished: list[str] = []  # pods whose latest attempt ended, in order (drained by the caller)

    def read(self) -> None:
        """Take what the file gained since the last read (nothing without a file)."""
        if self.path is None:
            return
        with self._lock:
            try:
                with self.path.open("rb") as fh:
                    fh.seek(self._offset)
                    data = fh.read()
            except FileNotFoundError:
                return
            end = data.rfind(b"\n") + 1
            self._offset += end
            self._records(data[:end])

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the log from elsewhere (a stream); a line cut short waits for its end."""
        with self._lock:
            data = self._partial + data
            end = data.rfind(b"\n") + 1
            self._partial = data[end:]
            self._records(data[:end])

    def _records(self, data: bytes) -> None:
        for raw in data.splitlines():
            if raw.startswith(b"{"):
                try:
                    self._record(json.loads(raw))
                except (ValueError, KeyError, TypeError):
                    continue

    def _record(self, rec: dict[str, Any]) -> None:
        msg = rec.get("msg")
        if msg == "Add event for node":
            self.nodes.add(_key(rec.get("node")))
        elif msg == "Delete event for node":
            self.nodes.discard(_key(rec.get("node")))
        elif msg in ("Add event for scheduled pod", "Update event for scheduled pod"):
            self.pods.add(_key(rec.get("pod")))
        elif msg == "Delete event for scheduled pod":
            self.pods.discard(_key(rec.get("pod")))
        elif msg == ATTEMPT:
            self.attempts[_key(rec.get("pod"))] = Attempt()
        elif msg in (SCORED, TOTAL, RAW, BOUND, NO_FIT):
            attempt = self.attempts.setdefault(_key(rec.get("pod")), Attempt())
            node = _key(rec.get("node"))
            if msg == SCORED:
                attempt.scores.setdefault(node, {})[rec["plugin"]] = int(rec["score"])
            elif msg == TOTAL:
                attempt.totals[node] = int(rec["score"])
            elif msg == RAW:  # NodeResourcesFit's scorer is named by its strategy
                scorer = rec["resourceAllocationScorer"]
                plugin = "NodeResourcesFit" if scorer in FIT_STRATEGIES else scorer
                attempt.raw.setdefault(node, {})[plugin] = int(rec["resourceScore"])
            else:
                attempt.bound_to = node if msg == BOUND else None
                attempt.unschedulable = str(rec.get("err") or "") if msg == NO_FIT else None
                attempt.done = True
                self.finished.append(_key(rec.get("pod")))

    def attempt(self, pod: str) -> Attempt | None:
        with self._lock:
            return self.attempts.get(pod)

    def drain_finished(self) -> list[str]:
        with self._lock:
            out, self.finished = self.finished, []
            return out
