"""Decoding of Kubernetes' protobuf request bodies for the kinds kubectl sends that way.

kubectl's typed commands (``kubectl create configmap|namespace|serviceaccount``) send
``application/vnd.kubernetes.protobuf``: the magic ``k8s\\x00`` and a ``runtime.Unknown`` envelope whose ``raw``
field is the object in the field numbering of ``k8s.io/api/core/v1/generated.proto``. Only the fields of ConfigMap,
Namespace, ServiceAccount, ResourceQuota (``kubectl create quota``), the self-reviews (authorization/v1,
authentication/v1), the Deployments, ReplicaSets, Jobs and CronJobs of ``kubectl create deployment|job|cronjob``
(``k8s.io/api/{apps,batch}/v1``, their pod template's common PodSpec and Container fields), the Services of
``kubectl create service`` and ``kubectl expose``, the RBAC objects of ``kubectl create role|rolebinding|...``, and
ObjectMeta that a client sets on create are decoded; other kinds are 415 (responses are always JSON, which every
client also accepts).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

from mockgpu.control.apiserver import status as st

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# field number -> (name, how): "str", "int", "bool", "int0"/"bool0" (dropped when zero), "intstr", "qmap" (quantities),
# "map", "bmap" (map<string, bytes>), "strs", or a schema dict
_OWNER = {1: ("kind", "str"), 3: ("name", "str"), 4: ("uid", "str"), 5: ("apiVersion", "str"),
          6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")}
_META = {1: ("name", "str"), 2: ("generateName", "str"), 3: ("namespace", "str"), 5: ("uid", "str"),
         6: ("resourceVersion", "str"), 7: ("generation", "int0"), 11: ("labels", "map"),
         12: ("annotations", "map"), 13: ("ownerReferences", [_OWNER]), 14: ("finalizers", "strs")}
# the messages of the kinds (their records name them), in k8s.io/api's generated.proto numbering
Message = dict[int, tuple[str, Any]]
CONFIG_MAP: Message = {1: ("metadata", _META), 2: ("data", "map"), 3: ("binaryData", "bmap"), 4: ("immutable", "bool")}
NAMESPACE: Message = {1: ("metadata", _META), 2: ("spec", {1: ("finalizers", "strs")})}
SERVICE_ACCOUNT: Message = {1: ("metadata", _META), 3: ("imagePullSecrets", [{1: ("name", "str")}]),
                            4: ("automountServiceAccountToken", "bool")}
# kubectl create quota: ResourceQuotaSpec (status is the controller's)
RESOURCE_QUOTA: Message = {1: ("metadata", _META), 2: ("spec", {
    1: ("hard", "qmap"), 2: ("scopes", "strs"),
    3: ("scopeSelector", {1: ("matchExpressions", [{1: ("scopeName", "str"), 2: ("operator", "str"),
                                                    3: ("values", "strs")}])})})}
# k8s.io/api/authorization/v1 (kubectl auth can-i); field/label selector attributes are not decoded
SELF_SUBJECT_ACCESS_REVIEW: Message = {1: ("metadata", _META), 2: ("spec", {
    1: ("resourceAttributes", {1: ("namespace", "str"), 2: ("verb", "str"), 3: ("group", "str"),
                               4: ("version", "str"), 5: ("resource", "str"), 6: ("subresource", "str"),
                               7: ("name", "str")}),
    2: ("nonResourceAttributes", {1: ("path", "str"), 2: ("verb", "str")})})}
SELF_SUBJECT_RULES_REVIEW: Message = {1: ("metadata", _META), 2: ("spec", {1: ("namespace", "str")})}
SELF_SUBJECT_REVIEW: Message = {1: ("metadata", _META)}  # authentication/v1 (kubectl auth whoami)


# pod templates (apps/v1, batch/v1): the PodSpec and Container fields a client sets; volumes, probes, affinity and
# security contexts are not decoded (a body using them must be sent as JSON)
_SELECTOR = {1: ("matchLabels", "map"), 2: ("matchExpressions", [{1: ("key", "str"), 2: ("operator", "str"),
                                                                   3: ("values", "strs")}])}
_RESOURCES = {1: ("limits", "qmap"), 2: ("requests", "qmap")}
_CONTAINER = {1: ("name", "str"), 2: ("image", "str"), 3: ("command", "strs"), 4: ("args", "strs"),
              5: ("workingDir", "str"),
              6: ("ports", [{1: ("name", "str"), 2: ("hostPort", "int0"), 3: ("containerPort", "int"),
                             4: ("protocol", "str"), 5: ("hostIP", "str")}]),
              7: ("env", [{1: ("name", "str"), 2: ("value", "str")}]), 8: ("resources", _RESOURCES),
              13: ("terminationMessagePath", "str"), 14: ("imagePullPolicy", "str"), 16: ("stdin", "bool0"),
              17: ("stdinOnce", "bool0"), 18: ("tty", "bool0"), 20: ("terminationMessagePolicy", "str"),
              24: ("restartPolicy", "str")}
_POD_SPEC = {2: ("containers", [_CONTAINER]), 3: ("restartPolicy", "str"), 4: ("terminationGracePeriodSeconds", "int"),
             5: ("activeDeadlineSeconds", "int"), 6: ("dnsPolicy", "str"), 7: ("nodeSelector", "map"),
             8: ("serviceAccountName", "str"), 10: ("nodeName", "str"), 19: ("schedulerName", "str"),
             20: ("initContainers", [_CONTAINER]),
             22: ("tolerations", [{1: ("key", "str"), 2: ("operator", "str"), 3: ("value", "str"),
                                   4: ("effect", "str"), 5: ("tolerationSeconds", "int")}]),
             24: ("priorityClassName", "str"), 25: ("priority", "int")}
_TEMPLATE = {1: ("metadata", _META), 2: ("spec", _POD_SPEC)}
DEPLOYMENT: Message = {1: ("metadata", _META), 2: ("spec", {
        1: ("replicas", "int"), 2: ("selector", _SELECTOR), 3: ("template", _TEMPLATE),
        4: ("strategy", {1: ("type", "str"), 2: ("rollingUpdate", {1: ("maxUnavailable", "intstr"),
                                                                   2: ("maxSurge", "intstr")})}),
        5: ("minReadySeconds", "int0"), 6: ("revisionHistoryLimit", "int"), 7: ("paused", "bool0"),
        9: ("progressDeadlineSeconds", "int")}), 3: ("status", {})}
REPLICA_SET: Message = {1: ("metadata", _META), 2: ("spec", {
    1: ("replicas", "int"), 2: ("selector", _SELECTOR), 3: ("template", _TEMPLATE), 4: ("minReadySeconds", "int0")}),
                        3: ("status", {})}
JOB: Message = {1: ("metadata", _META), 2: ("spec", {
        1: ("parallelism", "int"), 2: ("completions", "int"), 3: ("activeDeadlineSeconds", "int"),
        4: ("selector", _SELECTOR), 5: ("manualSelector", "bool"), 6: ("template", _TEMPLATE),
        7: ("backoffLimit", "int"), 8: ("ttlSecondsAfterFinished", "int"), 9: ("completionMode", "str"),
        10: ("suspend", "bool"), 12: ("backoffLimitPerIndex", "int"), 13: ("maxFailedIndexes", "int"),
        14: ("podReplacementPolicy", "str"), 15: ("managedBy", "str")}), 3: ("status", {})}
CRON_JOB: Message = {1: ("metadata", _META), 2: ("spec", {
    1: ("schedule", "str"), 8: ("timeZone", "str"), 2: ("startingDeadlineSeconds", "int"),
    3: ("concurrencyPolicy", "str"), 4: ("suspend", "bool"),
    5: ("jobTemplate", {1: ("metadata", _META), 2: ("spec", JOB[2][1])}),
    6: ("successfulJobsHistoryLimit", "int"), 7: ("failedJobsHistoryLimit", "int")}), 3: ("status", {})}

# k8s.io/api/core/v1 Service (kubectl create service clusterip|nodeport|loadbalancer|externalname, kubectl expose)
SERVICE: Message = {1: ("metadata", _META), 2: ("spec", {
    1: ("ports", [{1: ("name", "str"), 2: ("protocol", "str"), 3: ("port", "int"), 4: ("targetPort", "intstr"),
                   5: ("nodePort", "int0"), 6: ("appProtocol", "str")}]),
    2: ("selector", "map"), 3: ("clusterIP", "str"), 4: ("type", "str"), 5: ("externalIPs", "strs"),
    7: ("sessionAffinity", "str"), 8: ("loadBalancerIP", "str"), 9: ("loadBalancerSourceRanges", "strs"),
    10: ("externalName", "str"), 11: ("externalTrafficPolicy", "str"), 12: ("healthCheckNodePort", "int0"),
    13: ("publishNotReadyAddresses", "bool0"), 17: ("ipFamilyPolicy", "str"), 18: ("clusterIPs", "strs"),
    19: ("ipFamilies", "strs"), 20: ("allocateLoadBalancerNodePorts", "bool"), 21: ("loadBalancerClass", "str"),
    22: ("internalTrafficPolicy", "str"), 23: ("trafficDistribution", "str")}), 3: ("status", {})}
# k8s.io/api/rbac/v1 (kubectl create role|clusterrole|rolebinding|clusterrolebinding)
_RULE = {1: ("verbs", "strs"), 2: ("apiGroups", "strs"), 3: ("resources", "strs"), 4: ("resourceNames", "strs"),
         5: ("nonResourceURLs", "strs")}
ROLE: Message = {1: ("metadata", _META), 2: ("rules", [_RULE])}
CLUSTER_ROLE: Message = {1: ("metadata", _META), 2: ("rules", [_RULE]),
                         3: ("aggregationRule", {1: ("clusterRoleSelectors", [_SELECTOR])})}
ROLE_BINDING: Message = {1: ("metadata", _META), 2: ("subjects", [{1: ("kind", "str"), 2: ("apiGroup", "str"),
                                                                   3: ("name", "str"), 4: ("namespace", "str")}]),
                         3: ("roleRef", {1: ("apiGroup", "str"), 2: ("kind", "str"), 3: ("name", "str")})}

class _Bad(ValueError):
    pass


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise _Bad("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            yield num, value
        elif wire == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise _Bad("truncated field")
            yield num, buf[i:i + n]
            i += n
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise _Bad(f"unsupported wire type {wire}")


def _text(v: int | bytes) -> str:
    if not isinstance(v, bytes):
        raise _Bad("expected a string")
    return v.decode("utf-8")


def _message(buf: bytes, schema: dict[int, tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for num, value in _fields(buf):
        if num not in schema:
            continue
        name, how = schema[num]
        if how == "str":  # Go marshals an empty string field too; JSON omits it (omitempty), so drop it
            text = _text(value)
            if text:
                out[name] = text
        elif how == "int":  # int32/int64 varints: negative values are 64-bit two's complement
            n = int(value) if isinstance(value, int) else 0
            out[name] = n - 2**64 if n >= 2**63 else n
        elif how in ("int0", "bool0"):  # non-pointer Go fields: always marshaled, omitted from JSON when zero
            if value:
                out[name] = bool(value) if how == "bool0" else int(value)
        elif how == "intstr":  # intstr.IntOrString: type 0 → intVal, 1 → strVal
            v = _message(value if isinstance(value, bytes) else b"", {1: ("type", "int"), 2: ("intVal", "int"),
                                                                     3: ("strVal", "str")})
            out[name] = v.get("strVal", "") if v.get("type") == 1 else v.get("intVal", 0)
        elif how == "qmap":  # map<string, resource.Quantity>; a Quantity is a message holding its string
            entry = dict(_fields(value if isinstance(value, bytes) else b""))
            qty = entry.get(2, b"")
            text = dict(_fields(qty)).get(1, b"") if isinstance(qty, bytes) else b""
            out.setdefault(name, {})[_text(entry.get(1, b""))] = _text(text)
        elif how == "bool":
            out[name] = bool(value)
        elif how == "strs":
            out.setdefault(name, []).append(_text(value))
        elif how in ("map", "bmap"):
            entry = dict(_fields(value if isinstance(value, bytes) else b""))
            key, val = _text(entry.get(1, b"")), entry.get(2, b"")
            if not isinstance(val, bytes):
                raise _Bad("expected bytes")
            out.setdefault(name, {})[key] = base64.b64encode(val).decode() if how == "bmap" else val.decode()
        elif isinstance(how, list):
            out.setdefault(name, []).append(_message(value if isinstance(value, bytes) else b"", how[0]))
        else:
            out[name] = _message(value if isinstance(value, bytes) else b"", how)
    return out


def decode(raw: bytes, message_of: Callable[[str], Message | None]) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object; ``message_of(kind)`` its message (the kind's record names it);
    400 when malformed, 415 for kinds without one."""
    if not raw.startswith(MAGIC):
        raise st.bad_request("provided protobuf is not a Kubernetes object: missing the k8s magic prefix")
    try:
        envelope = dict(_fields(raw[len(MAGIC):]))
        type_meta = dict(_fields(envelope.get(1, b""))) if isinstance(envelope.get(1, b""), bytes) else {}
        api_version, kind = _text(type_meta.get(1, b"")), _text(type_meta.get(2, b""))
        schema = message_of(kind)
        if schema is None:
            raise st.unsupported_media_type(CONTENT_TYPE)
        body = envelope.get(2, b"")
        obj = _message(body if isinstance(body, bytes) else b"", schema)
    except (_Bad, UnicodeDecodeError) as exc:
        raise st.bad_request(f"unable to decode protobuf body: {exc}") from None
    return {"apiVersion": api_version, "kind": kind, **obj}


OPENAPI_V2_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # what client-go asks for
OPENAPI_V2_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"  # what is served (Go's
# mime parser refuses the '@' form in a response)


def _field_bytes(num: int, value: bytes) -> bytes:
    out, n = bytearray([(num << 3) | 2]), len(value)
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + value


def openapi_v2_document(title: str, version: str) -> bytes:
    """``GET /openapi/v2`` as client-go asks for it: a gnostic ``openapi_v2.Document`` in protobuf with only
    ``swagger`` and ``info`` (no definitions). kubectl then skips client-side schema validation for kinds
    it cannot look up (e.g. ``kind: List`` files, which the v3 field-validation check does not cover) and
    uses its compiled-in types for strategic merge patches."""
    info = _field_bytes(1, title.encode()) + _field_bytes(2, version.encode())
    return _field_bytes(1, b"2.0") + _field_bytes(2, info)
