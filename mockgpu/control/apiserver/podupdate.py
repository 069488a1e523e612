"""What a pod spec update may change, as upstream's ``ValidatePodUpdate`` decides, with its texts.

Images, ``activeDeadlineSeconds`` (only lowered), added tolerations, removed scheduling gates, nodeSelector
terms added while the pod is gated, and a negative grace period set to 1; any other change is the
``spec: Forbidden: pod updates may not change fields other than ...`` error, whose text matches upstream's up
to the newline after which kube-apiserver appends a ``go-cmp`` diff of the two specs. That diff is left out:
go-cmp deliberately varies its whitespace between runs, so it cannot be reproduced exactly.
"""

from __future__ import annotations

import copy
from typing import Any

from mockgpu.control.apiserver.status import FieldError, field_forbidden, field_invalid

_POD_UPDATE_MSG = ("pod updates may not change fields other than `spec.containers[*].image`,"
                   "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                   "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                   "(allow it to be set to 1 if it was previously negative)")


def validate_pod_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """Spec is immutable except images, activeDeadlineSeconds, added tolerations, removed scheduling gates and
    (while gated) added nodeSelector terms."""
    a, b = copy.deepcopy(new.get("spec") or {}), copy.deepcopy(old.get("spec") or {})
    for key in ("containers", "initContainers"):
        for c_new, c_old in zip(a.get(key) or [], b.get(key) or [], strict=False):
            if isinstance(c_new, dict) and isinstance(c_old, dict):
                c_new["image"] = c_old.get("image")
    old_ads, new_ads = b.get("activeDeadlineSeconds"), a.get("activeDeadlineSeconds")
    errs: list[FieldError] = []
    if new_ads is None and old_ads is not None or (old_ads is not None and new_ads is not None and new_ads > old_ads):
        errs.append(field_invalid("spec.activeDeadlineSeconds", new_ads,
                                  "must be less than or equal to previous value"))
    _copy_key(a, b, "activeDeadlineSeconds")
    old_tol, new_tol = b.get("tolerations") or [], a.get("tolerations") or []
    if all(t in new_tol for t in old_tol):
        _copy_key(a, b, "tolerations")
    errs += _scheduling_gate_updates(a, b)
    old_grace = b.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and a.get("terminationGracePeriodSeconds") == 1:
        a["terminationGracePeriodSeconds"] = old_grace  # upstream lets a negative grace period become 1
    for c in (a.get("containers") or []) + (a.get("initContainers") or []):
        if isinstance(c, dict) and not c.get("image"):
            return errs
    if a != b:
        errs.append(field_forbidden("spec", _POD_UPDATE_MSG))
    return errs


class _GoMap:
    """A map as Go's ``%#v`` prints it in a field error: ``map[string]string{"a":"1", "b":"2"}``."""

    def __init__(self, value: dict[str, str]) -> None:
        self.value = value

    def __str__(self) -> str:
        if not self.value:
            return "map[string]string(nil)"
        return "map[string]string{" + ", ".join(f'"{k}":"{v}"' for k, v in sorted(self.value.items())) + "}"


def _scheduling_gate_updates(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """Scheduling gates may only be removed; while a pod is gated its nodeSelector may grow (KEP-3521/3838).
    Checked fields are copied from ``old`` into ``new`` (the munged spec compared afterwards)."""
    errs: list[FieldError] = []
    old_gates = [g.get("name") for g in old.get("schedulingGates") or [] if isinstance(g, dict)]
    for i, gate in enumerate(new.get("schedulingGates") or []):
        name = gate.get("name") if isinstance(gate, dict) else None
        if name not in old_gates:
            errs.append(field_forbidden(f"spec.schedulingGates[{i}].name",
                                        f"only deletion is allowed, but found new scheduling gate '{name}'"))
    _copy_key(new, old, "schedulingGates")
    if old_gates:
        old_sel, new_sel = old.get("nodeSelector") or {}, new.get("nodeSelector") or {}
        if any(new_sel.get(k) != v for k, v in old_sel.items()):
            errs.append(field_invalid("spec.nodeSelector", _GoMap(new_sel),
                                      "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
        _copy_key(new, old, "nodeSelector")
    return errs


def _copy_key(dst: dict[str, Any], src: dict[str, Any], key: str) -> None:
    if key in src:
        dst[key] = src[key]
    else:
        dst.pop(key, None)
