"""Helpers over unstructured JSON values (``map[string]interface{}`` in apimachinery's terms)."""

from __future__ import annotations

from typing import Any


def without_nulls(value: Any) -> Any:
    """``value`` with every null map value removed, at any depth (a copy). In the Go types a null and an absent
    field decode to the same zero value; strategic merge's ``discardNullValuesFromPatch`` does the same to a
    patch value the original lacks."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value
