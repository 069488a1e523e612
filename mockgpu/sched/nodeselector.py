"""Node selector matching (``spec.nodeSelector`` and ``nodeAffinity``), as k8s.io/component-helpers.

Terms are ORed; inside a term ``matchExpressions`` and ``matchFields`` (only ``metadata.name``) are ANDed.
A term with neither matches nothing. ``NotIn``/``DoesNotExist`` match a missing label; ``Gt``/``Lt`` need
the label to parse as an integer.
"""

from __future__ import annotations

from collections.abc import Mapping


def _int(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def requirement_matches(req: Mapping, labels: Mapping[str, str]) -> bool:
    key, op, values = req.get("key", ""), req.get("operator", ""), list(req.get("values") or [])
    has = key in labels
    if op == "In":
        return has and labels[key] in values
    if op == "NotIn":
        return not has or labels[key] not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt") and has and len(values) == 1:
        left, right = _int(labels[key]), _int(values[0])
        if left is None or right is None:
            return False
        return left > right if op == "Gt" else left < right
    return False


def term_matches(term: Mapping, labels: Mapping[str, str], node_name: str) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(requirement_matches(e, labels) for e in exprs):
        return False
    field_values = {"metadata.name": node_name}
    return all(requirement_matches(f, field_values) for f in fields)


def selector_matches(terms: list[Mapping], labels: Mapping[str, str], node_name: str) -> bool:
    return any(term_matches(t, labels, node_name) for t in terms)
