"""Kubernetes ``Status`` errors and field errors with upstream's reasons, codes and message texts.

Every failing request of the embedded API server ends in a :class:`StatusError`, whose ``status`` is
the complete ``v1 Status`` body that kube-apiserver would send (``k8s.io/apimachinery/pkg/api/errors``),
so ``kubectl`` and the official Python client print exactly what they print against a real cluster.
``FieldError`` and ``field_*`` are ``k8s.io/apimachinery/pkg/util/validation/field``'s errors, which an
``Invalid`` Status carries as causes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: field.ErrorType → (cause reason, text that starts the cause message)
_FIELD_TYPES: dict[str, tuple[str, str]] = {
    "NotFound": ("FieldValueNotFound", "Not found"),
    "Required": ("FieldValueRequired", "Required value"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
    "TooLong": ("FieldValueTooLong", "Too long"),
    "TooMany": ("FieldValueTooMany", "Too many"),
    "Internal": ("InternalError", "Internal error"),
    "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
}
_NO_VALUE = {"Required", "Forbidden", "TooLong", "Internal"}


def _go_value(value: Any) -> str:
    """A bad value as apimachinery's field.Error prints it (strings quoted, numbers/bools bare)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict | list):  # other types: json.Marshal of the versioned value
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


@dataclass(frozen=True)
class FieldError:
    """One validation failure: a field path, an error type (``Invalid``, ``Required``, ...) and detail."""

    field: str
    type: str
    detail: str = ""
    value: Any = None
    omit_value: bool = False  # upstream's field.OmitValueType{}: "Invalid value: <detail>"

    @property
    def reason(self) -> str:
        return _FIELD_TYPES[self.type][0]

    def body(self) -> str:
        """upstream ``ErrorBody()``: type text, the bad value unless the type hides it, then the detail."""
        text = _FIELD_TYPES[self.type][1]
        if self.type not in _NO_VALUE and not self.omit_value:
            text += ": " + _go_value(self.value)
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def field_invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(field, "Invalid", detail, value)


def field_required(field: str, detail: str = "") -> FieldError:
    return FieldError(field, "Required", detail)


def field_forbidden(field: str, detail: str) -> FieldError:
    return FieldError(field, "Forbidden", detail)


def field_not_supported(field: str, value: Any, valid: Iterable[str]) -> FieldError:
    quoted = ", ".join(_go_value(v) for v in valid)
    return FieldError(field, "NotSupported", f"supported values: {quoted}" if quoted else "", value)


def field_too_long(field: str, limit: int) -> FieldError:
    """``field.TooLong`` as apimachinery v0.37 words it."""
    return FieldError(field, "TooLong", f"may not be more than {limit} {'byte' if limit == 1 else 'bytes'}")


def field_duplicate(field: str, value: Any) -> FieldError:
    return FieldError(field, "Duplicate", "", value)


class StatusError(Exception):
    """A failed request; ``status`` is the v1 Status body and ``code`` its HTTP status code."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(status.get("message", ""))
        self.status = status
        self.code: int = int(status["code"])

    @property
    def reason(self) -> str:
        return str(self.status.get("reason", ""))


def _status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> StatusError:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return StatusError(body)


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, resource: str, group: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def not_found(resource: str, name: str, group: str = "") -> StatusError:
    return _status(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found',
                   _details(name, resource, group))


def already_exists(resource: str, name: str, group: str = "") -> StatusError:
    return _status(409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists',
                   _details(name, resource, group))


def conflict(resource: str, name: str, group: str = "", reason: str = "") -> StatusError:
    why = reason or "the object has been modified; please apply your changes to the latest version and try again"
    return _status(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
                   _details(name, resource, group))


Cause = FieldError | tuple[str, str, str]


def _as_cause(cause: Cause) -> tuple[str, str, str]:
    """(reason, message, field) from a FieldError or such a tuple."""
    if isinstance(cause, FieldError):
        return cause.reason, cause.body(), cause.field
    return cause


def invalid(kind: str, name: str, causes: Sequence[Cause], group: str = "") -> StatusError:
    """422 Invalid; the message joins the causes as upstream's aggregate does (``[a, b]`` when several)."""
    triples = [_as_cause(c) for c in causes]
    texts = [f"{f}: {m}" if f else m for _, m, f in triples]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"  # upstream's aggregate error text
    details = _details(name, kind, group)
    details["causes"] = [{"reason": r, "message": m, "field": f} for r, m, f in triples]
    return _status(422, "Invalid", f'{_qualified(kind, group)} "{name}" is invalid: {joined}', details)


