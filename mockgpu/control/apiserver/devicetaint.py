"""Device taints and tolerations (DRA, KEP-5055) and the ``DeviceTaintRule`` kind of ``resource.k8s.io/v1``.

As kube-apiserver v1.37.2, where ``DRADeviceTaints`` and ``DRADeviceTaintRules`` are GA and on
(``pkg/features/kube_features.go``) and ``devicetaintrules`` (with ``/status``) is served in ``resource.k8s.io/v1``
(``pkg/registry/resource/rest/storage_resource.go``):

- defaults (``pkg/apis/resource/v1/defaults.go``, ``zz_generated.defaults.go``): a taint's ``timeAdded`` is now
  (whole seconds), a toleration's ``operator`` is ``Equal``;
- validation (``pkg/apis/resource/validation``): ``validateDeviceTaint`` (key a label name, value a label value,
  effect required and one of ``NoExecute``/``NoSchedule``/``None``, checked only when new or changed),
  ``validateDeviceToleration`` (key a label name when set, operator ``Exists`` with no value or ``Equal`` with a
  label value, effect empty or one of the three), ``validateDeviceTaintSelector`` (driver, pool and device names),
  and ``ValidateDeviceTaintRuleStatusUpdate`` (metav1 conditions, at most 8);
- the strategy (``pkg/registry/resource/devicetaintrule/strategy.go``): status reset on create, kept on spec
  updates and the only thing ``/status`` changes; generation 1 on create and bumped on every spec change; a new
  effect with an unchanged ``timeAdded`` gets ``timeAdded`` now.

Simplified: a condition's ``message`` length (32 KiB) is not checked; the errors come in field order (upstream
appends its declarative ones last).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from mockgpu.apimachinery.names import dns1123_label, dns1123_subdomain, label_value, qualified_name
from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.apiserver.status import (
    FieldError,
    field_duplicate,
    field_invalid,
    field_not_supported,
    field_required,
    field_too_long,
)

TAINTS_MAX = 16  # resource.DeviceTaintsMaxLength
TOLERATIONS_MAX = 16  # resource.DeviceTolerationsMaxLength
RULE_CONDITIONS_MAX = 8  # resource.DeviceTaintRuleStatusMaxConditions
EFFECTS = ("NoExecute", "NoSchedule", "None")  # sets.List order, as the NotSupported error prints them
OPERATORS = ("Equal", "Exists")
CONDITION_STATUSES = ("False", "True", "Unknown")
_DRIVER_MAX, _POOL_MAX, _REASON_MAX = 63, 253, 1024
_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON_RE = re.compile(f"^{_REASON_FMT}$")
_REASON_MSG = ("a condition reason must start with alphabetic character, optionally followed by a string of "
               "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
               "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used "
               f"for validation is '{_REASON_FMT}')")


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


# ---- defaults -----------------------------------------------------------------------------------------------

def default_taint(taint: Any) -> None:
    """``SetDefaults_DeviceTaint``: ``timeAdded`` now, truncated to the second."""
    if isinstance(taint, dict) and taint.get("timeAdded") is None:
        taint["timeAdded"] = rfc3339()


def default_tolerations(request: Any) -> None:
    """The generated defaults of a request's (or sub-request's) tolerations: ``operator: Equal``."""
    for tol in _l(_d(request).get("tolerations")):
        if isinstance(tol, dict) and not tol.get("operator"):
            tol["operator"] = "Equal"


# ---- validation ---------------------------------------------------------------------------------------------

def _label_name(value: str, path: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelName``: a qualified name (an empty one is Invalid: "must be non-empty")."""
    return [field_invalid(path, value, m) for m in qualified_name(value)]


def _label_value(value: str, path: str) -> list[FieldError]:
    return [field_invalid(path, value, m) for m in label_value(value)]


def validate_taint(taint: Any, old: Any, path: str) -> list[FieldError]:
    """``validateDeviceTaint``; the effect is checked only when it is new or changed (``old`` is the stored taint,
    None on create)."""
    taint = _d(taint)
    errs = _label_name(_s(taint.get("key")), f"{path}.key")
    value = _s(taint.get("value"))
    if value:
        errs += _label_value(value, f"{path}.value")
    effect = _s(taint.get("effect"))
    if old is None or _s(_d(old).get("effect")) != effect:
        if not effect:
            errs.append(field_required(f"{path}.effect"))
        elif effect not in EFFECTS:
            errs.append(field_not_supported(f"{path}.effect", effect, EFFECTS))
    return errs


def validate_taints(taints: Any, old_taints: Any, path: str) -> list[FieldError]:
    """A device's ``taints`` (``validateSlice``: at most 16), checked only when they changed (upstream compares the
    device's old taints as a whole)."""
    items = _l(taints)
    if old_taints is not None and items == _l(old_taints):
        return []
    if len(items) > TAINTS_MAX:
        return [FieldError(path, "TooMany", f"must have at most {TAINTS_MAX} items", len(items))]
    errs: list[FieldError] = []
    for i, t in enumerate(items):
        errs += validate_taint(t, None, f"{path}[{i}]")
    return errs


def validate_toleration(tol: Any, path: str) -> list[FieldError]:
    """``validateDeviceToleration``."""
    tol = _d(tol)
    errs: list[FieldError] = []
    key = _s(tol.get("key"))
    if key:
        errs += _label_name(key, f"{path}.key")
    op, value = _s(tol.get("operator")), _s(tol.get("value"))
    if op == "Exists":
        if value:
            errs.append(field_invalid(f"{path}.value", value, "must be empty for operator `Exists`"))
    elif op == "Equal":
        errs += _label_value(value, f"{path}.value")
    elif not op:
        errs.append(field_required(f"{path}.operator"))
    else:
        errs.append(field_not_supported(f"{path}.operator", op, OPERATORS))
    effect = _s(tol.get("effect"))
    if effect and effect not in EFFECTS:
        errs.append(field_not_supported(f"{path}.effect", effect, EFFECTS))
    return errs


