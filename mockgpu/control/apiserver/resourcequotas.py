"""ResourceQuota's strategy: ``PrepareForCreate``/``PrepareForUpdate`` (``pkg/registry/core/resourcequota``),
``ValidateResourceQuota``/``ValidateResourceQuotaUpdate``/``ValidateResourceQuotaStatusUpdate`` with upstream's
field paths and texts (``pkg/apis/core/validation``), and ``kubectl get quota``'s printer
(``pkg/printers/internalversion``: Name, Request, Limit, Age; ``used/hard`` per resource of ``status.hard``)."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from typing import Any

from mockgpu.apimachinery.names import is_extended_resource_name, qualified_name
from mockgpu.apimachinery.quantity import QuantityError, canonical, milli_value, parse_quantity
from mockgpu.apimachinery.status import FieldError, field_invalid, field_required
from mockgpu.control.apiserver.printers import AGE, NAME, Printer, since
from mockgpu.control.quota.resources import (
    INTEGER_RESOURCES,
    SCOPES,
    Quantity,
    is_standard_quota_resource_name,
    is_standard_resource_name,
    scope_valid_for_resource,
)

Obj = dict[str, Any]


class GoJSON:
    """A field error's value that Go prints as JSON (a slice or struct: ``["BestEffort","NotBestEffort"]``)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return json.dumps(self.value, separators=(",", ":"))


def validate_resource_name(value: str, path: str) -> list[FieldError]:
    """``validateResourceName``: a qualified name; without a domain, a standard resource."""
    errs = [field_invalid(path, value, m) for m in qualified_name(value)]
    if errs:
        return errs
    if "/" not in value and not is_standard_resource_name(value):
        errs.append(field_invalid(path, value, "must be a standard resource type or fully qualified"))
    return errs


def validate_quota_resource_name(value: str, path: str) -> list[FieldError]:
    """``ValidateResourceQuotaResourceName``."""
    errs = validate_resource_name(value, path)
    if "/" not in value and not is_standard_quota_resource_name(value):
        errs.append(field_invalid(path, value, "must be a standard resource for quota"))
    return errs


def validate_quantity_value(name: str, raw: Any, path: str) -> list[FieldError]:
    """``ValidateResourceQuantityValue``: not negative; whole for counted and extended resources."""
    try:
        value = parse_quantity(raw)
    except (QuantityError, TypeError):
        return []  # the decoder refused it already
    errs: list[FieldError] = []
    if value < 0:
        errs.append(field_invalid(path, canonical(raw), "must be greater than or equal to 0"))
    if (name in INTEGER_RESOURCES or is_extended_resource_name(name)) and milli_value(raw) % 1000 != 0:
        errs.append(field_invalid(path, canonical(raw), "must be an integer"))
    return errs


