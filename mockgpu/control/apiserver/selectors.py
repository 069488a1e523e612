"""Label and field selectors with apimachinery's grammar and error texts.

``parse_label_selector`` follows ``k8s.io/apimachinery/pkg/labels`` (``=``, ``==``, ``!=``, ``in``,
``notin``, ``key``, ``!key``, ``gt``/``lt`` as ``>``/``<``); ``parse_field_selector`` follows
``pkg/fields`` (``fields``) plus the field labels of each kind's record. Errors are 400 StatusErrors whose message
is upstream's (``unable to parse requirement: ...``, ``field label not supported: foo``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mockgpu.control.apiserver import names, registry
from mockgpu.control.apiserver.fields import split_term, split_unescaped, unescape
from mockgpu.control.apiserver.registry.kind import META_FIELDS, FieldLabels
from mockgpu.control.apiserver.status import StatusError, bad_request

_SPECIAL = "!=(),><"
_BINARY_OPS = "in, notin, =, ==, !=, gt, lt"


@dataclass(frozen=True)
class Requirement:
    """One label requirement; ``op`` is in, notin, =, ==, !=, exists, !, gt or lt."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op in ("in", "=", "=="):
            return has and value in self.values
        if self.op in ("notin", "!="):
            return not has or value not in self.values
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        try:
            current = int(value or "")
        except ValueError:
            return False
        return current > int(self.values[0]) if self.op == "gt" else current < int(self.values[0])


