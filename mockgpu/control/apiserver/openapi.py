"""Field schemas of the served kinds: decode-time type checks, strict decoding and ``/openapi/v3``.

``SCHEMAS`` lists every field of the v1 types the kit uses, typed where the server reads the value, nested
where the kit's objects nest, and ``ANY`` for sub-trees the server only stores (volumes, probes, affinity,
most of status). Simplified against upstream: those ``ANY`` sub-trees are neither type-checked nor checked
for unknown fields. The OpenAPI v3 document advertises ``fieldValidation`` on each kind's PATCH (so kubectl
validates on the server) and carries component schemas built from the official Python client's models
(``schemas.component_schemas``: descriptions for ``kubectl explain``, merge keys for ``kubectl apply``);
that field set is the client's, which may be newer than the Kubernetes version the server reports.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from mockgpu.control.apiserver.discovery import GIT_VERSION, GROUP_RESOURCES, RESOURCES
from mockgpu.control.apiserver.schemas import GROUP_PY_KINDS, component_schemas

ANY: Any = None
MAP = "map[string]string"  # labels, annotations, data
QTY = "map[string]resource.Quantity"  # limits, requests, capacity
S, INT, INT32, B, SL = "string", "int64", "int32", "bool", "[]string"
OPEN = "__open__"  # an object whose other fields are not checked (status sub-trees)
GO = "__go__"  # the Go type name, for decode error messages


def _obj(*names: str, **nested: Any) -> dict[str, Any]:
    return {**dict.fromkeys(names, ANY), **nested}


_OWNER_REF = _obj("controller", "blockOwnerDeletion", apiVersion=S, kind=S, name=S, uid=S, __go__="OwnerReference")
OBJECT_META = _obj("creationTimestamp", "deletionTimestamp", "managedFields", name=S, generateName=S, namespace=S,
                   selfLink=S, uid=S, resourceVersion=S, generation=INT, deletionGracePeriodSeconds=INT, finalizers=SL,
                   labels=MAP, annotations=MAP, ownerReferences=[_OWNER_REF], __go__="ObjectMeta")
_CONTAINER = _obj(
    "envFrom", "resizePolicy", "volumeMounts", "volumeDevices", "livenessProbe", "readinessProbe", "startupProbe",
    "lifecycle", "securityContext",
    name=S, image=S, command=SL, args=SL, workingDir=S, restartPolicy=S, terminationMessagePath=S,
    terminationMessagePolicy=S, imagePullPolicy=S, stdin=B, stdinOnce=B, tty=B,
    ports=[_obj(name=S, hostPort=INT, containerPort=INT, protocol=S, hostIP=S, __go__="ContainerPort")],
    env=[_obj("valueFrom", name=S, value=S, __go__="EnvVar")],
    resources=_obj("claims", limits=QTY, requests=QTY, __go__="ResourceRequirements"), __go__="Container")
_TOLERATION = _obj(key=S, operator=S, value=S, effect=S, tolerationSeconds=INT, __go__="Toleration")
POD_SPEC = _obj(
    "volumes", "ephemeralContainers", "securityContext", "imagePullSecrets", "affinity", "hostAliases", "dnsConfig",
    "topologySpreadConstraints", "os", "resourceClaims", "resources",
    restartPolicy=S, terminationGracePeriodSeconds=INT, activeDeadlineSeconds=INT, dnsPolicy=S, serviceAccountName=S,
    serviceAccount=S, automountServiceAccountToken=B, nodeName=S, hostNetwork=B, hostPID=B, hostIPC=B,
    shareProcessNamespace=B, hostname=S, subdomain=S, schedulerName=S, priorityClassName=S, priority=INT,
    runtimeClassName=S, enableServiceLinks=B, preemptionPolicy=S, setHostnameAsFQDN=B, hostUsers=B,
    containers=[_CONTAINER], initContainers=[_CONTAINER], nodeSelector=MAP, tolerations=[_TOLERATION],
    readinessGates=[_obj(conditionType=S, __go__="PodReadinessGate")],
    schedulingGates=[_obj(name=S, __go__="PodSchedulingGate")], overhead=QTY, __go__="PodSpec")
_OBJECT_REF = _obj(kind=S, namespace=S, name=S, uid=S, apiVersion=S, resourceVersion=S, fieldPath=S,
                   __go__="ObjectReference")
_STATUS = {OPEN: True, GO: "Status"}

SCHEMAS: dict[str, dict[str, Any]] = {
    "Pod": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=POD_SPEC, status=_STATUS | {GO: "PodStatus"},
                __go__="Pod"),
    "Node": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_obj(
        "configSource", podCIDR=S, podCIDRs=SL, providerID=S, unschedulable=B, externalID=S,
        taints=[_obj("timeAdded", key=S, value=S, effect=S, __go__="Taint")], __go__="NodeSpec"),
        status=_STATUS | {"capacity": QTY, "allocatable": QTY, GO: "NodeStatus"}, __go__="Node"),
    "Namespace": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_obj(finalizers=SL, __go__="NamespaceSpec"),
                      status=_STATUS | {GO: "NamespaceStatus"}, __go__="Namespace"),
    "ConfigMap": _obj(apiVersion=S, kind=S, immutable=B, metadata=OBJECT_META, data=MAP, binaryData=MAP,
                      __go__="ConfigMap"),
    "ServiceAccount": _obj(apiVersion=S, kind=S, automountServiceAccountToken=B, metadata=OBJECT_META,
                           secrets=[_OBJECT_REF], imagePullSecrets=[_obj(name=S, __go__="LocalObjectReference")],
                           __go__="ServiceAccount"),
    "Event": _obj("firstTimestamp", "lastTimestamp", "eventTime", "series", "related", apiVersion=S, kind=S,
                  reason=S, message=S, count=INT, type=S, action=S, reportingComponent=S, reportingInstance=S,
                  metadata=OBJECT_META, involvedObject=_OBJECT_REF,
                  source=_obj(component=S, host=S, __go__="EventSource"), __go__="Event"),
    "Binding": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, target=_OBJECT_REF, __go__="Binding"),
    "Lease": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_obj(
        holderIdentity=S, leaseDurationSeconds=INT32, acquireTime=S, renewTime=S, leaseTransitions=INT32,
        strategy=S, preferredHolder=S, __go__="LeaseSpec"), __go__="Lease"),
}
_INT_OR_STRING: Any = ANY  # maxSurge / maxUnavailable: an integer or a percent string (validation checks them)
_SELECTOR = _obj(matchLabels=MAP, matchExpressions=[_obj(key=S, operator=S, values=SL,
                                                        __go__="LabelSelectorRequirement")], __go__="LabelSelector")
_TEMPLATE = _obj(metadata=OBJECT_META, spec=POD_SPEC, __go__="PodTemplateSpec")
SCHEMAS.update({
    "Deployment": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_obj(
        replicas=INT32, selector=_SELECTOR, template=_TEMPLATE, minReadySeconds=INT32, revisionHistoryLimit=INT32,
        paused=B, progressDeadlineSeconds=INT32, strategy=_obj(type=S, rollingUpdate=_obj(
            maxUnavailable=_INT_OR_STRING, maxSurge=_INT_OR_STRING, __go__="RollingUpdateDeployment"),
            __go__="DeploymentStrategy"), __go__="DeploymentSpec"),
        status=_STATUS | {GO: "DeploymentStatus"}, __go__="Deployment"),
    "ReplicaSet": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_obj(
        replicas=INT32, minReadySeconds=INT32, selector=_SELECTOR, template=_TEMPLATE, __go__="ReplicaSetSpec"),
        status=_STATUS | {GO: "ReplicaSetStatus"}, __go__="ReplicaSet"),
    "Job": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_obj(
        "podFailurePolicy", "successPolicy",
        parallelism=INT32, completions=INT32, activeDeadlineSeconds=INT, backoffLimit=INT32,
        backoffLimitPerIndex=INT32, maxFailedIndexes=INT32, selector=_SELECTOR, manualSelector=B,
        template=_TEMPLATE, ttlSecondsAfterFinished=INT32, completionMode=S, suspend=B, podReplacementPolicy=S,
        managedBy=S, __go__="JobSpec"),
        status=_STATUS | {GO: "JobStatus"}, __go__="Job"),
    "DaemonSet": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_obj(
        selector=_SELECTOR, template=_TEMPLATE, minReadySeconds=INT32, revisionHistoryLimit=INT32,
        updateStrategy=_obj(type=S, rollingUpdate=_obj(maxUnavailable=_INT_OR_STRING, maxSurge=_INT_OR_STRING,
                                                       __go__="RollingUpdateDaemonSet"),
                            __go__="DaemonSetUpdateStrategy"), __go__="DaemonSetSpec"),
        status=_STATUS | {GO: "DaemonSetStatus"}, __go__="DaemonSet"),
})
SCHEMAS["StatefulSet"] = _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_obj(
    "volumeClaimTemplates", "persistentVolumeClaimRetentionPolicy", "ordinals",
    replicas=INT32, selector=_SELECTOR, template=_TEMPLATE, serviceName=S, podManagementPolicy=S,
    updateStrategy=_obj(type=S, rollingUpdate=_obj(partition=INT32, maxUnavailable=_INT_OR_STRING,
                                                   __go__="RollingUpdateStatefulSetStrategy"),
                        __go__="StatefulSetUpdateStrategy"),
    revisionHistoryLimit=INT32, minReadySeconds=INT32, __go__="StatefulSetSpec"),
    status=_STATUS | {GO: "StatefulSetStatus"}, __go__="StatefulSet")
SCHEMAS["CronJob"] = _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_obj(
    schedule=S, timeZone=S, startingDeadlineSeconds=INT, concurrencyPolicy=S, suspend=B,
    successfulJobsHistoryLimit=INT32, failedJobsHistoryLimit=INT32,
    jobTemplate=_obj(metadata=OBJECT_META, spec=SCHEMAS["Job"]["spec"], __go__="JobTemplateSpec"),
    __go__="CronJobSpec"), status=_STATUS | {GO: "CronJobStatus"}, __go__="CronJob")



def _open(**fields: Any) -> dict[str, Any]:
    """An object whose listed fields are type-checked and whose other fields are stored unchecked."""
    return {OPEN: True, **fields}


#: resource.k8s.io/v1: the fields ``resourcev1`` reads are typed (a wrong JSON type is the decoder's 400); the
#: objects are open, so newer or alpha fields are stored without a strict-decoding error (simplified)
_CEL_SELECTORS = [_open(cel=_open(expression=S, __go__="CELDeviceSelector"), __go__="DeviceSelector")]
_OPAQUE = _open(driver=S, __go__="OpaqueDeviceConfiguration")
_EXACT = dict(deviceClassName=S, selectors=_CEL_SELECTORS, allocationMode=S, count=INT, adminAccess=B)
_CLAIM_SPEC = _open(devices=_open(
    requests=[_open(name=S, exactly=_open(**_EXACT, __go__="ExactDeviceRequest"),
                    firstAvailable=[_open(name=S, **_EXACT, __go__="DeviceSubRequest")], __go__="DeviceRequest")],
    constraints=[_open(requests=SL, matchAttribute=S, distinctAttribute=S, __go__="DeviceConstraint")],
    config=[_open(requests=SL, opaque=_OPAQUE, __go__="DeviceClaimConfiguration")], __go__="DeviceClaim"),
    __go__="ResourceClaimSpec")
_CLAIM_STATUS = _open(allocation=_open(devices=_open(results=[_open(
    request=S, driver=S, pool=S, device=S, adminAccess=B, __go__="DeviceRequestAllocationResult")],
    __go__="DeviceAllocationResult"), __go__="AllocationResult"),
    reservedFor=[_open(apiGroup=S, resource=S, name=S, uid=S, __go__="ResourceClaimConsumerReference")],
    __go__="ResourceClaimStatus")
_DEVICE = _open(name=S, nodeName=S, allNodes=B,
                consumesCounters=[_open(counterSet=S, __go__="DeviceCounterConsumption")], __go__="Device")
SCHEMAS.update({
    "DeviceClass": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_open(
        selectors=_CEL_SELECTORS, config=[_open(opaque=_OPAQUE, __go__="DeviceClassConfiguration")],
        extendedResourceName=S, __go__="DeviceClassSpec"), __go__="DeviceClass"),
    "ResourceClaim": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_CLAIM_SPEC, status=_CLAIM_STATUS,
                          __go__="ResourceClaim"),
    "ResourceClaimTemplate": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_obj(
        metadata=OBJECT_META, spec=_CLAIM_SPEC, __go__="ResourceClaimTemplateSpec"), __go__="ResourceClaimTemplate"),
    "ResourceSlice": _obj(apiVersion=S, kind=S, metadata=OBJECT_META, spec=_open(
        driver=S, nodeName=S, allNodes=B, perDeviceNodeSelection=B,
        pool=_open(name=S, generation=INT, resourceSliceCount=INT, __go__="ResourcePool"), devices=[_DEVICE],
        sharedCounters=[_open(name=S, __go__="CounterSet")], __go__="ResourceSliceSpec"), __go__="ResourceSlice"),
})

def unknown_fields(kind: str, obj: Any) -> list[str]:
    """Paths of fields the kind does not have, as strict decoding names them (``spec.containers[0].foo``)."""
    schema = SCHEMAS.get(kind)
    return _walk(schema, obj, "") if schema is not None else []


def _walk(schema: Any, value: Any, path: str) -> list[str]:
    if not isinstance(schema, dict | list):
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
        if key not in schema or key in (OPEN, GO):
            if not schema.get(OPEN):
                out.append(child)
        else:
            out.extend(_walk(schema[key], sub, child))
    return out


def json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "value")


def type_error(kind: str, obj: Any) -> str | None:
    """The first value whose JSON type the Go types cannot hold, worded like ``encoding/json``; None if fine."""
    schema = SCHEMAS.get(kind)
    return _types(schema, obj, kind, kind, "") if schema is not None else None


def _types(schema: Any, value: Any, go: str, struct: str, path: str) -> str | None:
    if schema is ANY or value is None:
        return None
    expected, ok = _expected(schema, value)
    if not ok:
        got = json_kind(value)
        if got == "number" and expected in (INT, INT32):  # Go names the literal it could not fit
            got = f"number {json.dumps(value)}"
        return (f"json: cannot unmarshal {got} into Go struct field {struct}.{path} of type {expected}"
                if path else f"json: cannot unmarshal {json_kind(value)} into Go value of type v1.{go}")
    if isinstance(schema, list):
        for item in value:
            err = _types(schema[0], item, schema[0].get(GO, go), struct, path)
            if err:
                return err
    elif isinstance(schema, dict):
        owner = schema.get(GO, go)
        for key, sub in value.items():
            if key in schema and key not in (OPEN, GO):
                err = _types(schema[key], sub, sub.get(GO, owner) if isinstance(sub, dict) else owner, owner,
                             f"{path}.{key}" if path else key)
                if err:
                    return err
    return None


def _expected(schema: Any, value: Any) -> tuple[str, bool]:
    if isinstance(schema, list):
        return f"[]v1.{schema[0].get(GO, 'Object')}", isinstance(value, list)
    if isinstance(schema, dict):
        return f"v1.{schema.get(GO, 'Object')}", isinstance(value, dict)
    if schema == S:
        return "string", isinstance(value, str)
    if schema in (INT, INT32):
        bound = 2**31 if schema == INT32 else 2**63
        return schema, isinstance(value, int) and not isinstance(value, bool) and -bound <= value < bound
    if schema == B:
        return "bool", isinstance(value, bool)
    if schema == SL:
        return "[]string", isinstance(value, list) and all(isinstance(v, str) for v in value)
    if schema == MAP:
        return "map[string]string", isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    if schema == QTY:
        return "v1.ResourceList", isinstance(value, dict)  # each value is checked as a quantity
    return "", True


_FIELD_VALIDATION_PARAM = {
    "name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True},
    "description": "fieldValidation instructs the server on how to handle objects in the request containing "
                   "unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.",
}


def _path_for(prefix: str, plural: str, namespaced: bool) -> str:
    return f"/{prefix}/namespaces/{{namespace}}/{plural}/{{name}}" if namespaced else f"/{prefix}/{plural}/{{name}}"


def openapi_v3_core() -> dict[str, Any]:
    """``GET /openapi/v3/api/v1``: each kind's item path with PATCH accepting ``fieldValidation``, and schemas."""
    return openapi_v3_document("v1")


