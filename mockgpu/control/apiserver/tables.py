"""Server-side ``meta.k8s.io/v1`` Tables, as kube-apiserver builds them for ``kubectl get``.

The rows come from the printer each kind's record names (``printers``, after ``pkg/printers/internalversion``);
resources without one get upstream's default table (Name, Created At). Every table is generated "wide", and
kubectl hides priority-1 columns unless ``-o wide``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from mockgpu.control.apiserver import registry
from mockgpu.control.apiserver.printers import (  # noqa: F401  (human_duration, job_status_text: re-exported)
    DEFAULT_COLUMNS,
    human_duration,
    job_status_text,
)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _default_row(obj: dict[str, Any], now: datetime) -> dict[str, Any]:
    return {"cells": [_meta(obj).get("name", ""), _meta(obj).get("creationTimestamp")]}


def _safe_row(row_fn: Callable[[dict[str, Any], datetime], dict[str, Any]], obj: dict[str, Any], now: datetime,
              width: int) -> dict[str, Any]:
    """The printer's row; for a status of the wrong shape (status is stored as written) a row of ``<unknown>``.

    Upstream's typed objects cannot hold such values, so this only keeps a listing answering instead of failing.
    """
    try:
        return row_fn(obj, now)
    except (AttributeError, TypeError, ValueError, KeyError):
        name = _meta(obj).get("name", "") if isinstance(obj.get("metadata"), dict) else ""
        return {"cells": [name] + ["<unknown>"] * (width - 1)}


def _embedded(obj: dict[str, Any], include_object: str) -> dict[str, Any] | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": _meta(obj)}


def to_table(resource: str, objects: list[dict[str, Any]], *, include_object: str = "Metadata",
             now: datetime | None = None, resource_version: str = "", continue_token: str = "") -> dict[str, Any]:
    """The Table for ``objects`` of ``resource`` (plural or kind); ``include_object``: None, Metadata, Object."""
    now = now or datetime.now(UTC)
    info = registry.lookup(resource)
    columns, row_fn = (info.printer if info is not None else None) or (DEFAULT_COLUMNS, _default_row)
    if info is not None and info.table_order is not None:
        objects = sorted(objects, key=info.table_order)
    rows = []
    for obj in objects:
        row = _safe_row(row_fn, obj, now, len(columns))
        embedded = _embedded(obj, include_object)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    meta: dict[str, Any] = {}
    if resource_version:
        meta["resourceVersion"] = resource_version
    if continue_token:
        meta["continue"] = continue_token
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": [dict(c) for c in columns], "rows": rows}
