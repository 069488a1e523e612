"""Node selector matching (``spec.nodeSelector`` and ``nodeAffinity``), as k8s.io/component-helpers v0.37.2
(``scheduling/corev1/nodeaffinity``, the ``LazyErrorNodeSelector`` the scheduler uses).

Terms are ORed; inside a term ``matchExpressions`` and ``matchFields`` (only ``metadata.name``) are ANDed.
A term with neither is skipped (matches nothing). A term that does not *parse* matches nothing either, even
where its requirements would otherwise hold: a ``matchExpressions`` requirement must have values for
``In``/``NotIn``, none for ``Exists``/``DoesNotExist`` and exactly one integer for ``Gt``/``Lt``
(``labels.NewRequirement``); a ``matchFields`` requirement must be ``In`` or ``NotIn`` with exactly one value.
``NotIn``/``DoesNotExist`` match a missing label; ``Gt``/``Lt`` need the label to parse as an integer.
Simplified: label keys and values are not re-validated (the API server has validated them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_INT = re.compile(r"^[+-]?[0-9]+$")  # strconv.ParseInt(s, 10, 64) syntax
_INT64 = (-(2**63), 2**63 - 1)


def _int(text: str) -> int | None:
    if not isinstance(text, str) or not _INT.match(text):
        return None
    value = int(text)
    return value if _INT64[0] <= value <= _INT64[1] else None


def _expression_valid(req: Mapping[str, Any]) -> bool:
    op, values = req.get("operator", ""), list(req.get("values") or [])
    if op in ("In", "NotIn"):
        return len(values) > 0
    if op in ("Exists", "DoesNotExist"):
        return len(values) == 0
    if op in ("Gt", "Lt"):
        return len(values) == 1 and _int(values[0]) is not None
    return False


def _field_valid(req: Mapping[str, Any]) -> bool:
    return req.get("operator") in ("In", "NotIn") and len(list(req.get("values") or [])) == 1


def requirement_matches(req: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One (already valid) label requirement against a node's labels."""
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


def _field_matches(req: Mapping[str, Any], node_name: str) -> bool:
    value = node_name if req.get("key") == "metadata.name" else ""
    wanted = str(list(req.get("values") or [""])[0])
    return value == wanted if req.get("operator") == "In" else value != wanted


def term_matches(term: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(_expression_valid(e) for e in exprs) or not all(_field_valid(f) for f in fields):
        return False  # a parse error: the term never matches
    if not all(requirement_matches(e, labels) for e in exprs):
        return False
    return all(_field_matches(f, node_name) for f in fields)


def selector_matches(terms: list[Mapping[str, Any]], labels: Mapping[str, str], node_name: str) -> bool:
    return any(term_matches(t, labels, node_name) for t in terms)
