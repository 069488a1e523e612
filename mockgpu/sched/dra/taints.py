"""Device taints as the scheduler and the eviction controller read them (DRA, KEP-5055; GA in v1.37).

A device's taints are those in its ResourceSlice plus one per matching ``DeviceTaintRule`` (upstream's
``resourceslice/tracker`` in k8s.io/dynamic-resource-allocation@v0.37.2 patches the rules' taints into the slices
it hands to the scheduler and to the device taint eviction controller). A rule matches a device when every field
of its ``deviceSelector`` that is set (driver, pool, device) equals the device's; a rule without a selector matches
nothing, an empty selector every device (``DeviceTaintRuleSpec`` in k8s.io/api@v0.37.2/resource/v1/types.go).

``tolerates`` is ``resourceclaim.ToleratesTaint``; ``prevents_allocation`` is the allocator's
``taintPreventsAllocation`` (structured/internal/stable/allocator_stable.go): only ``NoSchedule`` and ``NoExecute``
taints keep a device from a request that does not tolerate them; ``None`` and unknown effects are ignored.

Simplified: upstream's tracker also reports rules it cannot apply as events; rules here are applied as read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

BLOCKING_EFFECTS = ("NoExecute", "NoSchedule")


def _d(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def rule_matches(rule: Mapping[str, Any], driver: str, pool: str, device: str) -> bool:
    """Does ``rule``'s ``spec.deviceSelector`` select the device ``driver``/``pool``/``device``?"""
    sel = _d(rule.get("spec")).get("deviceSelector")
    if not isinstance(sel, Mapping):
        return False
    return all(sel.get(k) is None or sel.get(k) == v for k, v in (("driver", driver), ("pool", pool),
                                                                   ("device", device)))


def device_taints(driver: str, pool: str, device: Mapping[str, Any],
                  rules: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The device's own taints, then the taint of each rule that selects it (rules in the order given)."""
    out: list[Mapping[str, Any]] = [t for t in device.get("taints") or [] if isinstance(t, Mapping)]
    name = str(device.get("name", ""))
    for r in rules:
        if rule_matches(r, driver, pool, name):
            out.append(_d(_d(r.get("spec")).get("taint")))
    return out


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``resourceclaim.ToleratesTaint``: effect and key must match when set; ``Equal`` (or empty) compares values,
    ``Exists`` matches any value."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return bool(op == "Exists")


def tolerated(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def prevents_allocation(taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """``taintPreventsAllocation``: some ``NoSchedule``/``NoExecute`` taint is not tolerated."""
    return any(t.get("effect") in BLOCKING_EFFECTS and not tolerated(t, tolerations) for t in taints)
