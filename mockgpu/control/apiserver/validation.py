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
from fractions import Fraction
from typing import Any

from mockgpu.control.apiserver import (
    coordination,
    defaults,
    fieldvalidation,
    microtime,
    names,
    podclaims,
    resourcev1,
    workloads,
)
from mockgpu.control.apiserver.podupdate import validate_pod_update
from mockgpu.control.apiserver.status import (
    FieldError,
    bad_request,
    field_duplicate,
    field_invalid,
    field_not_supported,
    field_required,
    field_too_long,
    invalid,
)
from mockgpu.quantity import QuantityError, milli_value, parse_quantity

NAMESPACED = {"Pod": True, "Event": True, "ConfigMap": True, "ServiceAccount": True, "Binding": True,
              "Node": False, "Namespace": False, "Lease": True, "Service": True, "Deployment": True,
              "ReplicaSet": True, "Job": True, "DaemonSet": True, "CronJob": True,
              "StatefulSet": True, **resourcev1.NAMESPACED}
#: the group/version of kinds outside the core group (their stored apiVersion; errors name the group)
API_VERSIONS = {"Lease": "coordination.k8s.io/v1", **workloads.API_VERSIONS, **resourcev1.API_VERSIONS}
CONFIGMAP_SIZE_LIMIT = 1024 * 1024


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
    """The canonical text, unless ``mockgpu.quantity`` could not read it back (it has no ``n``/``u`` suffixes
    and caps the length at 64), in which case the value is kept as written."""
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


def _one_of(errs: list[FieldError], path: str, value: Any, allowed: tuple[str, ...], required: bool = True) -> None:
    if value in (None, ""):
        if required:
            errs.append(field_required(path))
    elif value not in allowed:
        errs.append(field_not_supported(path, value, allowed))


def validate_pod(pod: dict[str, Any]) -> list[FieldError]:
    spec = pod.get("spec") or {}
    errs: list[FieldError] = []
    containers = spec.get("containers") or []
    seen: set[str] = set()
    claim_names = podclaims.pod_claim_names(spec)
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            errs += validate_container(c if isinstance(c, dict) else {}, f"spec.{key}[{i}]", seen, claim_names)
    if not containers:
        errs.append(field_required("spec.containers"))
    _one_of(errs, "spec.restartPolicy", spec.get("restartPolicy"), ("Always", "OnFailure", "Never"))
    _one_of(errs, "spec.dnsPolicy", spec.get("dnsPolicy"), ("ClusterFirst", "ClusterFirstWithHostNet", "Default",
                                                              "None"))
    errs += names.validate_labels(spec.get("nodeSelector") or {}, "spec.nodeSelector")
    for i, t in enumerate(spec.get("tolerations") or []):
        errs += validate_toleration(t or {}, f"spec.tolerations[{i}]")
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or ads <= 0):
        errs.append(field_invalid("spec.activeDeadlineSeconds", ads, "must be between 1 and 2147483647, inclusive"))
    node = spec.get("nodeName")
    if node:
        errs += [field_invalid("spec.nodeName", node, m) for m in names.dns1123_subdomain(node)]
    errs += podclaims.validate_pod_claims(spec.get("resourceClaims"), "spec.resourceClaims")
    errs += podclaims.validate_claim_statuses(pod.get("status"), spec.get("resourceClaims"))
    return errs


def validate_container(c: dict[str, Any], path: str, seen: set[str],
                       claim_names: set[str] | None = None) -> list[FieldError]:
    errs: list[FieldError] = []
    name = c.get("name") or ""
    if not name:
        errs.append(field_required(f"{path}.name"))
    else:
        errs += [field_invalid(f"{path}.name", name, m) for m in names.dns1123_label(name)]
        if name in seen:
            errs.append(field_duplicate(f"{path}.name", name))
        seen.add(name)
    if not c.get("image"):
        errs.append(field_required(f"{path}.image"))
    _one_of(errs, f"{path}.imagePullPolicy", c.get("imagePullPolicy"), ("Always", "IfNotPresent", "Never"))
    _one_of(errs, f"{path}.terminationMessagePolicy", c.get("terminationMessagePolicy"),
            ("File", "FallbackToLogsOnError"))
    for i, port in enumerate(c.get("ports") or []):
        errs += validate_port(port or {}, f"{path}.ports[{i}]")
    env_names = set()
    for i, env in enumerate(c.get("env") or []):
        env_name = (env or {}).get("name") or ""
        if not env_name:
            errs.append(field_required(f"{path}.env[{i}].name"))
        env_names.add(env_name)
    errs += validate_resources(c.get("resources") or {}, f"{path}.resources")
    errs += podclaims.validate_container_claims((c.get("resources") or {}).get("claims"), claim_names or set(),
                                                f"{path}.resources.claims")
    return errs


