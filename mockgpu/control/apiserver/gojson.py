"""How Go's ``encoding/json`` names a JSON value's type in its errors (``cannot unmarshal <type> into ...``)."""

from __future__ import annotations

from typing import Any


def json_kind(value: Any) -> str:
    """bool, number, string, array or object."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array"}.get(type(value), "object")
