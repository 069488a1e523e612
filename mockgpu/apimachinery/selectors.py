"""Label selectors as ``metav1.LabelSelector`` (``k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go``
``LabelSelectorAsSelector``) and ``labels.Selector.String()`` (``pkg/labels/selector.go``) define them: the
semantics the API server's Scale view and validation, and the controllers' claiming, share."""

from __future__ import annotations

from typing import Any


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str] | None) -> bool:
    """``metav1.LabelSelectorAsSelector(sel).Matches(labels)``: a nil selector matches nothing, ``{}`` all."""
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def selector_string(selector: dict[str, Any] | None) -> str:
    """The selector as ``labels.Selector.String()`` prints it: ``app=x,tier in (a,b),!gone``, keys sorted."""
    if not selector:
        return ""
    parts: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key", ""), req.get("operator"), sorted(req.get("values") or [])
        text = {"In": f"{key} in ({','.join(values)})", "NotIn": f"{key} notin ({','.join(values)})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(op, key)
        parts.append((key, text))
    return ",".join(t for _, t in sorted(parts))
