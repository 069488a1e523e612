"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) take only pods that tolerate
``node.kubernetes.io/unschedulable:NoSchedule``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mockgpu.sched.framework import Status
from mockgpu.sched.snapshot import NodeInfo
from mockgpu.sched.taints import NO_SCHEDULE, UNSCHEDULABLE_TAINT_KEY, pod_tolerations, tolerated

NAME = "NodeUnschedulable"
ERR_REASON = "node(s) were unschedulable"


class NodeUnschedulable:
    name = NAME

    def __init__(self, args: object = None) -> None:
        pass

    def filter(self, pod: Mapping[str, Any], node: NodeInfo) -> Status:
        if not node.unschedulable:
            return Status.success()
        if tolerated(pod_tolerations(pod), {"key": UNSCHEDULABLE_TAINT_KEY, "effect": NO_SCHEDULE}):
            return Status.success()
        return Status.unschedulable(ERR_REASON, resolvable=False)
