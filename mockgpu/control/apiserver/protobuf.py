"""Decoding of Kubernetes' protobuf request bodies for the kinds kubectl sends that way.

kubectl's typed commands (``kubectl create configmap|namespace|serviceaccount``) send
``application/vnd.kubernetes.protobuf``: the magic ``k8s\\x00`` and a ``runtime.Unknown`` envelope whose
``raw`` field is the object in the field numbering of ``k8s.io/api/core/v1/generated.proto``. Only the
fields of ConfigMap, Namespace, ServiceAccount, the self-reviews (authorization/v1, authentication/v1) and
ObjectMeta that a client sets on create are decoded; other kinds are 415 (responses are always JSON, which
every client also accepts).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from mockgpu.control.apiserver import status as st

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# field number -> (name, how): "str", "int", "bool", "map", "bmap" (map<string, bytes>), "strs", or a schema dict
_OWNER = {1: ("kind", "str"), 3: ("name", "str"), 4: ("uid", "str"), 5: ("apiVersion", "str"),
          6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")}
_META = {1: ("name", "str"), 2: ("generateName", "str"), 3: ("namespace", "str"), 5: ("uid", "str"),
         6: ("resourceVersion", "str"), 7: ("generation", "int"), 11: ("labels", "map"),
         12: ("annotations", "map"), 13: ("ownerReferences", [_OWNER]), 14: ("finalizers", "strs")}
_KINDS: dict[str, dict[int, tuple[str, Any]]] = {
    "ConfigMap": {1: ("metadata", _META), 2: ("data", "map"), 3: ("binaryData", "bmap"), 4: ("immutable", "bool")},
    "Namespace": {1: ("metadata", _META), 2: ("spec", {1: ("finalizers", "strs")})},
    "ServiceAccount": {1: ("metadata", _META), 3: ("imagePullSecrets", [{1: ("name", "str")}]),
                       4: ("automountServiceAccountToken", "bool")},
    # k8s.io/api/authorization/v1 (kubectl auth can-i); field/label selector attributes are not decoded
    "SelfSubjectAccessReview": {1: ("metadata", _META), 2: ("spec", {
        1: ("resourceAttributes", {1: ("namespace", "str"), 2: ("verb", "str"), 3: ("group", "str"),
                                   4: ("version", "str"), 5: ("resource", "str"), 6: ("subresource", "str"),
                                   7: ("name", "str")}),
        2: ("nonResourceAttributes", {1: ("path", "str"), 2: ("verb", "str")})})},
    "SelfSubjectRulesReview": {1: ("metadata", _META), 2: ("spec", {1: ("namespace", "str")})},
    "SelfSubjectReview": {1: ("metadata", _META)},  # authentication/v1 (kubectl auth whoami)
}


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
        if how == "str":
            out[name] = _text(value)
        elif how == "int":
            out[name] = int(value) if isinstance(value, int) else 0
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


def decode(raw: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object; 400 when malformed, 415 for kinds not decoded here."""
    if not raw.startswith(MAGIC):
        raise st.bad_request("provided protobuf is not a Kubernetes object: missing the k8s magic prefix")
    try:
        envelope = dict(_fields(raw[len(MAGIC):]))
        type_meta = dict(_fields(envelope.get(1, b""))) if isinstance(envelope.get(1, b""), bytes) else {}
        api_version, kind = _text(type_meta.get(1, b"")), _text(type_meta.get(2, b""))
        schema = _KINDS.get(kind)
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
