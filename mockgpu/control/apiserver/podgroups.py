"""``scheduling.k8s.io/v1beta1`` Workload and PodGroup (gang scheduling, KEP-4671): defaults, the strategies'
Prepare* and validation, with v1.37.2's field paths and texts.

Upstream: ``pkg/registry/scheduling/{workload,podgroup}/strategy.go`` (status reset on create and kept apart on
update; fields of disabled gates dropped unless already in use), ``pkg/apis/scheduling/v1beta1/defaults.go``,
``pkg/apis/scheduling/validation/validation.go`` and the declarative rules generated from the types' tags
(``pkg/apis/scheduling/v1beta1/zz_generated.validations.go``: the unions ``must specify one of: `basic`, `gang```,
``minCount`` required and at least 1, the immutable fields, ``gang`` that cannot be set or cleared once created,
at most 8 templates that cannot be added or removed). Served only with the ``GenericWorkload`` gate, as
``pkg/registry/scheduling/rest/storage_scheduling.go`` installs them.

Simplified (said in docs/conformance.md): the fields of gates mockgpu does not model are dropped as upstream drops
them with the gate off, whatever the gate says (``schedulingConstraints`` of TopologyAwareWorkloadScheduling,
``resourceClaims`` of DRAWorkloadResourceClaims, ``parentCompositePodGroupName`` and ``compositePodGroupTemplates``
of CompositePodGroup); the ``preemptionPolicy`` of PodGroupPreemptionPolicy is defaulted and kept immutable only with
that gate; status conditions are stored as sent (no ``metav1.Condition`` checks). Workload's cross-template rules
(priority shared by the hierarchy) concern only composite templates, which are not served.
"""

from __future__ import annotations

import copy
from typing import Any

from mockgpu.apimachinery import names
from mockgpu.apimachinery.status import FieldError, field_duplicate, field_forbidden, field_invalid, field_required
from mockgpu.config.featuregates import FeatureGates

Obj = dict[str, Any]
IMMUTABLE = "field is immutable"
MAX_TEMPLATES = 8
MAX_PRIORITY = 1_000_000_000  # HighestUserDefinablePriority
PODGROUP_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
#: the fields of gates not modelled here, dropped as with the gate off (see the module docstring)
_UNMODELLED_SPEC = ("parentCompositePodGroupName", "schedulingConstraints", "resourceClaims")
_UNMODELLED_TEMPLATE = ("schedulingConstraints", "resourceClaims")


