"""The API server's view of ``Status`` errors: everything is ``mockgpu.apimachinery.status`` (re-exported here), except
that a 405 may name a kind, which only the server's discovery table turns into its plural."""

from __future__ import annotations

from mockgpu.apimachinery.status import (  # noqa: F401  (re-exported: the API server's modules import them from here)
    Cause,
    FieldError,
    StatusError,
    already_exists,
    bad_request,
    conflict,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    field_too_long,
    forbidden,
    gone,
    internal_error,
    invalid,
    not_acceptable,
    not_found,
    server_timeout,
    success_status,
    too_large,
    too_large_resource_version,
    too_old_resource_version,
    unauthorized,
    unsupported_media_type,
)
from mockgpu.apimachinery.status import method_not_allowed as _method_not_allowed
from mockgpu.control.apiserver.discovery import KIND_TO_PLURAL


def method_not_allowed(action: str = "", resource: str = "", group: str = "") -> StatusError:
    """405 as upstream's ``NewMethodNotSupported``; ``resource`` a plural or a kind."""
    return _method_not_allowed(action, KIND_TO_PLURAL.get(resource, resource) if resource else resource, group)
