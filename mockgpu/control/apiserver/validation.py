"""Decode checks, defaulting and validation of written objects, with kube-apiserver's messages.

``default_and_validate`` is what the server runs on every create and update: the decoder's type checks (400)
and unknown/duplicate fields (dropped with a warning, or 400 when strict: ``fieldvalidation``), defaults, then
field validation collected into one 422
``Invalid`` Status whose causes carry upstream's field paths and texts (``pkg/apis/core/validation``),
including the "Schedule GPUs" rules for extended resources. Validation of sub-trees the kit never uses
(volumes, probes, affinity, security contexts) is left out. Pod spec updates are ``podupdate``.
"""

from __future__ import annotations

import copy
from typing import Any

from mockgpu.apimachinery.quantity import QuantityError, canonical, parse_quantity
from mockgpu.control.apiserver import (
    coordination,
    defaults,
    fieldvalidation,
    microtime,
    names,
    resourcev1,
    workloads,
)
from mockgpu.control.apiserver.corevalidation import (
    validate_binding,
    validate_configmap,
    validate_event,
    validate_node,
    validate_pod,
)
from mockgpu.control.apiserver.podupdate import validate_pod_update
from mockgpu.control.apiserver.status import (
    FieldError,
    bad_request,
    invalid,
)

NAMESPACED = {"Pod": True, "Event": True, "ConfigMap": True, "ServiceAccount": True, "Binding": True,
              "Node": False, "Namespace": False, "Lease": True, "Service": True, "Deployment": True,
              "ReplicaSet": True, "Job": True, "DaemonSet": True, "CronJob": True,
              "StatefulSet": True, **resourcev1.NAMESPACED}
#: the group/version of kinds outside the core group (their stored apiVersion; errors name the group)
API_VERSIONS = {"Lease": "coordination.k8s.io/v1", **workloads.API_VERSIONS, **resourcev1.API_VERSIONS}