@dataclass(frozen=True)
class LabelSelector:
    """All requirements must hold; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: dict[str, str] | None) -> bool:
        return all(r.matches(labels or {}) for r in self.requirements)

    def empty(self) -> bool:
        return not self.requirements


def _lex(text: str) -> list[tuple[str, str]]:
    """Tokens as (type, literal): ident, op ('!=', '==', '=', '!', '>', '<'), '(', ')', ',', end."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in _SPECIAL:
            pair = text[i:i + 2]
            if pair in ("!=", "=="):
                out.append(("op", pair))
                i += 2
            else:
                out.append(("op" if ch in "!=><" else ch, ch))
                i += 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in _SPECIAL:
                j += 1
            out.append(("ident", text[i:j]))
            i = j
    out.append(("end", ""))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _lex(text)
        self.pos = 0

    def peek(self) -> tuple[str, str]:
        return self.toks[self.pos]

    def take(self) -> tuple[str, str]:
        tok = self.toks[self.pos]
        self.pos = min(self.pos + 1, len(self.toks) - 1)
        return tok

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            kind, lit = self.peek()
            if kind == "end":
                return reqs
            if kind != "ident" and lit != "!":
                raise ValueError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.requirement())
            except ValueError as exc:
                raise ValueError(f"unable to parse requirement: {exc}") from exc
            kind, lit = self.take()
            if kind == "end":
                return reqs
            if kind != ",":
                raise ValueError(f"found '{lit}', expected: ',' or 'end of string'")
            kind2, lit2 = self.peek()
            if kind2 != "ident" and lit2 != "!":
                raise ValueError(f"found '{lit2}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        negate = self.peek()[1] == "!" and self.peek()[0] == "op"
        if negate:
            self.take()
        kind, key = self.take()
        if kind != "ident":
            raise ValueError(f"found '{key}', expected: identifier")
        _check_key(key)
        if self.peek()[0] in ("end", ","):
            return Requirement(key, "!" if negate else "exists")
        if negate:
            raise ValueError(f"found '{self.peek()[1]}', expected: ',' or 'end of string'")
        kind, lit = self.take()
        op = {"!=": "!=", "==": "==", "=": "=", ">": "gt", "<": "lt"}.get(lit) if kind == "op" else \
            (lit if kind == "ident" and lit in ("in", "notin") else None)
        if op is None:
            raise ValueError(f"found '{lit}', expected: {_BINARY_OPS}")
        values = self.set_values() if op in ("in", "notin") else self.exact_value()
        return _new_requirement(key, op, values)

    def exact_value(self) -> tuple[str, ...]:
        if self.peek()[0] in ("end", ","):
            return ("",)
        kind, lit = self.take()
        if kind != "ident":
            raise ValueError(f"found '{lit}', expected: identifier")
        return (lit,)

    def set_values(self) -> tuple[str, ...]:
        kind, lit = self.take()
        if kind != "(":
            raise ValueError(f"found '{lit}' expected: '('")
        kind, lit = self.peek()
        if kind == ")":
            self.take()
            return ("",)
        if kind not in ("ident", ","):
            raise ValueError(f"found '{lit}', expected: ',', ')' or identifier")
        values: list[str] = []
        while True:
            kind, lit = self.take()
            if kind == "ident":
                values.append(lit)
                kind, lit = self.peek()
                if kind == ")":
                    self.take()
                    return tuple(sorted(set(values)))
                if kind != ",":
                    raise ValueError(f"found '{lit}', expected: ',' or ')'")
            elif kind == ",":
                if not values:
                    values.append("")
                if self.peek()[0] in (",", ")"):
                    values.append("")
                    if self.peek()[0] == ")":
                        self.take()
                        return tuple(sorted(set(values)))
            else:
                raise ValueError(f"found '{lit}', expected: ',', or identifier")


def _check_key(key: str) -> None:
    errs = names.qualified_name(key)
    if errs:
        raise ValueError(f'<nil>: Invalid value: "{key}": {"; ".join(errs)}')


def _new_requirement(key: str, op: str, values: tuple[str, ...]) -> Requirement:
    if op in ("=", "==", "!=") and len(values) != 1:
        raise ValueError(f'<nil>: Invalid value: "{values}": exact-match compatibility requires one single value')
    if op in ("gt", "lt"):
        try:
            int(values[0])
        except ValueError as exc:
            raise ValueError(f'<nil>: Invalid value: "{values[0]}": for \'Gt\', \'Lt\' operators, the value must '
                             "be an integer") from exc
    for v in values:
        errs = names.label_value(v)
        if errs:
            raise ValueError(f'<nil>: Invalid value: "{v}": {"; ".join(errs)}')
    return Requirement(key, op, values)


def parse_label_selector(text: str | None) -> LabelSelector:
    """``labelSelector`` query parameter → selector, or a 400 StatusError with upstream's message."""
    if not text or not text.strip():
        return LabelSelector()
    try:
        return LabelSelector(tuple(_Parser(text).parse()))
    except ValueError as exc:
        raise bad_request(str(exc)) from None


# ---- field selectors -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FieldRequirement:
    field: str
    op: str  # "=" or "!="
    value: str
    get: Callable[[dict[str, Any]], str]

    def matches(self, obj: dict[str, Any]) -> bool:
        return (self.get(obj) == self.value) == (self.op == "=")


@dataclass(frozen=True)
class FieldSelector:
    """All terms must hold; the empty selector matches everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: dict[str, Any]) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    def empty(self) -> bool:
        return not self.requirements

    def value_of(self, field: str) -> str | None:
        """The value an ``=`` term pins ``field`` to (lets a store narrow a list, e.g. by spec.nodeName)."""
        return next((r.value for r in self.requirements if r.field == field and r.op == "="), None)


def parse_field_selector(text: str | None, resource: str) -> FieldSelector:
    """``fieldSelector`` query parameter for ``resource`` (its kind, plural or ``<plural>.<group>``) → selector with
    the labels of that kind's record, or a 400 StatusError."""
    info = registry.lookup(resource)
    return field_selector(text, info.field_labels if info is not None else META_FIELDS)


def field_terms(text: str | None) -> list[tuple[str, str, str]]:
    """The terms of a ``fieldSelector`` as ``fields.ParseSelector`` reads them (syntax only; 400 when malformed).
    Decoding ListOptions does this, before they are validated and long before field labels are checked."""
    if not text or not text.strip():
        return []
    try:
        terms = []
        for term in sorted(split_unescaped(text, ",")):  # upstream sorts the terms before it reads them
            if not term:
                continue
            field, op, value = split_term(text, term)
            terms.append((field, op, unescape(value)))
    except ValueError as exc:
        raise bad_request(str(exc)) from None
    return terms


def field_selector(text: str | None, supported: FieldLabels) -> FieldSelector:
    """``fieldSelector`` text → selector over the ``supported`` field labels, or a 400 StatusError."""
    terms = field_terms(text)
    reqs = []
    try:
        for field, op, value in terms:
            if not field and not value:  # "=" alone selects everything upstream (hasTerm.Transform)
                continue
            if field not in supported:
                raise ValueError(f"field label not supported: {field}")
            reqs.append(FieldRequirement(field, op, value, supported[field]))
    except ValueError as exc:
        raise bad_request(str(exc)) from None
    return FieldSelector(tuple(reqs))


def selector_error(exc: StatusError) -> str:
    """The message of a selector StatusError (for callers that log it)."""
    return str(exc.status.get("message", ""))
