"""OpenAPI v3 component schemas of the served kinds, built from the official Python client's models.

``kubectl explain`` reads their names, types and descriptions; ``kubectl apply`` reads the patch merge keys
(:data:`PATCH_META`, as the Go types' struct tags give them). Each group-version's document carries its own
kinds and everything they reference, named as upstream names its definitions (``io.k8s.api.core.v1.Pod``); each
kind's record names its model (``registry``). The merge keys belong to the types, not the kinds (Go's struct
tags), so :data:`PATCH_META` is keyed by model and field.
"""

from __future__ import annotations

from typing import Any

from mockgpu.control.apiserver import registry

_META_TYPES = {"ObjectMeta", "OwnerReference", "ManagedFieldsEntry", "ListMeta", "Status", "StatusDetails",
               "StatusCause", "Time", "MicroTime", "LabelSelector", "LabelSelectorRequirement", "Condition"}
#: model-name prefixes of the apps and batch groups' sub-types (``V1DeploymentSpec``, ``V1PodFailurePolicyRule``)
_PY_GROUP_PREFIXES = (("V1Deployment", "apps"), ("V1ReplicaSet", "apps"), ("V1RollingUpdateDeployment", "apps"),
                      ("V1Job", "batch"), ("V1PodFailurePolicy", "batch"), ("V1SuccessPolicy", "batch"),
                      ("V1UncountedTerminatedPods", "batch"), ("V1DaemonSet", "apps"),
                      ("V1RollingUpdateDaemonSet", "apps"), ("V1CronJob", "batch"), ("V1JobTemplateSpec", "batch"),
                      ("V1StatefulSet", "apps"), ("V1RollingUpdateStatefulSet", "apps"))
_PY_GROUP = {"V1Lease": "coordination", "V1LeaseSpec": "coordination", "EventsV1Event": "events",
             "EventsV1EventSeries": "events"}
#: (python model, json field) → (merge key or "" for a set of primitives, strategy), as the Go types' tags say
PATCH_META: dict[tuple[str, str], tuple[str, str]] = {
    ("V1ObjectMeta", "ownerReferences"): ("uid", "merge"), ("V1ObjectMeta", "finalizers"): ("", "merge"),
    **{("V1PodSpec", f): ("name", "merge") for f in ("containers", "initContainers", "ephemeralContainers",
                                                       "imagePullSecrets", "schedulingGates")},
    ("V1PodSpec", "volumes"): ("name", "merge,retainKeys"),
    ("V1PodSpec", "resourceClaims"): ("name", "merge,retainKeys"),
    ("V1PodSpec", "hostAliases"): ("ip", "merge"), ("V1PodSpec", "topologySpreadConstraints"): ("topologyKey", "merge"),
    **{(c, f): (k, "merge") for c in ("V1Container", "V1EphemeralContainer")
       for f, k in (("ports", "containerPort"), ("env", "name"), ("volumeMounts", "mountPath"),
                    ("volumeDevices", "devicePath"))},
    ("V1PodStatus", "conditions"): ("type", "merge"), ("V1PodStatus", "podIPs"): ("ip", "merge"),
    ("V1PodStatus", "hostIPs"): ("ip", "merge"), ("V1NodeStatus", "conditions"): ("type", "merge"),
    ("V1NodeStatus", "addresses"): ("type", "merge"), ("V1NodeSpec", "podCIDRs"): ("", "merge"),
    ("V1ServiceAccount", "secrets"): ("name", "merge"),
    ("V1PodStatus", "resourceClaimStatuses"): ("name", "merge,retainKeys"),
    ("V1ResourceClaimStatus", "reservedFor"): ("uid", "merge"),
}
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_QUANTITY_MAPS = {"limits", "requests", "capacity", "allocatable", "overhead", "hard", "used"}
_PRIMITIVES = {"str": {"type": "string"}, "int": {"type": "integer", "format": "int64"}, "bool": {"type": "boolean"},
               "float": {"type": "number", "format": "double"}, "datetime": {"type": "string", "format": "date-time"},
               "date": {"type": "string", "format": "date"}, "object": {"type": "object"},
               "bytes": {"type": "string", "format": "byte"}, "bytearray": {"type": "string", "format": "byte"}}