def default_and_validate(kind: str, obj: dict[str, Any], *, namespace: str | None, old: dict[str, Any] | None = None,
                         strict: bool = False, subresource: str = "",
                         namespace_labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The object to store for a create (``old`` None) or update, or a StatusError (400 or 422).
    ``namespace_labels``: the namespace's labels, for checks upstream's strategies make against the namespace
    (DRA admin access); None skips them."""
    if kind not in NAMESPACED:
        raise bad_request(f"no kind \"{kind}\" is registered for version \"v1\" in scheme \"mockgpu\"")
    if not isinstance(obj, dict):
        raise bad_request(f"the object provided is unrecognized (must be of type {kind})")
    check_type_meta(kind, obj)
    check_decode(kind, obj, strict)
    obj = copy.deepcopy(obj)
    obj["apiVersion"], obj["kind"] = API_VERSIONS.get(kind, "v1"), kind
    for key in ("metadata", "spec", "status"):
        if key in obj and obj[key] is None:
            del obj[key]  # JSON null is an absent field
    meta = obj.setdefault("metadata", {})
    if NAMESPACED[kind]:
        if meta.get("namespace") and namespace and meta["namespace"] != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        if namespace:
            meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    _normalize_quantities(kind, obj)
    obj = _apply_defaults(kind, obj, old, subresource)
    errs = validate(kind, obj, old, subresource)
    if old is None and namespace_labels is not None and kind in resourcev1.KINDS:
        errs = resourcev1.admin_access_errors(kind, obj, namespace_labels) + errs  # upstream checks it first
    if errs:
        raise invalid(kind, meta.get("name") or meta.get("generateName") or "", errs,
                      API_VERSIONS.get(kind, "v1").rpartition("/")[0])
    return obj


_SCHEME = "pkg/api/legacyscheme/scheme.go:30"
#: kinds kube-apiserver's scheme knows, so a body of that kind decodes and then fails conversion
_REGISTERED = {
    "v1": {"Pod", "Node", "Namespace", "Event", "ConfigMap", "ServiceAccount", "Binding", "Service", "Secret",
           "Endpoints", "PersistentVolume", "PersistentVolumeClaim", "ReplicationController", "LimitRange",
           "ResourceQuota", "PodTemplate", "ComponentStatus"},
    "apps/v1": {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ControllerRevision"},
    "batch/v1": {"Job", "CronJob"},
    "coordination.k8s.io/v1": {"Lease"},
    "events.k8s.io/v1": {"Event"},
    "resource.k8s.io/v1": set(resourcev1.KINDS) | {"DeviceTaintRule"},
}


def check_type_meta(kind: str, obj: dict[str, Any]) -> None:
    """A body of another kind or group-version → 400 as the REST handler's decoder words it.

    Absent apiVersion/kind default to the URL's, as upstream does.
    """
    for key in ("apiVersion", "kind"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            got = fieldvalidation.json_kind(obj[key])
            raise bad_request(f"the object provided is unrecognized (must be of type {kind}): couldn't get "
                              f"version/kind; json parse error: json: cannot unmarshal {got} "
                              f"into Go struct field .{key} of type string")
    served = API_VERSIONS.get(kind, "v1")
    api_version, body_kind = obj.get("apiVersion") or served, obj.get("kind") or kind
    if api_version == served and body_kind == kind:
        return
    version = api_version.rsplit("/", 1)[-1]
    prefix = f'{body_kind} in version "{version}" cannot be handled as a {kind}: '
    if body_kind not in _REGISTERED.get(api_version, set()):
        raise bad_request(prefix + f'no kind "{body_kind}" is registered for version "{api_version}" in scheme '
                                   f'"{_SCHEME}"')
    internal = served.split("/")[0].split(".")[0] if "/" in served else "core"
    raise bad_request(prefix + f"converting ({version}.{body_kind}) to ({internal}.{kind}): unknown conversion")


def check_decode(kind: str, obj: dict[str, Any], strict: bool = False) -> None:
    """What decoding into the Go types does (``fieldvalidation``): 400 for a value of the wrong JSON type or a
    malformed quantity or time; unknown fields dropped (in place) and, with duplicate fields, warned about, or
    400 when ``strict``."""
    fieldvalidation.check_body(API_VERSIONS.get(kind, "v1").rpartition("/")[0], kind, obj, strict)


def _pod_spec_of(kind: str, obj: dict[str, Any]) -> Any:
    """The pod spec a kind carries: its own (Pod) or its template's (Deployment, ReplicaSet, Job)."""
    spec = obj.get("spec") or {}
    if kind == "CronJob" and isinstance(spec, dict):  # spec.jobTemplate.spec.template.spec
        job = spec.get("jobTemplate") or {}
        spec = ((job.get("spec") or {}) if isinstance(job, dict) else {}) or {}
        spec = spec if isinstance(spec, dict) else {}
    if kind in workloads.API_VERSIONS and isinstance(spec, dict):
        template = spec.get("template") or {}
        return (template.get("spec") or {}) if isinstance(template, dict) else {}
    return spec


def _normalize_quantities(kind: str, obj: dict[str, Any]) -> None:
    """Quantities are stored and returned in canonical string form (``2`` → ``"2"``, ``1000m`` → ``"1"``)."""
    maps: list[dict[str, Any]] = []
    if kind == "Pod" or kind in workloads.API_VERSIONS:
        spec = _pod_spec_of(kind, obj)
        for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
            res = (c.get("resources") or {}) if isinstance(c, dict) else {}
            maps += [res[p] for p in ("limits", "requests") if isinstance(res.get(p), dict)]
    elif kind == "Node":
        status = obj.get("status") or {}
        maps += [status[p] for p in ("capacity", "allocatable") if isinstance(status.get(p), dict)]
    for m in maps:
        for key, value in m.items():
            m[key] = _stored_quantity(value)


def _stored_quantity(value: Any) -> str:
    """The canonical text, unless ``mockgpu.apimachinery.quantity`` could not read it back (it has no ``n``/``u``
    suffixes and caps the length at 64), in which case the value is kept as written."""
    text = canonical(value if isinstance(value, str) else parse_quantity(value))
    try:
        parse_quantity(text)
    except QuantityError:
        return value if isinstance(value, str) else str(value)
    return text


def _apply_defaults(kind: str, obj: dict[str, Any], old: dict[str, Any] | None, subresource: str) -> dict[str, Any]:
    if kind == "Pod":
        if old is None:
            return defaults.default_pod(obj)
        obj = defaults.default_pod(obj, creating=False)
        if subresource == "status":
            obj["spec"] = copy.deepcopy(old.get("spec", {}))
        else:
            obj["status"] = copy.deepcopy(old.get("status", {}))
        return obj
    if kind == "Node":
        obj = defaults.default_node(obj)
        if old is not None and subresource != "status":
            obj["status"] = copy.deepcopy(old.get("status", {}))
        return obj
    if kind == "Namespace":
        return defaults.default_namespace(obj)
    if kind in workloads.API_VERSIONS:
        return workloads.prepare(kind, obj, old, subresource)
    if kind in resourcev1.KINDS:
        return resourcev1.prepare(kind, obj, old, subresource)
    microtime.normalize(kind, obj)
    return obj


def validate(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None,
             subresource: str = "") -> list[FieldError]:
    """Every field error of ``obj`` (after defaulting), in upstream's order."""
    name_fn = {"Namespace": names.name_is_dns_label, "Binding": names.path_segment_name}.get(
        kind, names.name_is_dns_subdomain)
    errs = names.validate_object_meta(obj.get("metadata") or {}, NAMESPACED[kind], name_fn)
    if old is not None:
        errs += names.validate_meta_update(obj.get("metadata") or {}, old.get("metadata") or {})
    errs += {"Pod": validate_pod, "Node": validate_node, "ConfigMap": validate_configmap,
             "Binding": validate_binding, "Event": validate_event, "Lease": coordination.validate_lease}.get(
                 kind, lambda o: [])(obj)
    if kind in workloads.API_VERSIONS:
        errs += workloads.validate(kind, obj, old)
    if kind in resourcev1.KINDS:
        errs += resourcev1.validate(kind, obj, old, subresource)
    if kind == "Pod" and old is not None:
        errs += validate_pod_update(obj, old)
    return errs
