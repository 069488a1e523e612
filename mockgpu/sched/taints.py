"""Taint/toleration matching as upstream ``v1helper.TolerationsTolerateTaint`` / ``Toleration.ToleratesTaint``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """An empty effect matches every effect; an empty key with ``Exists`` matches every key.

    Simplified: the alpha ``Lt``/``Gt`` operators (TaintTolerationComparisonOperators) are not modelled.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def pod_tolerations(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((pod.get("spec") or {}).get("tolerations") or [])


def first_untolerated(taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]],
                      effects: tuple[str, ...]) -> dict[str, Any] | None:
    """The first taint (in node order) with one of ``effects`` that no toleration tolerates."""
    for taint in taints:
        if taint.get("effect") in effects and not tolerated(tolerations, taint):
            return dict(taint)
    return None
