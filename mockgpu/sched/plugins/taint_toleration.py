"""TaintToleration: NoSchedule/NoExecute taints must be tolerated (Filter); fewer untolerated
PreferNoSchedule taints score higher (Score counts them, NormalizeScore reverses).

The Filter reason is v1.37.2's ``node(s) had untolerated taint(s)``: it does not name the taint (mockgpu's v1.35
model said ``node(s) had untolerated taint {key: value}``), so nodes with different taints share one histogram
entry.
``first_untolerated`` still finds the taint, for callers that want to show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mockgpu.sched.framework import Status, default_normalize
from mockgpu.sched.snapshot import NodeInfo
from mockgpu.sched.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, first_untolerated, pod_tolerations

NAME = "TaintToleration"


ERR_REASON = "node(s) had untolerated taint(s)"


def untolerated_reason(taint: Mapping[str, Any]) -> str:
    """The Filter reason for an untolerated taint (v1.37.2: the same text whatever the taint)."""
    return ERR_REASON


class TaintToleration:
    name = NAME

    def __init__(self, args: object = None) -> None:
        pass

    def filter(self, pod: Mapping[str, Any], node: NodeInfo) -> Status:
        taint = first_untolerated(node.taints, pod_tolerations(pod), (NO_SCHEDULE, NO_EXECUTE))
        if taint is None:
            return Status.success()
        return Status.unschedulable(untolerated_reason(taint), resolvable=False)

    def score(self, pod: Mapping[str, Any], node: NodeInfo) -> int:
        """Count PreferNoSchedule taints not tolerated by tolerations with effect PreferNoSchedule or empty."""
        tols = [t for t in pod_tolerations(pod) if (t.get("effect") or "") in ("", PREFER_NO_SCHEDULE)]
        count = 0
        for taint in node.taints:
            if taint.get("effect") != PREFER_NO_SCHEDULE:
                continue
            if first_untolerated([taint], tols, (PREFER_NO_SCHEDULE,)) is not None:
                count += 1
        return count

    def normalize(self, pod: Mapping[str, Any], scores: dict[str, int]) -> dict[str, int]:
        return default_normalize(scores, reverse=True)
