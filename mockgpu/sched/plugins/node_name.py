"""NodeName: a pod with ``spec.nodeName`` set fits only that node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mockgpu.sched.framework import Status
from mockgpu.sched.snapshot import NodeInfo

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME

    def __init__(self, args: object = None) -> None:
        pass

    def filter(self, pod: Mapping[str, Any], node: NodeInfo) -> Status:
        wanted = (pod.get("spec") or {}).get("nodeName") or ""
        if not wanted or wanted == node.name:
            return Status.success()
        return Status.unschedulable(ERR_REASON, resolvable=False)
