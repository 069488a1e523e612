"""core/v1 Secrets: upstream's ``pkg/registry/core/secret`` strategy, its defaults and its validation.

- Defaults (``SetDefaults_Secret``): ``type: Opaque`` when absent.
- ``stringData`` is write-only: the v1 → internal conversion (``Convert_v1_Secret_To_core_Secret``) writes each of
  its values into ``data`` (over a key ``data`` has too) and the field is never stored or returned.
- Validation (``ValidateSecret``, ``ValidateSecretUpdate``): the name a DNS subdomain (the record's name rule);
  every key of ``data`` a ConfigMap key; the values' decoded bytes at most 1 MiB in all (``MaxSecretSize``); the
  keys each built-in type needs (``kubernetes.io/tls``: ``tls.crt`` and ``tls.key``; ``kubernetes.io/basic-auth``:
  ``username`` or ``password``; ``kubernetes.io/ssh-auth``: a non-empty ``ssh-privatekey``; the docker types their
  config as a JSON object; ``kubernetes.io/service-account-token``: the ``kubernetes.io/service-account.name``
  annotation); on update, ``type`` is immutable, and so are ``data`` and ``immutable: true`` once set.

Simplified: the token controller that fills a service-account-token Secret's ``token`` is not run (nothing here
reads those tokens); a docker config that is not JSON is refused with Go's words for an empty, cut-short or
non-object body and with Python's JSON decoder's words otherwise.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mockgpu.apimachinery import names
from mockgpu.apimachinery.status import FieldError, field_forbidden, field_invalid, field_required, field_too_long

MAX_SECRET_SIZE = 1024 * 1024
OPAQUE = "Opaque"
SERVICE_ACCOUNT_NAME = "kubernetes.io/service-account.name"
_REDACTED = "<secret contents redacted>"
_DOCKER_KEYS = {"kubernetes.io/dockercfg": ".dockercfg", "kubernetes.io/dockerconfigjson": ".dockerconfigjson"}

Obj = dict[str, Any]


def prepare_secret(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """Defaults and the conversion of ``stringData`` into ``data`` (base64 of the UTF-8 text)."""
    obj.setdefault("type", OPAQUE)
    if not obj.get("type"):
        obj["type"] = OPAQUE
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    return obj


def _decoded(value: Any) -> bytes:
    try:
        return base64.b64decode(value or "", validate=False)
    except (binascii.Error, ValueError, TypeError):
        return b""


def _go_json_error(raw: bytes) -> str | None:
    """Why Go's ``json.Unmarshal`` into a ``map[string]interface{}`` fails on ``raw``, or None."""
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        return "unexpected end of JSON input"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            return "unexpected end of JSON input"
        if exc.pos == len(text) - len(text.lstrip()):
            return f"invalid character {_go_char(text[exc.pos])} looking for beginning of value"
        return exc.msg
    if value is None or isinstance(value, dict):
        return None
    kind = {bool: "bool", str: "string", list: "array"}.get(type(value), "number")
    return f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"


def _go_char(ch: str) -> str:
    """A character as encoding/json's ``quoteChar`` prints it."""
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    return "'" + json.dumps(ch)[1:-1] + "'"


def validate_secret(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateSecretUpdate`` (with ``old``) or ``ValidateSecret``; ObjectMeta is the server's."""
    errs: list[FieldError] = []
    if old is not None:
        if obj.get("type") != old.get("type"):
            errs.append(field_invalid("type", obj.get("type"), "field is immutable"))
        if old.get("immutable") is True:
            if obj.get("immutable") is not True:
                errs.append(field_forbidden("immutable", "field is immutable when `immutable` is set"))
            if (obj.get("data") or {}) != (old.get("data") or {}):
                errs.append(field_forbidden("data", "field is immutable when `immutable` is set"))
    data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    total = 0
    for key, value in data.items():
        errs += [field_invalid(f"data[{key}]", key, m) for m in names.configmap_key(key)]
        total += len(_decoded(value))
    if total > MAX_SECRET_SIZE:
        errs.append(field_too_long("data", MAX_SECRET_SIZE))
    kind = obj.get("type") or ""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if kind == "kubernetes.io/service-account-token":
        if not annotations.get(SERVICE_ACCOUNT_NAME):
            errs.append(field_required(f"metadata.annotations[{SERVICE_ACCOUNT_NAME}]"))
    elif kind in _DOCKER_KEYS:
        key = _DOCKER_KEYS[kind]
        if key not in data:
            errs.append(field_required(f"data[{key}]"))
        else:
            problem = _go_json_error(_decoded(data[key]))
            if problem:
                errs.append(field_invalid(f"data[{key}]", _REDACTED, problem))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs += [field_required("data[username]"), field_required("data[password]")]
    elif kind == "kubernetes.io/ssh-auth":
        if not _decoded(data.get("ssh-privatekey")):
            errs.append(field_required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        errs += [field_required(f"data[{k}]") for k in ("tls.crt", "tls.key") if k not in data]
    return errs
