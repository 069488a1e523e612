"""NodeAffinity: ``spec.nodeSelector`` and required node affinity must match (Filter); matching preferred
terms add their weights (Score), normalized so the best node gets 100.

PreScore returns Skip when the pod has no preferred terms (v1.37.2), so the plugin then has no score at all for
the pod (absent from the score annotations) rather than 0 everywhere; totals are the same.

Simplified: the plugin's ``addedAffinity`` args are not modelled; neither is the PreFilter result (required
``matchFields`` ``metadata.name In`` terms restrict the nodes filtered; "pod affinity terms conflict"); a preferred
term that does not parse is skipped here, while upstream fails PreScore with an error (the API server rejects
such terms, so pods reaching the scheduler do not have them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mockgpu.sched.framework import Code, Status, default_normalize
from mockgpu.sched.nodeselector import selector_matches, term_matches
from mockgpu.sched.snapshot import NodeInfo

NAME = "NodeAffinity"
ERR_REASON = "node(s) didn't match Pod's node affinity/selector"


def _node_affinity(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def required_matches(pod: Mapping[str, Any], node: NodeInfo) -> bool:
    labels = node.labels
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return selector_matches(required.get("nodeSelectorTerms") or [], labels, node.name)


class NodeAffinity:
    name = NAME

    def __init__(self, args: object = None) -> None:
        pass

    def filter(self, pod: Mapping[str, Any], node: NodeInfo) -> Status:
        if required_matches(pod, node):
            return Status.success()
        return Status.unschedulable(ERR_REASON, resolvable=False)

    def pre_score(self, pod: Mapping[str, Any], nodes: list[NodeInfo]) -> Status:
        if not _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution"):
            return Status(Code.SKIP)
        return Status.success()

    def score(self, pod: Mapping[str, Any], node: NodeInfo) -> int:
        total = 0
        for pref in _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []:
            weight = int(pref.get("weight") or 0)
            if weight and term_matches(pref.get("preference") or {}, node.labels, node.name):
                total += weight
        return total

    def normalize(self, pod: Mapping[str, Any], scores: dict[str, int]) -> dict[str, int]:
        return default_normalize(scores)
