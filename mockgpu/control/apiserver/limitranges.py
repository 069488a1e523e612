"""LimitRange: its defaults (``SetDefaults_LimitRangeItem``), strategy (``PrepareForCreate`` names a nameless
one with a UUID) and ``ValidateLimitRange`` with upstream's texts, and the LimitRanger admission plugin
(``plugin/pkg/admission/limitranger``) for pods: on create, containers without a request or limit get the
namespace's LimitRanges' ``defaultRequest``/``default`` (annotated ``kubernetes.io/limit-ranger``), then every
``Container`` and ``Pod`` item's ``min``, ``max`` and ``maxLimitRequestRatio`` is enforced (403).

Simplified: PersistentVolumeClaim items are validated but enforce nothing (no PVCs are served); pod-level
resources (``spec.resources``) are not read.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from mockgpu.apimachinery.names import is_extended_resource_name, is_native_resource_name, qualified_name
from mockgpu.apimachinery.quantity import QuantityError, canonical, parse_quantity
from mockgpu.apimachinery.status import FieldError, field_duplicate, field_forbidden, field_invalid, field_required
from mockgpu.control.apiserver.resourcequotas import validate_resource_name
from mockgpu.control.quota.resources import Quantity, add, parse_list

Obj = dict[str, Any]
ANNOTATION = "kubernetes.io/limit-ranger"
_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
_STANDARD_CONTAINER = ("cpu", "memory", "ephemeral-storage")
_PARTS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")
_MAX_MILLI = 2**63 // 1000  # resource.MaxMilliValue


# ---- defaults and strategy --------------------------------------------------------------------------------------

def default_item(item: Obj) -> None:
    """``SetDefaults_LimitRangeItem``: for Container items, ``default`` from ``max``, ``defaultRequest`` from
    ``default``, then from ``min``."""
    if item.get("type") != "Container":
        return
    default = item.setdefault("default", {}) if isinstance(item.get("default", {}), dict) else {}
    request = item.setdefault("defaultRequest", {}) if isinstance(item.get("defaultRequest", {}), dict) else {}
    for source, target in (("max", default), ("default", request), ("min", request)):
        for key, value in dict(item.get(source) or {}).items():
            target.setdefault(key, value)


def prepare(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    for item in (obj.get("spec") or {}).get("limits") or []:
        if isinstance(item, dict):
            default_item(item)
    if old is None and not (obj.get("metadata") or {}).get("name") and not obj["metadata"].get("generateName"):
        obj["metadata"]["name"] = str(uuid.uuid4())
    return obj


def quantities(obj: Obj) -> list[dict[str, Any]]:
    return [item[p] for item in (obj.get("spec") or {}).get("limits") or [] if isinstance(item, dict)
            for p in _PARTS if isinstance(item.get(p), dict)]


# ---- ValidateLimitRange -------------------------------------------------------------------------------------------

def _container_resource_name(value: str, path: str) -> list[FieldError]:
    """``ValidateContainerResourceName``."""
    errs = validate_resource_name(value, path)
    if "/" not in value:
        if value not in _STANDARD_CONTAINER and not value.startswith("hugepages-"):
            errs.append(field_invalid(path, value, "must be a standard resource for containers"))
    elif not is_native_resource_name(value) and not is_extended_resource_name(value):
        errs.append(field_invalid(path, value, "doesn't follow extended resource name standard"))
    return errs


def _type_name(value: str, path: str) -> list[FieldError]:
    errs = [field_invalid(path, value, m) for m in qualified_name(value)]
    if not errs and "/" not in value and value not in _TYPES:
        errs.append(field_invalid(path, value, "must be a standard limit type or fully qualified"))
    return errs


def _q(raw: Any) -> Fraction | None:
    try:
        return parse_quantity(raw)
    except (QuantityError, TypeError):
        return None


def _overcommit_allowed(name: str) -> bool:
    return is_native_resource_name(name) and not name.startswith("hugepages-")


def _milli_or_value(*qs: Fraction) -> list[int]:
    """``Value()``s, or ``MilliValue()``s when every one fits (upstream's comparisons of ratios)."""
    values = [-((-q.numerator) // q.denominator) for q in qs]
    if all(v < _MAX_MILLI for v in values):
        return [-((-(q * 1000).numerator) // (q * 1000).denominator) for q in qs]
    return values


def _reader(item: Obj, path: str, check: Callable[[str, str], list[FieldError]],
            parts: dict[str, dict[str, Fraction]], errs: list[FieldError]) -> Callable[[str], None]:
    """Reads one part (``max``, ``min``, ...) of a limit: its names checked, its quantities kept."""
    def read(part: str) -> None:
        for k, v in (item.get(part) or {}).items():
            errs.extend(check(k, f"{path}.{part}[{k}]"))
            q = _q(v)
            if q is not None:
                parts[part][k] = q
    return read


def validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateLimitRange`` (create and update alike)."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, item in enumerate((obj.get("spec") or {}).get("limits") or []):
        item = item if isinstance(item, dict) else {}
        path = f"spec.limits[{i}]"
        typ = item.get("type") or ""
        errs += _type_name(typ, f"{path}.type")
        if typ in seen:
            errs.append(field_duplicate(f"{path}.type", typ))
        seen.add(typ)
        check = _container_resource_name if typ in ("Pod", "Container") else validate_resource_name
        parts: dict[str, dict[str, Fraction]] = {p: {} for p in _PARTS}
        read = _reader(item, path, check, parts, errs)
        read("max")
        read("min")
        if typ == "Pod":
            for part in ("default", "defaultRequest"):
                if item.get(part):
                    errs.append(field_forbidden(f"{path}.{part}", "may not be specified when `type` is 'Pod'"))
        else:
            read("default")
            read("defaultRequest")
        if typ == "PersistentVolumeClaim" and "storage" not in (item.get("min") or {}) and \
                "storage" not in (item.get("max") or {}):
            errs.append(field_required(f"{path}.limits", "either minimum or maximum storage value is required, but "
                                                         "neither was provided"))
        read("maxLimitRequestRatio")
        keys = set().union(*(set(p) for p in parts.values()))
        for k in sorted(keys):
            errs += _check_key(path, k, parts)
    return errs


def _check_key(path: str, k: str, parts: dict[str, dict[str, Fraction]]) -> list[FieldError]:
    mn, mx = parts["min"].get(k), parts["max"].get(k)
    dflt, dreq, ratio = parts["default"].get(k), parts["defaultRequest"].get(k), parts["maxLimitRequestRatio"].get(k)
    c = canonical
    errs: list[FieldError] = []
    if mn is not None and mx is not None and mn > mx:
        errs.append(field_invalid(f"{path}.min[{k}]", c(mn), f"min value {c(mn)} is greater than max value {c(mx)}"))
    if dreq is not None and mn is not None and mn > dreq:
        errs.append(field_invalid(f"{path}.defaultRequest[{k}]", c(dreq),
                                  f"min value {c(mn)} is greater than default request value {c(dreq)}"))
    if dreq is not None and mx is not None and dreq > mx:
        errs.append(field_invalid(f"{path}.defaultRequest[{k}]", c(dreq),
                                  f"default request value {c(dreq)} is greater than max value {c(mx)}"))
    if dreq is not None and dflt is not None and dreq > dflt:
        errs.append(field_invalid(f"{path}.defaultRequest[{k}]", c(dreq),
                                  f"default request value {c(dreq)} is greater than default limit value {c(dflt)}"))
    if dflt is not None and mn is not None and mn > dflt:
        errs.append(field_invalid(f"{path}.default[{k}]", c(mn), f"min value {c(mn)} is greater than default value "
                                                                 f"{c(dflt)}"))
    if dflt is not None and mx is not None and dflt > mx:
        errs.append(field_invalid(f"{path}.default[{k}]", c(mx), f"default value {c(dflt)} is greater than max value "
                                                                 f"{c(mx)}"))
    if ratio is not None and ratio < 1:
        errs.append(field_invalid(f"{path}.maxLimitRequestRatio[{k}]", c(ratio), f"ratio {c(ratio)} is less than 1"))
    if ratio is not None and mn is not None and mx is not None:
        r, lo, hi = _ceil(ratio), _ceil(mn), _ceil(mx)
        ratio_value = float(r)
        if r < _MAX_MILLI and lo < _MAX_MILLI and hi < _MAX_MILLI:
            ratio_value, lo, hi = _ceil(ratio * 1000) / 1000, _ceil(mn * 1000), _ceil(mx * 1000)
        limit = hi / lo if lo else float("inf")
        if ratio_value > limit:
            errs.append(field_invalid(f"{path}.maxLimitRequestRatio[{k}]", c(ratio),
                                      f"ratio {c(ratio)} is greater than max/min = {limit:f}"))
    if not _overcommit_allowed(k) and dflt is not None and dreq is not None and dflt != dreq:
        errs.append(field_invalid(f"{path}.defaultRequest[{k}]", c(dreq),
                                  f"default value {c(dflt)} must equal to defaultRequest value {c(dreq)} in {k}"))
    return errs


# ---- the LimitRanger admission plugin (pods) ------------------------------------------------------------------------

def _container_lists(pod: Obj) -> list[tuple[str, list[Obj]]]:
    spec = pod.get("spec") or {}
    return [("container", [c for c in spec.get("containers") or [] if isinstance(c, dict)]),
            ("init container", [c for c in spec.get("initContainers") or [] if isinstance(c, dict)])]


def admit(pod: Obj, limit_ranges: Iterable[Obj]) -> None:
    """``PodMutateLimitFunc`` for each LimitRange in turn: missing requests and limits from its Container
    item(s), recorded in the ``kubernetes.io/limit-ranger`` annotation. The decoder's own default comes first,
    as upstream decodes before it admits: a container's limits are its requests where it states none."""
    for _, containers in _container_lists(pod):
        for c in containers:
            res = c.get("resources")
            if isinstance(res, dict) and isinstance(res.get("limits"), dict) and res["limits"]:
                stated = res.setdefault("requests", {})
                if isinstance(stated, dict):
                    for k, v in res["limits"].items():
                        stated.setdefault(k, v)
    for lr in limit_ranges:
        requests: dict[str, Any] = {}
        limits: dict[str, Any] = {}
        for item in (lr.get("spec") or {}).get("limits") or []:
            if isinstance(item, dict) and item.get("type") == "Container":
                requests.update(item.get("defaultRequest") or {})
                limits.update(item.get("default") or {})
        notes: list[str] = []
        for label, containers in _container_lists(pod):
            for c in containers:
                res = c.setdefault("resources", {})
                have_l, have_r = res.setdefault("limits", {}), res.setdefault("requests", {})
                set_l = sorted(k for k in limits if k not in have_l)
                set_r = sorted(k for k in requests if k not in have_r)
                for k in set_l:
                    have_l[k] = limits[k]
                for k in set_r:
                    have_r[k] = requests[k]
                if not have_l:
                    res.pop("limits")
                if not have_r:
                    res.pop("requests")
                name = c.get("name") or ""
                if set_r:
                    notes.append(f"{', '.join(set_r)} request for {label} {name}")
                if set_l:
                    notes.append(f"{', '.join(set_l)} limit for {label} {name}")
        if notes:
            pod.setdefault("metadata", {}).setdefault("annotations", {})[ANNOTATION] = \
                "LimitRanger plugin set: " + "; ".join(notes)


def _values(*qs: Quantity) -> list[int]:
    """``requestLimitEnforcedValues``: milli-values when all fit, else values."""
    return _milli_or_value(*(q.value for q in qs))


_ZERO = Quantity(Fraction(0))
Resources = dict[str, Quantity]


def _min(kind: str, name: str, enforced: Quantity, req: Resources, lim: Resources) -> str | None:
    if name not in req:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    r, lv, ev = _values(req[name], lim.get(name, _ZERO), enforced)
    if r < ev:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {req[name]}"
    if name in lim and lv < ev:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {lim[name]}"
    return None


def _max(kind: str, name: str, enforced: Quantity, req: Resources, lim: Resources) -> str | None:
    if name not in lim:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    r, lv, ev = _values(req.get(name, _ZERO), lim[name], enforced)
    if lv > ev:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {lim[name]}"
    if name in req and r > ev:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {req[name]}"
    return None


def _ceil(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def _ratio(kind: str, name: str, enforced: Quantity, req: Resources, lim: Resources) -> str | None:
    r, lv, _ = _values(req.get(name, _ZERO), lim.get(name, _ZERO), enforced)
    if name not in req or r == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, but no request is specified or "
                "request is 0")
    if name not in lim or lv == 0:
        return f"{name} max limit to request ratio per {kind} is {enforced}, but no limit is specified or limit is 0"
    observed = lv / r
    shown = observed
    max_ratio = float(_ceil(enforced.value))
    if _ceil(enforced.value) <= _MAX_MILLI:
        observed, max_ratio = observed * 1000, float(_ceil(enforced.value * 1000))
    if observed > max_ratio:
        return f"{name} max limit to request ratio per {kind} is {enforced}, but provided ratio is {shown:f}"
    return None


def _parsed(raw: Any) -> Resources:
    return parse_list(raw if isinstance(raw, dict) else None)


def _pod_totals(pod: Obj, part: str) -> Resources:
    """The limitranger's ``podRequests``/``podLimits``: containers summed, raised to each init container's need
    (sidecars added to both)."""
    total: Resources = {}
    for c in _container_lists(pod)[0][1]:
        total = add(total, _parsed((c.get("resources") or {}).get(part)))
    sidecars: Resources = {}
    for c in _container_lists(pod)[1][1]:
        own = _parsed((c.get("resources") or {}).get(part))
        if c.get("restartPolicy") == "Always":
            total, sidecars = add(total, own), add(sidecars, own)
            need = dict(sidecars)
        else:
            need = add(own, sidecars)
        for k, v in need.items():
            if k not in total or v.value > total[k].value:
                total[k] = v
    return total


def check(pod: Obj, limit_ranges: Iterable[Obj]) -> str | None:
    """``PodValidateLimitFunc`` over each LimitRange: the first range's errors as Go's aggregate prints them
    (one message, or ``[a, b]``), or None."""
    for lr in limit_ranges:
        msgs: list[str] = []
        for item in (lr.get("spec") or {}).get("limits") or []:
            if not isinstance(item, dict):
                continue
            typ = item.get("type")
            if typ == "Container":
                targets = [(_parsed((c.get("resources") or {}).get("requests")),
                            _parsed((c.get("resources") or {}).get("limits")))
                           for _, cs in _container_lists(pod) for c in cs]
            elif typ == "Pod":
                targets = [(_pod_totals(pod, "requests"), _pod_totals(pod, "limits"))]
            else:
                continue
            for req, lim in targets:
                for part, fn in (("min", _min), ("max", _max), ("maxLimitRequestRatio", _ratio)):
                    for name, enforced in _parsed(item.get(part)).items():
                        msg = fn(str(typ), name, enforced, req, lim)
                        if msg is not None:
                            msgs.append(msg)
        unique = list(dict.fromkeys(msgs))
        if unique:
            return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return None

