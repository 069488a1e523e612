"""Field schemas of the served kinds: strict decoding (``fieldValidation=Strict``) and ``/openapi/v3``.

The schema lists every field of the v1 types the kit uses, nested where the kit's objects nest and
``ANY`` (accept whatever) for sub-trees the server only stores (volumes, probes, affinity, status...).
Simplified against upstream: those ``ANY`` sub-trees are not checked for unknown fields, and the
OpenAPI documents only carry what kubectl needs to learn that the server supports server-side field
validation (the ``fieldValidation`` parameter on each kind's PATCH), not full type schemas; kubectl then
validates on the server and uses its compiled-in types for strategic merge patches.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mockgpu.control.apiserver.discovery import GIT_VERSION, RESOURCES

ANY: Any = None
MAP = "map"  # a free map of strings (labels, annotations, data, resource lists)


def _obj(*names: str, **nested: Any) -> dict[str, Any]:
    return {**dict.fromkeys(names, ANY), **nested}


_OWNER_REF = _obj("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
OBJECT_META = _obj("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
                   "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers",
                   "managedFields", labels=MAP, annotations=MAP, ownerReferences=[_OWNER_REF])
_CONTAINER = _obj(
    "name", "image", "command", "args", "workingDir", "envFrom", "resizePolicy", "restartPolicy", "volumeMounts",
    "volumeDevices", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
    "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty",
    ports=[_obj("name", "hostPort", "containerPort", "protocol", "hostIP")],
    env=[_obj("name", "value", "valueFrom")],
    resources=_obj("claims", limits=MAP, requests=MAP))
_TOLERATION = _obj("key", "operator", "value", "effect", "tolerationSeconds")
POD_SPEC = _obj(
    "volumes", "ephemeralContainers", "restartPolicy", "terminationGracePeriodSeconds", "activeDeadlineSeconds",
    "dnsPolicy", "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName",
    "hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "securityContext", "imagePullSecrets",
    "hostname", "subdomain", "affinity", "schedulerName", "hostAliases", "priorityClassName", "priority",
    "dnsConfig", "runtimeClassName", "enableServiceLinks", "preemptionPolicy", "topologySpreadConstraints",
    "setHostnameAsFQDN", "os", "hostUsers", "resourceClaims", "resources",
    containers=[_CONTAINER], initContainers=[_CONTAINER], nodeSelector=MAP, tolerations=[_TOLERATION],
    readinessGates=[_obj("conditionType")], schedulingGates=[_obj("name")], overhead=MAP)
_OBJECT_REF = _obj("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")

SCHEMAS: dict[str, dict[str, Any]] = {
    "Pod": _obj("apiVersion", "kind", "status", metadata=OBJECT_META, spec=POD_SPEC),
    "Node": _obj("apiVersion", "kind", "status", metadata=OBJECT_META, spec=_obj(
        "podCIDR", "podCIDRs", "providerID", "unschedulable", "configSource", "externalID",
        taints=[_obj("key", "value", "effect", "timeAdded")])),
    "Namespace": _obj("apiVersion", "kind", "status", metadata=OBJECT_META, spec=_obj("finalizers")),
    "ConfigMap": _obj("apiVersion", "kind", "immutable", metadata=OBJECT_META, data=MAP, binaryData=MAP),
    "ServiceAccount": _obj("apiVersion", "kind", "secrets", "imagePullSecrets", "automountServiceAccountToken",
                           metadata=OBJECT_META),
    "Event": _obj("apiVersion", "kind", "reason", "message", "firstTimestamp", "lastTimestamp", "count", "type",
                  "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance",
                  metadata=OBJECT_META, involvedObject=_OBJECT_REF, source=_obj("component", "host")),
    "Binding": _obj("apiVersion", "kind", metadata=OBJECT_META, target=_OBJECT_REF),
}


def unknown_fields(kind: str, obj: Any) -> list[str]:
    """Paths of fields the kind does not have, as strict decoding names them (``spec.containers[0].foo``)."""
    schema = SCHEMAS.get(kind)
    return _walk(schema, obj, "") if schema is not None else []


def _walk(schema: Any, value: Any, path: str) -> list[str]:
    if schema is ANY or schema == MAP:
        return []
    if isinstance(schema, list):
        if not isinstance(value, list):
            return []
        return [p for i, item in enumerate(value) for p in _walk(schema[0], item, f"{path}[{i}]")]
    if not isinstance(value, dict):
        return []
    out: list[str] = []
    for key, sub in value.items():
        child = f"{path}.{key}" if path else key
        if key not in schema:
            out.append(child)
        else:
            out.extend(_walk(schema[key], sub, child))
    return out


_FIELD_VALIDATION_PARAM = {
    "name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True},
    "description": "fieldValidation instructs the server on how to handle objects in the request containing "
                   "unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.",
}


def _path_for(plural: str, namespaced: bool) -> str:
    return f"/api/v1/namespaces/{{namespace}}/{plural}/{{name}}" if namespaced else f"/api/v1/{plural}/{{name}}"


def openapi_v3_core() -> dict[str, Any]:
    """``GET /openapi/v3/api/v1``: each kind's item path with PATCH accepting ``fieldValidation``."""
    paths: dict[str, Any] = {}
    for plural, info in RESOURCES.items():
        if "patch" not in info.verbs:
            continue
        gvk = {"group": "", "version": "v1", "kind": info.kind}
        op = {"operationId": f"patch{'Namespaced' if info.namespaced else ''}{info.kind}",
              "x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk,
              "parameters": [_FIELD_VALIDATION_PARAM], "responses": {"200": {"description": "OK"}}}
        paths[_path_for(plural, info.namespaced)] = {"patch": op}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": GIT_VERSION}, "paths": paths,
            "components": {"schemas": {}}}


def openapi_v3_root() -> dict[str, Any]:
    """``GET /openapi/v3``: where each group-version's document is, with a content hash as upstream."""
    digest = hashlib.sha512(json.dumps(openapi_v3_core(), sort_keys=True).encode()).hexdigest().upper()[:128]
    return {"paths": {"api/v1": {"serverRelativeURL": f"/openapi/v3/api/v1?hash={digest}"}}}