def openapi_v3_document(group_version: str) -> dict[str, Any]:
    """``GET /openapi/v3/api/v1`` or ``/openapi/v3/apis/<group>/<version>``: each kind's item path (GET, and
    PATCH accepting ``fieldValidation``) and the schemas (for ``kubectl explain``)."""
    paths: dict[str, Any] = {}
    resources = RESOURCES if group_version == "v1" else GROUP_RESOURCES[group_version]
    prefix = "api/v1" if group_version == "v1" else f"apis/{group_version}"
    for plural, info in resources.items():
        if "get" not in info.verbs:
            continue
        gvk = {"group": info.group, "version": "v1", "kind": info.kind}
        ops: dict[str, Any] = {}
        for verb in ("get", "patch"):  # kubectl explain finds a kind by its path; apply reads fieldValidation
            if verb in info.verbs:
                ops[verb] = {"operationId": f"{'read' if verb == 'get' else verb}"
                                            f"{'Namespaced' if info.namespaced else ''}{info.kind}",
                             "x-kubernetes-action": verb, "x-kubernetes-group-version-kind": gvk,
                             "responses": {"200": {"description": "OK"}}}
        if "patch" in ops:
            ops["patch"]["parameters"] = [_FIELD_VALIDATION_PARAM]
        paths[_path_for(prefix, plural, info.namespaced)] = ops
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": GIT_VERSION}, "paths": paths,
            "components": {"schemas": component_schemas(group_version)}}


#: the group-versions with an OpenAPI v3 document (those whose kinds the official client models)
DOCUMENTED = ("v1", *GROUP_PY_KINDS)


@functools.cache
def _digest(group_version: str) -> str:
    doc = openapi_v3_document(group_version)
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()[:128]


def document_path(group_version: str) -> str:
    return "api/v1" if group_version == "v1" else f"apis/{group_version}"


def openapi_v3_root() -> dict[str, Any]:
    """``GET /openapi/v3``: where each group-version's document is, with a content hash as upstream."""
    return {"paths": {document_path(gv): {"serverRelativeURL": f"/openapi/v3/{document_path(gv)}?hash={_digest(gv)}"}
                      for gv in DOCUMENTED}}
