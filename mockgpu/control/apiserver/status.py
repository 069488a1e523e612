"""The API server's view of ``Status`` errors: everything is ``mockgpu.apimachinery.status`` (re-exported here), except
that a 405 may name a kind, turned into its resource as upstream's ``meta.UnsafeGuessKindToResource`` does (every
served kind's plural is that guess: ``tests/apiserver/test_pure_registry.py``)."""

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


def guess_plural(kind: str) -> str:
    """``meta.UnsafeGuessKindToResource``: the lowercased kind, ``-es`` after an ``s``, ``-ies`` for a ``y``."""
    lowered = kind.lower()
    if lowered.endswith("s"):
        return lowered + "es"
    if lowered.endswith("y"):
        return lowered[:-1] + "ies"
    return lowered + "s"


def method_not_allowed(action: str = "", resource: str = "", group: str = "") -> StatusError:
    """405 as upstream's ``NewMethodNotSupported``; ``resource`` a plural or a kind (capitalized, as kinds are)."""
    return _method_not_allowed(action, guess_plural(resource) if resource[:1].isupper() else resource, group)