def validate_port(port: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    cp = port.get("containerPort")
    if not cp:
        errs.append(field_required(f"{path}.containerPort"))
    elif not isinstance(cp, int) or not 1 <= cp <= 65535:
        errs.append(field_invalid(f"{path}.containerPort", cp, "must be between 1 and 65535, inclusive"))
    hp = port.get("hostPort")
    if hp and (not isinstance(hp, int) or not 1 <= hp <= 65535):
        errs.append(field_invalid(f"{path}.hostPort", hp, "must be between 1 and 65535, inclusive"))
    _one_of(errs, f"{path}.protocol", port.get("protocol"), ("SCTP", "TCP", "UDP"))
    pname = port.get("name")
    if pname and len(pname) > 15:
        errs.append(field_invalid(f"{path}.name", pname, "must be no more than 15 characters"))
    return errs


def validate_toleration(t: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    key, raw_op = t.get("key") or "", t.get("operator") or ""
    op = raw_op or "Equal"
    if key:
        errs += [field_invalid(f"{path}.key", key, m) for m in names.qualified_name(key)]
    elif op != "Exists":
        errs.append(field_invalid(f"{path}.operator", raw_op, "operator must be Exists when `key` is empty, "
                                                              "which means \"match all values and all keys\""))
    if op == "Exists" and t.get("value"):
        errs.append(field_invalid(f"{path}.operator", t.get("value"),
                                  "value must be empty when `operator` is 'Exists'"))
    if op not in ("Equal", "Exists"):
        errs.append(field_not_supported(f"{path}.operator", op, ("Equal", "Exists")))
    if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
        errs.append(field_invalid(f"{path}.effect", t.get("effect", ""),
                                  "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    effect = t.get("effect")
    if effect:
        _one_of(errs, f"{path}.effect", effect, ("NoSchedule", "PreferNoSchedule", "NoExecute"))
    return errs


def validate_resources(res: dict[str, Any], path: str) -> list[FieldError]:
    """upstream ``ValidateResourceRequirements``: names, non-negative, extended integers and request == limit."""
    errs: list[FieldError] = []
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    for rname in sorted(limits):
        errs += _resource_value(rname, limits[rname], f"{path}.limits[{rname}]")
    for rname in sorted(requests):
        errs += _resource_value(rname, requests[rname], f"{path}.requests[{rname}]")
        req = parse_quantity(requests[rname])
        if rname in limits:
            lim = parse_quantity(limits[rname])
            if req != lim and not overcommit_allowed(rname):
                errs.append(field_invalid(f"{path}.requests", canonical(requests[rname]),
                                          f"must be equal to {rname} limit of {canonical(limits[rname])}"))
            elif req > lim:
                errs.append(field_invalid(f"{path}.requests", canonical(requests[rname]),
                                          f"must be less than or equal to {rname} limit of {canonical(limits[rname])}"))
        elif not overcommit_allowed(rname):
            errs.append(field_required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
    return errs


_STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def is_native(rname: str) -> bool:
    return "/" not in rname or "kubernetes.io/" in rname


def is_extended(rname: str) -> bool:
    """upstream ``IsExtendedResourceName``: a prefixed name outside kubernetes.io, not ``requests.*``."""
    return not is_native(rname) and not rname.startswith("requests.") and not names.qualified_name("requests." + rname)


def overcommit_allowed(rname: str) -> bool:
    return is_native(rname) and not rname.startswith("hugepages-")


def _resource_value(rname: str, raw: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    errs += [field_invalid(path, rname, m) for m in names.qualified_name(rname)]
    if "/" not in rname:
        if rname not in _STANDARD_CONTAINER_RESOURCES and not rname.startswith("hugepages-"):
            errs.append(field_invalid(path, rname, "must be a standard resource for containers"))
    elif not is_native(rname) and not is_extended(rname):
        errs.append(field_invalid(path, rname, "doesn't follow extended resource name standard"))
    value = parse_quantity(raw)
    if value < 0:
        errs.append(field_invalid(path, canonical(raw), "must be greater than or equal to 0"))
    if is_extended(rname) and milli_value(raw) % 1000 != 0:
        errs.append(field_invalid(path, canonical(raw), "must be an integer"))
    return errs


def validate_node(node: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, taint in enumerate((node.get("spec") or {}).get("taints") or []):
        path = f"spec.taints[{i}]"
        key = (taint or {}).get("key") or ""
        if not key:
            errs.append(field_required(f"{path}.key"))
        errs += [field_invalid(f"{path}.key", key, m) for m in names.qualified_name(key)] if key else []
        _one_of(errs, f"{path}.effect", (taint or {}).get("effect"), ("NoSchedule", "PreferNoSchedule", "NoExecute"))
    status = node.get("status") or {}
    for part in ("capacity", "allocatable"):
        for rname in sorted(status.get(part) or {}):
            value = parse_quantity(status[part][rname])
            path = f"status.{part}[{rname}]"
            if value < 0:
                errs.append(field_invalid(path, canonical(value), "must be greater than or equal to 0"))
            if "/" in rname and "kubernetes.io/" not in rname and value.denominator != 1:
                errs.append(field_invalid(path, canonical(value), "must be an integer"))
    return errs


def validate_configmap(cm: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    data, binary = cm.get("data") or {}, cm.get("binaryData") or {}
    for key in list(data) + list(binary):
        errs += [field_invalid("data" if key in data else "binaryData", key, m) for m in names.configmap_key(key)]
        if key in data and key in binary:
            errs.append(field_invalid("data", key, "duplicate of key present in binaryData"))
    if sum(len(k) + len(str(v)) for d in (data, binary) for k, v in d.items()) > CONFIGMAP_SIZE_LIMIT:
        errs.append(field_too_long("", CONFIGMAP_SIZE_LIMIT))
    return errs


def validate_binding(binding: dict[str, Any]) -> list[FieldError]:
    target = binding.get("target") or {}
    errs: list[FieldError] = []
    if target.get("kind") and target["kind"] != "Node":
        errs.append(field_not_supported("target.kind", target["kind"], ("Node",)))
    if not target.get("name"):
        errs.append(field_required("target.name"))
    return errs


def validate_event(event: dict[str, Any]) -> list[FieldError]:
    ns = (event.get("metadata") or {}).get("namespace")
    involved = event.get("involvedObject") or {}
    if involved.get("namespace") and ns and involved["namespace"] != ns:
        return [field_invalid("involvedObject.namespace", involved["namespace"], "does not match event.namespace")]
    return []


_DECIMAL = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"), (-6, "u"),
            (-9, "n"))
_BINARY = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


def canonical(value: Fraction | str | int | float) -> str:
    """A quantity as ``Quantity.String()`` prints it: 0.5 → 500m, 2000 → 2k, 1536Mi stays 1536Mi, 2048Mi → 2Gi."""
    binary = isinstance(value, str) and value.strip().endswith("i")
    v = value if isinstance(value, Fraction) else parse_quantity(value)
    if v == 0:
        return "0"
    sign, v = ("-" if v < 0 else ""), abs(v)
    if binary and v.denominator == 1 and v >= 1024:
        for exp, suffix in _BINARY:
            if v % (2 ** exp) == 0:
                return f"{sign}{v // 2 ** exp}{suffix}"
        return f"{sign}{v}"
    nanos = -((-v * 10**9).__floor__())  # upstream rounds up below 1n
    v = Fraction(nanos, 10**9)
    for exp, suffix in _DECIMAL:
        scaled = v / Fraction(10) ** exp
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{suffix}"
    return f"{sign}{nanos}n"