def validate_tolerations(request: Any, path: str) -> list[FieldError]:
    """A request's ``tolerations`` (at most 16)."""
    items = _l(_d(request).get("tolerations"))
    if len(items) > TOLERATIONS_MAX:
        return [FieldError(f"{path}.tolerations", "TooMany", f"must have at most {TOLERATIONS_MAX} items",
                           len(items))]
    errs: list[FieldError] = []
    for i, t in enumerate(items):
        errs += validate_toleration(t, f"{path}.tolerations[{i}]")
    return errs


def _selector(sel: Any, path: str) -> list[FieldError]:
    """``validateDeviceTaintSelector``: each name that is set, by its kind's rule."""
    if sel is None:
        return []
    sel = _d(sel)
    errs: list[FieldError] = []
    if sel.get("driver") is not None:
        driver, p = _s(sel["driver"]), f"{path}.driver"
        if not driver:
            errs.append(field_required(p))
        else:
            if len(driver) > _DRIVER_MAX:
                errs.append(field_too_long(p, _DRIVER_MAX))
            errs += [field_invalid(p, driver, m) for m in dns1123_subdomain(driver.lower())]
    if sel.get("pool") is not None:
        pool, p = _s(sel["pool"]), f"{path}.pool"
        if not pool:
            errs.append(field_required(p))
        else:
            if len(pool) > _POOL_MAX:
                errs.append(field_too_long(p, _POOL_MAX))
            for part in pool.split("/"):
                errs += [field_invalid(p, part, m) for m in dns1123_subdomain(part)]
    if sel.get("device") is not None:
        device = _s(sel["device"])
        errs += [field_invalid(f"{path}.device", device, m) for m in dns1123_label(device)]
    return errs


def _conditions(conditions: Any, path: str) -> list[FieldError]:
    """``metav1validation.ValidateConditions``."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, c in enumerate(_l(conditions)):
        c, p = _d(c), f"{path}[{i}]"
        ctype = _s(c.get("type"))
        if ctype in seen:
            errs.append(field_duplicate(p, ctype))
        seen.add(ctype)
        errs += [field_required(f"{p}.type", "is required")] if not ctype else _label_name(ctype, f"{p}.type")
        status = _s(c.get("status"))
        if not status:
            errs.append(field_required(f"{p}.status"))
        elif status not in CONDITION_STATUSES:
            errs.append(field_not_supported(f"{p}.status", status, CONDITION_STATUSES))
        gen = c.get("observedGeneration")
        if isinstance(gen, int) and gen < 0:
            errs.append(field_invalid(f"{p}.observedGeneration", gen, "must be greater than or equal to zero"))
        if not c.get("lastTransitionTime"):
            errs.append(field_required(f"{p}.lastTransitionTime"))
        reason = _s(c.get("reason"))
        if not reason:
            errs.append(field_required(f"{p}.reason"))
        else:
            if not _REASON_RE.match(reason):
                errs.append(field_invalid(f"{p}.reason", reason, _REASON_MSG))
            if len(reason) > _REASON_MAX:
                errs.append(field_too_long(f"{p}.reason", _REASON_MAX))
    return errs


# ---- the DeviceTaintRule strategy ---------------------------------------------------------------------------

def prepare_rule(obj: dict[str, Any], old: dict[str, Any] | None, subresource: str) -> dict[str, Any]:
    """Defaults, then ``PrepareForCreate``/``PrepareForUpdate`` of the strategy or the status strategy."""
    if obj.get("spec") is None:
        obj["spec"] = {}
    spec = obj["spec"]
    if isinstance(spec, dict):
        if spec.get("taint") is None:
            spec["taint"] = {}
        default_taint(spec["taint"])
    meta = obj.setdefault("metadata", {})
    if old is None:
        obj["status"] = {}
        meta["generation"] = 1
        return obj
    if subresource == "status":
        obj["spec"] = copy.deepcopy(old.get("spec", {}))
        return obj
    obj["status"] = copy.deepcopy(old.get("status", {}))
    taint, old_taint = _d(_d(obj["spec"]).get("taint")), _d(_d(old.get("spec")).get("taint"))
    if taint.get("effect") != old_taint.get("effect") and taint.get("timeAdded") == old_taint.get("timeAdded"):
        taint["timeAdded"] = rfc3339()
    generation = _d(old.get("metadata")).get("generation") or 1
    meta["generation"] = generation + 1 if obj["spec"] != old.get("spec") else generation
    return obj


def validate_rule(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """``ValidateDeviceTaintRule`` / ``ValidateDeviceTaintRuleUpdate`` (the metadata is checked by the server)."""
    spec = _d(obj.get("spec"))
    old_taint = _d(_d(old.get("spec")).get("taint")) if old is not None else None
    return _selector(spec.get("deviceSelector"), "spec.deviceSelector") + \
        validate_taint(spec.get("taint"), old_taint, "spec.taint")


def validate_rule_status(obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """``ValidateDeviceTaintRuleStatusUpdate``."""
    conditions = _l(_d(obj.get("status")).get("conditions"))
    errs = _conditions(conditions, "status.conditions")
    if len(conditions) > RULE_CONDITIONS_MAX:
        errs.append(FieldError("status.conditions", "TooMany", f"must have at most {RULE_CONDITIONS_MAX} items",
                               len(conditions)))
    return errs