def _d(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _keep_other_half(obj: Obj, old: Obj | None, subresource: str) -> None:
    """Status reset on create; on update only ``/status`` changes the status, and only the status."""
    if old is None:
        obj["status"] = {}  # a Go struct: always encoded, empty until the scheduler writes a condition
    elif subresource == "status":
        obj["spec"] = copy.deepcopy(old.get("spec", {}))
    else:
        obj["status"] = copy.deepcopy(old.get("status", {}))


def _default_policy_holder(holder: Obj) -> None:
    """``+default={"single": {}}`` on disruptionMode."""
    if holder.get("disruptionMode") is None:
        holder["disruptionMode"] = {"single": {}}


def _gated_policy_holder(holder: Obj, old: Obj | None, gates: FeatureGates) -> None:
    """``SetDefaults_PodGroup``'s preemptionPolicy with PodGroupPreemptionPolicy on; without it the field is
    dropped unless the old object uses it (``dropDisabledPreemptionPolicyField``)."""
    if gates.enabled("PodGroupPreemptionPolicy"):
        if holder.get("preemptionPolicy") is None:
            holder["preemptionPolicy"] = "PreemptLowerPriority"
    elif old is None or old.get("preemptionPolicy") is None:
        holder.pop("preemptionPolicy", None)


def prepare_podgroup(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """PodGroup: defaults, then the strategy's PrepareForCreate/PrepareForUpdate (the unmodelled gates' fields
    dropped unless the old object uses them)."""
    _keep_other_half(obj, old, subresource)
    spec = obj.get("spec")
    if isinstance(spec, dict) and subresource != "status":
        old_spec = _d((old or {}).get("spec")) if old is not None else None
        for key in _UNMODELLED_SPEC:
            if old_spec is None or old_spec.get(key) is None:
                spec.pop(key, None)
        _default_policy_holder(spec)
    return obj


def _templates(obj: Obj | None) -> dict[Any, Obj]:
    spec = _d((obj or {}).get("spec"))
    return {t.get("name"): t for t in _l(spec.get("podGroupTemplates")) if isinstance(t, dict)}


def prepare_workload(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """Workload: each template's defaults (the same as a PodGroup's), the unmodelled gates' fields dropped."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        old_spec = _d((old or {}).get("spec")) if old is not None else None
        if old_spec is None or old_spec.get("compositePodGroupTemplates") is None:
            spec.pop("compositePodGroupTemplates", None)
        before = _templates(old)
        for template in _l(spec.get("podGroupTemplates")):
            if isinstance(template, dict):
                was = before.get(template.get("name")) if old is not None else None
                for key in _UNMODELLED_TEMPLATE:
                    if was is None or was.get(key) is None:
                        template.pop(key, None)
                _default_policy_holder(template)
    return obj


def gated_podgroup(obj: Obj, old: Obj | None, gates: FeatureGates) -> None:
    """PodGroup's fields of gates the server runs with (``dropDisabledPodGroupFields``, ``SetDefaults_PodGroup``)."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _gated_policy_holder(spec, _d(old.get("spec")) if old is not None else None, gates)


def gated_workload(obj: Obj, old: Obj | None, gates: FeatureGates) -> None:
    """The same for each of a Workload's templates."""
    before = _templates(old)
    for template in _l(_d(obj.get("spec")).get("podGroupTemplates")):
        if isinstance(template, dict):
            _gated_policy_holder(template, before.get(template.get("name")) if old is not None else None, gates)


# ---- validation ------------------------------------------------------------------------------------------------

def _immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    return [] if new == old else [field_invalid(path, None, IMMUTABLE)]


def _long_name(value: str, path: str) -> list[FieldError]:
    return [field_invalid(path, value, m) for m in names.dns1123_subdomain(value)]


def _short_name(value: str, path: str) -> list[FieldError]:
    return [field_invalid(path, value, m) for m in names.dns1123_label(value)]


def _union(obj: Obj, old: Obj | None, members: tuple[str, ...], path: str) -> list[FieldError]:
    """``validate.Union``: exactly one member set (re-checked on update only when membership changed)."""
    def is_set(o: Obj, m: str) -> bool:
        v = o.get(m)
        return v is not None and (not isinstance(v, list) or len(v) > 0)
    chosen = [m for m in members if is_set(obj, m)]
    if old is not None and old and chosen == [m for m in members if is_set(old, m)]:
        return []
    listed = ", ".join(f"`{m}`" for m in members)
    if len(chosen) > 1:
        return [field_invalid(path, "{" + ", ".join(chosen) + "}", f"must specify exactly one of: {listed}")]
    if not chosen:
        return [field_invalid(path, "", f"must specify one of: {listed}")]
    return []


def _update_pointer(new: Any, old: Any, path: str) -> list[FieldError]:
    """``validate.UpdatePointer(NoSet, NoUnset)``."""
    if old is None and new is not None:
        return [field_invalid(path, None, "field cannot be set once created")]
    if old is not None and new is None:
        return [field_invalid(path, None, "field cannot be cleared once set")]
    return []


def _scheduling_policy(policy: Any, old: Any, path: str) -> list[FieldError]:
    """``Validate_PodGroupSchedulingPolicy``: the basic/gang union, ``basic`` immutable, ``gang`` neither set nor
    cleared on update, ``gang.minCount`` required and at least 1."""
    p, o = _d(policy), (_d(old) if old is not None else None)
    if o is not None and p == o:
        return []
    errs = _union(p, o, ("basic", "gang"), path)
    if o is not None:
        errs += _immutable(p.get("basic"), o.get("basic"), f"{path}.basic")
    gang = p.get("gang")
    if o is not None:
        moved = _update_pointer(gang, o.get("gang"), f"{path}.gang")
        if moved:
            return errs + moved
    if gang is not None:
        g, og = _d(gang), _d(o.get("gang")) if o is not None else None
        count = g.get("minCount")
        if og is not None and count == og.get("minCount"):
            return errs
        if not count:
            errs.append(field_required(f"{path}.gang.minCount", ""))
        elif isinstance(count, int) and count < 1:
            errs.append(field_invalid(f"{path}.gang.minCount", count, "must be greater than or equal to 1"))
    return errs


def _disruption_mode(mode: Any, path: str) -> list[FieldError]:
    return _union(_d(mode), None, ("single", "all"), path) if mode is not None else []


def _policy_holder(spec: Obj, old: Obj | None, path: str) -> list[FieldError]:
    """What a PodGroupSpec and a PodGroupTemplate share, in the generated order."""
    errs = _scheduling_policy(spec.get("schedulingPolicy"), old.get("schedulingPolicy") if old is not None else None,
                              f"{path}.schedulingPolicy")
    for key in ("disruptionMode", "priorityClassName", "priority", "preemptionPolicy"):
        value, fpath = spec.get(key), f"{path}.{key}"
        if old is not None and value != old.get(key):
            errs.append(field_invalid(fpath, None, IMMUTABLE))
            continue
        if key == "disruptionMode":
            errs += _disruption_mode(value, fpath)
        elif key == "priorityClassName" and value:
            errs += _long_name(str(value), fpath)
        elif key == "priority" and isinstance(value, int) and value > MAX_PRIORITY:
            errs.append(field_invalid(fpath, value, f"must be less than or equal to {MAX_PRIORITY}"))
        elif key == "preemptionPolicy" and value is not None and value not in ("Never", "PreemptLowerPriority"):
            errs.append(FieldError(fpath, "NotSupported", 'supported values: "Never", "PreemptLowerPriority"', value))
    return errs


def validate_podgroup(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidatePodGroup``/``ValidatePodGroupUpdate`` and the declarative ``Validate_PodGroupSpec``."""
    spec, old_spec = _d(obj.get("spec")), (_d(old.get("spec")) if old is not None else None)
    if old_spec is not None and spec == old_spec:
        return []
    errs: list[FieldError] = []
    ref = spec.get("workloadRef")
    if old_spec is not None and ref != old_spec.get("workloadRef"):
        errs.append(field_invalid("spec.workloadRef", None, IMMUTABLE))
    elif ref is not None and old_spec is None:
        r = _d(ref)
        for key, check in (("workloadName", _long_name), ("templateName", _short_name)):
            value = r.get(key)
            errs += check(str(value), f"spec.workloadRef.{key}") if value else [
                field_required(f"spec.workloadRef.{key}", "")]
    return errs + _policy_holder(spec, old_spec, "spec")


def validate_workload(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateWorkload``/``ValidateWorkloadUpdate`` and the declarative ``Validate_WorkloadSpec``."""
    spec, old_spec = _d(obj.get("spec")), (_d(old.get("spec")) if old is not None else None)
    if old_spec is not None and spec == old_spec:
        return []
    errs = _union(spec, old_spec, ("podGroupTemplates", "compositePodGroupTemplates"), "spec")
    ref = spec.get("controllerRef")
    if old_spec is not None and ref != old_spec.get("controllerRef"):
        errs.append(field_invalid("spec.controllerRef", None, IMMUTABLE))
    elif ref is not None and old_spec is None:
        r = _d(ref)
        if r.get("apiGroup"):
            errs += _long_name(str(r["apiGroup"]), "spec.controllerRef.apiGroup")
        for key in ("kind", "name"):
            value = r.get(key)
            errs += [field_invalid(f"spec.controllerRef.{key}", value, m)
                     for m in names.path_segment_name(str(value), False)] if value else [
                field_required(f"spec.controllerRef.{key}", "")]
    templates = [t for t in _l(spec.get("podGroupTemplates")) if isinstance(t, dict)]
    path = "spec.podGroupTemplates"
    if len(templates) > MAX_TEMPLATES:
        return errs + [FieldError(path, "TooMany", f"must have at most {MAX_TEMPLATES} items", len(templates))]
    if old_spec is not None:
        before = [t.get("name") for t in _l(old_spec.get("podGroupTemplates")) if isinstance(t, dict)]
        now = [t.get("name") for t in templates]
        added = [field_forbidden(f"{path}[{i}]", "item may not be added") for i, n in enumerate(now) if n not in before]
        if added or any(n not in now for n in before):
            return errs + added + ([field_forbidden(path, "item may not be removed")]
                                   if any(n not in now for n in before) else [])
    seen: dict[Any, int] = {}
    for i, t in enumerate(templates):
        if t.get("name") in seen:
            errs.append(field_duplicate(f"{path}[{i}]", t))
        seen.setdefault(t.get("name"), i)
    old_by_name = {t.get("name"): t for t in _l((old_spec or {}).get("podGroupTemplates")) if isinstance(t, dict)}
    for i, t in enumerate(templates):
        tpath = f"{path}[{i}]"
        name = t.get("name")
        errs += _short_name(str(name), f"{tpath}.name") if name else [field_required(f"{tpath}.name", "")]
        errs += _policy_holder(t, old_by_name.get(name) if old_spec is not None else None, tpath)
    return errs