def bad_request(message: str) -> StatusError:
    return _status(400, "BadRequest", message)


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return _status(401, "Unauthorized", message)


def forbidden(resource: str = "", name: str = "", reason: str = "", *, user: str = "", verb: str = "",
              namespace: str | None = None, group: str = "") -> StatusError:
    """403 as upstream's ``NewForbidden``: 'namespaces "default" is forbidden: this namespace may not be deleted'.

    With ``user`` and ``verb`` the reason is the authorizer's: 'User "x" cannot list resource "pods" in API
    group "" in the namespace "default"'.
    """
    if user and verb:
        scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        authz = f'User "{user}" cannot {verb} resource "{resource}" in API group "{group}"{scope}'
        reason = f"{authz}: {reason}" if reason else authz
    what = _qualified(resource, group) + (f' "{name}"' if name else "")
    msg = f"{what} is forbidden: {reason}" if what else f"forbidden: {reason}"
    return _status(403, "Forbidden", msg, _details(name, resource, group))


def gone(message: str) -> StatusError:
    """410 Expired, e.g. ``too old resource version: 5 (120)`` for a watch from a compacted version."""
    return _status(410, "Expired", message)


def too_old_resource_version(requested: int | str, oldest: int | str) -> StatusError:
    return gone(f"too old resource version: {requested} ({oldest})")


def too_large(message: str = "Request entity too large: limit is 3145728") -> StatusError:
    return _status(413, "RequestEntityTooLarge", message)


_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def method_not_allowed(action: str = "", resource: str = "", group: str = "") -> StatusError:
    """405 as upstream's ``NewMethodNotSupported``: 'create is not supported on resources of kind "nodes/status"'.

    ``action`` may be a verb or an HTTP method; ``resource`` a plural (the API server's ``status`` maps kinds).
    """
    if not (action and resource):
        return _status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    plural = resource
    verb = _VERBS.get(action.upper(), action)
    details: dict[str, Any] = {"group": group, "kind": plural} if group else {"kind": plural}
    return _status(405, "MethodNotAllowed",
                   f'{verb} is not supported on resources of kind "{_qualified(plural, group)}"', details)


_ACCEPTED = ("application/json", "application/yaml", "application/json-patch+json",
             "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml")


def unsupported_media_type(content_type: str = "", accepted: Sequence[str] = _ACCEPTED) -> StatusError:
    """415; like upstream the message lists what is accepted (``content_type`` is only kept in details)."""
    err = _status(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                  "accepted media types include: " + ", ".join(accepted))
    if content_type:
        err.status["details"] = {"causes": [{"reason": "UnsupportedMediaType", "message": content_type}]}
    return err


def not_acceptable(accepted: str = "application/json, application/yaml") -> StatusError:
    return _status(406, "NotAcceptable", f"only the following media types are accepted: {accepted}")


def server_timeout(message: str = "Timeout: request did not complete within the allotted timeout") -> StatusError:
    return _status(504, "Timeout", message)


def too_large_resource_version(wanted: int, current: int, retry_after: int = 1) -> StatusError:
    """504 as ``k8s.io/apiserver/pkg/storage`` ``NewTooLargeResourceVersionError``: a version the store has not
    reached (upstream answers once its wait for it runs out)."""
    err = _status(504, "Timeout", f"Timeout: Too large resource version: {wanted}, current: {current}",
                  {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                   "retryAfterSeconds": retry_after})
    return err


def internal_error(message: str) -> StatusError:
    return _status(500, "InternalError", f"Internal error occurred: {message}")


def success_status(details: dict[str, Any] | None = None) -> dict[str, Any]:
    """The body of a successful DELETE that returns a Status (e.g. with ``propagationPolicy``)."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        body["details"] = details
    return body
