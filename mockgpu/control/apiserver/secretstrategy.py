"""core/v1 Secrets: defaults, ``stringData``, validation and printing, as kube-apiserver v1.37.2.

Upstream, in k8s.io/kubernetes v1.37.2:
- ``pkg/apis/core/v1/conversion.go`` ``Convert_v1_Secret_To_core_Secret``: ``stringData`` is merged into ``data``
  (its values overwrite) and never stored or returned; ``pkg/apis/core/v1/defaults.go`` ``SetDefaults_Secret``:
  ``type`` defaults to ``Opaque`` (``prepare_secret``);
- ``pkg/apis/core/validation/validation.go`` ``ValidateSecret`` / ``ValidateSecretUpdate``: keys as ConfigMap keys,
  1 MiB of values at most, what each built-in ``type`` requires, ``type`` immutable, and ``immutable: true`` freezing
  ``data`` (``validate_secret``);
- ``pkg/printers/internalversion/printers.go`` ``printSecret``: NAME, TYPE, DATA, AGE.

The ``data`` values are checked as ``[]byte`` (standard base64) where every body is decoded (``fieldvalidation``).
Simplified: no service-account token controller fills ``kubernetes.io/service-account-token`` Secrets.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from typing import Any

from mockgpu.control.apiserver import names
from mockgpu.control.apiserver.gojson import json_kind
from mockgpu.control.apiserver.status import (
    FieldError,
    field_forbidden,
    field_invalid,
    field_required,
    field_too_long,
)

Obj = dict[str, Any]

MAX_SECRET_SIZE = 1024 * 1024  # core.MaxSecretSize
OPAQUE = "Opaque"
SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"
REDACTED = "<secret contents redacted>"
#: type -> data keys of which at least one (``any``) or each (``all``) must be present
_DOCKER_JSON = {"kubernetes.io/dockercfg": ".dockercfg", "kubernetes.io/dockerconfigjson": ".dockerconfigjson"}


def prepare_secret(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """The conversion's ``stringData`` merge, then ``SetDefaults_Secret``."""
    obj = copy.deepcopy(obj)
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    if not obj.get("type"):
        obj["type"] = OPAQUE
    return obj


def _decoded(value: Any) -> bytes:
    try:
        return base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except (binascii.Error, ValueError):  # refused earlier, where the body is decoded
        return b""


def _go_json_error(raw: bytes) -> str | None:
    """What ``json.Unmarshal`` into a ``map[string]interface{}`` says of ``raw``, or None when it decodes. Its common
    texts only: a syntax error inside a document gets Go's "looking for beginning of value" form."""
    text = raw.decode("utf-8", errors="replace")
    if not text.strip():
        return "unexpected end of JSON input"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            return "unexpected end of JSON input"
        if exc.msg == "Extra data":
            return f"invalid character {text[exc.pos]!r} after top-level value"
        return f"invalid character {text[exc.pos]!r} looking for beginning of value"
    if not isinstance(value, dict):
        return f"json: cannot unmarshal {json_kind(value)} into Go value of type map[string]interface {{}}"
    return None


def validate_secret(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateSecret``, and on update ``ValidateSecretUpdate``'s checks before it."""
    errs: list[FieldError] = []
    data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    if old is not None:
        if obj.get("type") != old.get("type"):
            errs.append(field_invalid("type", obj.get("type"), "field is immutable"))
        if old.get("immutable") is True:
            if obj.get("immutable") is not True:
                errs.append(field_forbidden("immutable", "field is immutable when `immutable` is set"))
            if data != (old.get("data") or {}):
                errs.append(field_forbidden("data", "field is immutable when `immutable` is set"))
    total = 0
    for key, value in data.items():
        errs += [field_invalid(f"data[{key}]", key, m) for m in names.configmap_key(key)]
        total += len(_decoded(value))
    if total > MAX_SECRET_SIZE:
        errs.append(field_too_long("data", MAX_SECRET_SIZE))
    kind = obj.get("type")
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if kind == "kubernetes.io/service-account-token":
        if not annotations.get(SERVICE_ACCOUNT_NAME_KEY):
            errs.append(field_required(f"metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]"))
    elif kind in _DOCKER_JSON:
        key = _DOCKER_JSON[kind]
        if key not in data:
            errs.append(field_required(f"data[{key}]"))
        elif (problem := _go_json_error(_decoded(data[key]))) is not None:
            errs.append(field_invalid(f"data[{key}]", REDACTED, problem))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs += [field_required("data[username]"), field_required("data[password]")]
    elif kind == "kubernetes.io/ssh-auth":
        if not _decoded(data.get("ssh-privatekey")):
            errs.append(field_required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        errs += [field_required(f"data[{k}]") for k in ("tls.crt", "tls.key") if k not in data]
    return errs

