"""Validation of the core/v1 kinds the kit writes (Pod, Node, ConfigMap, Binding, Event), with kube-apiserver's
field paths and texts (``pkg/apis/core/validation``), including the "Schedule GPUs" rules for extended
resources. Validation of sub-trees the kit never uses (volumes, probes, affinity, security contexts) is left
out. ``validation`` runs it on every write; the workload kinds run ``validate_pod`` on their pod templates."""

from __future__ import annotations

from typing import Any

from mockgpu.apimachinery.names import is_extended_resource_name, is_native_resource_name
from mockgpu.apimachinery.quantity import canonical, milli_value, parse_quantity
from mockgpu.control.apiserver import names, podclaims
from mockgpu.control.apiserver.status import (
    FieldError,
    field_duplicate,
    field_invalid,
    field_not_supported,
    field_required,
    field_too_long,
)

CONFIGMAP_SIZE_LIMIT = 1024 * 1024


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
    if spec.get("schedulingGroup") is not None:
        errs += validate_scheduling_group(spec["schedulingGroup"], "spec.schedulingGroup")
    errs += podclaims.validate_pod_claims(spec.get("resourceClaims"), "spec.resourceClaims")
    errs += podclaims.validate_claim_statuses(pod.get("status"), spec.get("resourceClaims"))
    return errs


def validate_scheduling_group(group: Any, path: str) -> list[FieldError]:
    """``validateSchedulingGroup`` (GenericWorkload): a one-of with ``podGroupName`` its only member, a DNS
    subdomain (``ValidatePodGroupName``)."""
    name = group.get("podGroupName") if isinstance(group, dict) else None
    if name is None:
        return [field_invalid(f"{path}.podGroupName", None, "must specify one of: `podGroupName`")]
    return [field_invalid(f"{path}.podGroupName", name, m) for m in names.dns1123_subdomain(str(name))]


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


def overcommit_allowed(rname: str) -> bool:
    return is_native_resource_name(rname) and not rname.startswith("hugepages-")


def _resource_value(rname: str, raw: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    errs += [field_invalid(path, rname, m) for m in names.qualified_name(rname)]
    if "/" not in rname:
        if rname not in _STANDARD_CONTAINER_RESOURCES and not rname.startswith("hugepages-"):
            errs.append(field_invalid(path, rname, "must be a standard resource for containers"))
    elif not is_native_resource_name(rname) and not is_extended_resource_name(rname):
        errs.append(field_invalid(path, rname, "doesn't follow extended resource name standard"))
    value = parse_quantity(raw)
    if value < 0:
        errs.append(field_invalid(path, canonical(raw), "must be greater than or equal to 0"))
    if is_extended_resource_name(rname) and milli_value(raw) % 1000 != 0:
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