def _validate_list(raw: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in sorted(raw or {}):
        key = f"{path}[{name}]"
        errs += validate_quota_resource_name(name, key) + validate_quantity_value(name, raw[name], key)
    return errs


_CONFLICTING = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
_EXISTS_ONLY = ("BestEffort", "NotBestEffort", "Terminating", "NotTerminating", "CrossNamespacePodAffinity")


def _validate_scopes(spec: Obj) -> list[FieldError]:
    """``validateResourceQuotaScopes``."""
    scopes = list(spec.get("scopes") or [])
    if not scopes:
        return []
    errs: list[FieldError] = []
    hard = sorted(spec.get("hard") or {})
    for scope in scopes:
        if scope not in SCOPES:
            errs.append(field_invalid("spec.scopes", GoJSON(scopes), "unsupported scope"))
        for name in hard:
            if is_standard_quota_resource_name(name) and not scope_valid_for_resource(scope, name):
                errs.append(field_invalid("spec.scopes", GoJSON(scopes), "unsupported scope applied to resource"))
    errs += [field_invalid("spec.scopes", GoJSON(scopes), "conflicting scopes")
             for pair in _CONFLICTING if set(pair) <= set(scopes)]
    return errs


def _validate_scope_selector(spec: Obj) -> list[FieldError]:
    """``validateScopedResourceSelectorRequirement``."""
    selector = spec.get("scopeSelector")
    if selector is None:
        return []
    path = "spec.scopeSelector.matchExpressions"
    errs: list[FieldError] = []
    hard = sorted(spec.get("hard") or {})
    seen: set[str] = set()
    for req in selector.get("matchExpressions") or []:
        scope, op, values = req.get("scopeName") or "", req.get("operator") or "", list(req.get("values") or [])
        if scope not in SCOPES:
            errs.append(field_invalid(f"{path}.scopeName", scope, "unsupported scope"))
        for name in hard:
            if is_standard_quota_resource_name(name) and not scope_valid_for_resource(scope, name):
                errs.append(field_invalid(path, GoJSON(selector), "unsupported scope applied to resource"))
        if scope in _EXISTS_ONLY and op != "Exists":
            errs.append(field_invalid(f"{path}.operator", op, "must be 'Exists' when scope is any of "
                                      "ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
                                      "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
                                      "ResourceQuotaScopeCrossNamespacePodAffinity"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(field_required(f"{path}.values", "must be at least one value when `operator` is 'In' "
                                                             "or 'NotIn' for scope selector"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(field_invalid(f"{path}.values", GoJSON(values), "must be no value when `operator` is "
                                          "'Exist' or 'DoesNotExist' for scope selector"))
        else:
            errs.append(field_invalid(f"{path}.operator", op, "not a valid selector operator"))
        seen.add(scope)
    errs += [field_invalid(path, GoJSON(spec.get("scopes")), "conflicting scopes")
             for pair in _CONFLICTING if set(pair) <= seen]
    return errs


def validate_spec(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    return _validate_list(spec.get("hard"), "spec.hard") + _validate_scopes(spec) + _validate_scope_selector(spec)


def validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateResourceQuota`` on create; ``ValidateResourceQuotaUpdate`` (scopes are immutable) on update."""
    errs = validate_spec(obj)
    if old is None:
        status = obj.get("status") or {}
        return errs + _validate_list(status.get("hard"), "status.hard") + _validate_list(status.get("used"),
                                                                                        "status.used")
    new_scopes, old_scopes = (obj.get("spec") or {}).get("scopes") or [], (old.get("spec") or {}).get("scopes") or []
    if set(new_scopes) != set(old_scopes):
        errs.append(field_invalid("spec.scopes", GoJSON(new_scopes or None), "field is immutable"))
    return errs


def validate_status(obj: Obj, old: Obj) -> list[FieldError]:
    """``ValidateResourceQuotaStatusUpdate``."""
    status = obj.get("status") or {}
    return _validate_list(status.get("hard"), "status.hard") + _validate_list(status.get("used"), "status.used")


def prepare(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """A created quota has an empty status (the quota controller fills it); an update keeps the other half."""
    if old is None:
        obj["status"] = {}
    elif subresource == "status":
        obj["spec"] = copy.deepcopy(old.get("spec") or {})
    return obj


def quantities(obj: Obj) -> list[dict[str, Any]]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [m for m in (spec.get("hard"), status.get("hard"), status.get("used")) if isinstance(m, dict)]


# ---- kubectl get quota --------------------------------------------------------------------------------------------

def _column(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "type": "string", "format": "", "description": description, "priority": 0}


COLUMNS = [NAME, _column("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
           _column("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent "
                            "of contention on the node."), AGE]


def _q(raw: Any) -> str:
    try:
        return str(Quantity.parse(raw))
    except (QuantityError, TypeError):
        return "0"


def row(obj: Obj, now: datetime) -> dict[str, Any]:
    """``printResourceQuota``: ``<resource>: <used>/<hard>`` for each resource of ``status.hard`` (sorted),
    those named ``limits.*`` in the Limit column."""
    status = obj.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    request: list[str] = []
    limit: list[str] = []
    for name in sorted(hard):
        (limit if name.split(".")[0] == "limits" and "." in name else request).append(
            f"{name}: {_q(used.get(name, '0'))}/{_q(hard[name])}")
    meta = obj.get("metadata") or {}
    return {"cells": [meta.get("name", ""), ", ".join(request), ", ".join(limit),
                      since(meta.get("creationTimestamp"), now)]}


PRINTER: Printer = (COLUMNS, row)