def resource_models() -> frozenset[str]:
    """The client's models of the resource.k8s.io/v1 types: everything its kinds reach but meta and core types."""
    if _RESOURCE_MODELS:
        return _RESOURCE_MODELS[0]
    from kubernetes.client import models
    todo, seen = list(registry.models("resource.k8s.io/v1").values()), set()
    while todo:
        name = todo.pop()
        model = getattr(models, name, None)
        if model is None or name in seen or name.startswith("V1NodeSelector") \
                or name.removeprefix("V1") in _META_TYPES:
            continue
        seen.add(name)
        for typ in model.openapi_types.values():
            for part in typ.replace("List[", " ").replace("Dict[", " ").replace("]", " ").replace(",", " ").split():
                if part[:1].isupper() and part != "V1ObjectMeta":
                    todo.append(part)
    _RESOURCE_MODELS.append(frozenset(seen))
    return _RESOURCE_MODELS[0]


_RESOURCE_MODELS: list[frozenset[str]] = []


def schema_name(model: str) -> str:
    """Python client model → upstream's definition name (``V1Pod`` → ``io.k8s.api.core.v1.Pod``)."""
    if model.startswith("V1beta1"):  # the only beta models served: scheduling.k8s.io/v1beta1's
        return f"io.k8s.api.scheduling.v1beta1.{model.removeprefix('V1beta1')}"
    short = model.removeprefix("CoreV1").removeprefix("EventsV1").removeprefix("ResourceV1").removeprefix("V1")
    if short in _META_TYPES:
        return f"io.k8s.apimachinery.pkg.apis.meta.v1.{short}"
    if model in resource_models():
        return f"io.k8s.api.resource.v1.{short}"
    group = _PY_GROUP.get(model) or next((g for p, g in _PY_GROUP_PREFIXES if model.startswith(p)), "core")
    return f"io.k8s.api.{group}.v1.{short}"


def _type_schema(t: str, todo: list[str]) -> dict[str, Any]:
    t = t.strip()
    if t.startswith("List[") and t.endswith("]"):
        return {"type": "array", "items": _type_schema(t[5:-1], todo)}
    if t.startswith("Dict[") and t.endswith("]"):
        return {"type": "object", "additionalProperties": _type_schema(t[5:-1].split(",", 1)[1], todo)}
    if t in _PRIMITIVES:
        return dict(_PRIMITIVES[t])
    todo.append(t)
    return {"$ref": f"#/components/schemas/{schema_name(t)}"}


def _describe(model: Any) -> str:
    doc = (model.__doc__ or "").split("Attributes:")[0]
    return " ".join(doc.split())


def component_schemas(group_version: str = "v1") -> dict[str, Any]:
    """Schemas of the kinds served in ``group_version`` and everything they contain, built from the official
    Python client's models (names, types, descriptions), with the patch merge keys of :data:`PATCH_META`.
    Cached after the first call."""
    if group_version in _SCHEMAS_CACHE:
        return _SCHEMAS_CACHE[group_version]
    from kubernetes.client import models
    kinds = registry.models(group_version)
    group, _, version = group_version.rpartition("/")
    todo = list(kinds.values())
    out: dict[str, Any] = {QUANTITY: {"oneOf": [{"type": "string"}, {"type": "number"}], "description": (
        "Quantity is a fixed-point representation of a number, serialized as a string such as 500m, 2 or 256Gi "
        "(decimal SI, binary SI or exponent form).")}}
    while todo:
        name = todo.pop()
        model = getattr(models, name, None)
        if model is None or schema_name(name) in out:
            continue
        props: dict[str, Any] = {}
        fields = getattr(model, "model_fields", {})
        for attr, typ in model.openapi_types.items():
            json_name = model.attribute_map[attr]
            prop = _type_schema(typ, todo)
            if json_name in _QUANTITY_MAPS and prop.get("additionalProperties") == {"type": "string"}:
                prop["additionalProperties"] = {"$ref": f"#/components/schemas/{QUANTITY}"}
            desc = getattr(fields.get(attr), "description", None)
            if desc:
                prop = ({"allOf": [prop]} if "$ref" in prop else prop) | {"description": desc}
            key, strategy = PATCH_META.get((name, json_name), (None, None))
            if strategy:
                prop["x-kubernetes-patch-strategy"] = strategy
                if key:
                    prop["x-kubernetes-patch-merge-key"] = key
            props[json_name] = prop
        schema: dict[str, Any] = {"type": "object", "description": _describe(model), "properties": props}
        kind = next((k for k, py in kinds.items() if py == name), None)
        if kind:
            schema["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
        out[schema_name(name)] = schema
    _SCHEMAS_CACHE[group_version] = out
    return out


_SCHEMAS_CACHE: dict[str, dict[str, Any]] = {}
