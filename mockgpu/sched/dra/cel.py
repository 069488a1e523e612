"""DRA device selectors in CEL, as ``k8s.io/dynamic-resource-allocation@v0.37.2/cel``, evaluated with cel-python.

The environment has one variable, ``device``, with ``driver`` (string), ``allowMultipleAllocations`` (bool;
DRAConsumableCapacity is beta and on in v1.37), ``attributes`` and ``capacity``: maps domain → (name → value).
As upstream, an unqualified attribute/capacity name belongs to the driver's domain, and looking up a domain
that the device does not have gives an empty map (so ``device.attributes["other.io"].x`` fails with ``no such
key: x``, not on the domain). Attribute values are int, bool, string or a semantic version; capacities are
quantities. Kubernetes' CEL libraries that selectors use are bound as functions: ``quantity()``,
``isQuantity()`` and the Quantity methods (``compareTo``, ``isGreaterThan``, ``isLessThan``, ``add``, ``sub``,
``asInteger``, ``asApproximateFloat``, ``isInteger``, ``sign``), and ``semver()``/``isSemver()`` with the
Semver methods (``major``, ``minor``, ``patch``, ``compareTo``, ``isGreaterThan``, ``isLessThan``).

A runtime error is raised as ``CelRuntimeError`` with cel-go's wording where it matters to users (``no such
key: <name>``), passed through upstream's ``EnhanceRuntimeError`` hint. Compiled programs are cached by
expression text.

Simplified: no type checking at compile time (cel-go checks types against the declared environment; here a
type error only shows when evaluated), no cost limits, no ``cel.bind`` (cel-go's ext.Bindings, not in
cel-python 0.5), list-type attributes (alpha) are not modelled, and the
``semver(s, normalize)`` two-argument form is not bound.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache, total_ordering
from typing import Any

import celpy
import celpy.celtypes as ct
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from mockgpu.apimachinery.quantity import QuantityError, parse_quantity

NO_SUCH_KEY_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with "
                    "has() for optional fields")


class CelCompileError(ValueError):
    """The expression does not parse."""


class CelRuntimeError(ValueError):
    """Evaluating the expression failed for one device (upstream: the claim cannot be allocated)."""


@total_ordering
class Quantity:
    """A Kubernetes quantity inside CEL (exact value, original text kept for printing)."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Fraction | None = None) -> None:
        self.text = text
        self.value = parse_quantity(text) if value is None else value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"


_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                     r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")


class Semver:
    """A semantic version 2.0.0 (blang/semver precedence: build metadata ignored)."""

    __slots__ = ("major", "minor", "patch", "pre", "text")

    def __init__(self, text: str) -> None:
        m = _SEMVER.match(text)
        if not m:
            raise ValueError(f"error parsing semver: {text}")
        self.text = text
        self.major, self.minor, self.patch = int(m[1]), int(m[2]), int(m[3])
        self.pre = tuple(m[4].split(".")) if m[4] else ()

    def _key(self) -> tuple[Any, ...]:
        # A version without pre-release sorts after every pre-release of it; numeric identifiers sort before
        # alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, not self.pre, pre)

    def compare(self, other: Semver) -> int:
        a, b = self._key(), other._key()
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Semver({self.text!r})"


def _err(message: str) -> Exception:
    return CelRuntimeError(message)


def _quantity(s: Any) -> Quantity:
    try:
        return Quantity(str(s))
    except QuantityError:
        raise _err("quantities must match the regular expression "
                   "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'") from None


def _is_quantity(s: Any) -> ct.BoolType:
    try:
        Quantity(str(s))
    except QuantityError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _semver(s: Any) -> Semver:
    try:
        return Semver(str(s))
    except ValueError as exc:
        raise _err(str(exc)) from None


def _is_semver(s: Any) -> ct.BoolType:
    return ct.BoolType(bool(_SEMVER.match(str(s))))


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    raise _err(f"no such overload: {type(a).__name__}.compareTo({type(b).__name__})")


def _as_fraction(v: Any) -> Fraction:
    if isinstance(v, Quantity):
        return v.value
    if isinstance(v, int) and not isinstance(v, bool):
        return Fraction(int(v))
    raise _err(f"no such overload: Quantity.add({type(v).__name__})")


def _fmt(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(float(value))


def _add(a: Any, b: Any) -> Quantity:
    value = _as_fraction(a) + _as_fraction(b)
    return Quantity(_fmt(value), value)


def _sub(a: Any, b: Any) -> Quantity:
    value = _as_fraction(a) - _as_fraction(b)
    return Quantity(_fmt(value), value)


def _as_integer(q: Quantity) -> ct.IntType:
    if q.value.denominator != 1 or not -(2**63) <= q.value.numerator < 2**63:
        raise _err("cannot convert value to integer")
    return ct.IntType(q.value.numerator)


def _sign(q: Quantity) -> ct.IntType:
    return ct.IntType((q.value > 0) - (q.value < 0))


def _version_part(name: str):  # type: ignore[no-untyped-def]
    def part(v: Any) -> ct.IntType:
        if not isinstance(v, Semver):
            raise _err(f"no such overload: {name}")
        return ct.IntType(getattr(v, name))
    return part


FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "compareTo": lambda a, b: ct.IntType(_cmp(a, b)),
    "isGreaterThan": lambda a, b: ct.BoolType(_cmp(a, b) > 0),
    "isLessThan": lambda a, b: ct.BoolType(_cmp(a, b) < 0),
    "add": _add,
    "sub": _sub,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: ct.DoubleType(float(q.value)),
    "isInteger": lambda q: ct.BoolType(q.value.denominator == 1),
    "sign": _sign,
    "major": _version_part("major"),
    "minor": _version_part("minor"),
    "patch": _version_part("patch"),
}


class _DomainMap(ct.MapType):
    """``device.attributes`` / ``device.capacity``: a missing domain is an empty map (upstream's
    ``newStringInterfaceMapWithDefault``)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return ct.MapType({})


_ENV = celpy.Environment()


@lru_cache(maxsize=512)
def compile_expression(expression: str) -> Any:
    """The runnable program for ``expression`` (cached); ``CelCompileError`` when it does not parse."""
    try:
        ast = _ENV.compile(expression)
    except CELParseError as exc:
        raise CelCompileError(str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error") from None
    return _ENV.program(ast, functions=FUNCTIONS)


def _qualified(name: str, driver: str) -> tuple[str, str]:
    if "/" in name:
        domain, _, ident = name.partition("/")
        return domain, ident
    return driver, name


def _attribute_value(attr: Mapping[str, Any]) -> Any:
    if "int" in attr:
        return ct.IntType(int(attr["int"]))
    if "bool" in attr:
        return ct.BoolType(bool(attr["bool"]))
    if "string" in attr:
        return ct.StringType(str(attr["string"]))
    if "version" in attr:
        return _semver(attr["version"])
    raise _err("unsupported attribute value")


def device_activation(driver: str, device: Mapping[str, Any]) -> dict[str, Any]:
    """The ``device`` variable for one API device (``ResourceSlice.spec.devices[i]``)."""
    attributes: dict[str, dict[ct.StringType, Any]] = {}
    for name, attr in (device.get("attributes") or {}).items():
        domain, ident = _qualified(str(name), driver)
        try:
            value = _attribute_value(attr or {})
        except CelRuntimeError as exc:
            raise CelRuntimeError(f"attribute {name}: {exc}") from None
        attributes.setdefault(domain, {})[ct.StringType(ident)] = value
    capacity: dict[str, dict[ct.StringType, Any]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = _qualified(str(name), driver)
        capacity.setdefault(domain, {})[ct.StringType(ident)] = Quantity(str((cap or {}).get("value", "0")))
    return {"device": ct.MapType({
        ct.StringType("driver"): ct.StringType(driver),
        ct.StringType("allowMultipleAllocations"): ct.BoolType(bool(device.get("allowMultipleAllocations"))),
        ct.StringType("attributes"): _DomainMap({ct.StringType(d): ct.MapType(v) for d, v in attributes.items()}),
        ct.StringType("capacity"): _DomainMap({ct.StringType(d): ct.MapType(v) for d, v in capacity.items()}),
    })}


_MISSING_KEY = re.compile(r"no such (?:member in mapping|key)[^']*'([^']*)'")


def _runtime_message(exc: BaseException) -> str:
    """cel-go's wording for the errors users meet, with upstream's ``EnhanceRuntimeError`` hint."""
    args = exc.args
    text = str(args[0]) if args else str(exc)
    cause = args[1] if len(args) > 1 else None
    detail = args[2] if len(args) > 2 else None
    if isinstance(cause, type) and issubclass(cause, CelRuntimeError) and detail:
        return str(detail[0])  # one of our library functions failed: its own message
    if isinstance(cause, type) and issubclass(cause, KeyError):
        m = _MISSING_KEY.search(text)
        key = m[1] if m else (str(detail[0]) if detail else text)
        return f"no such key: {key}{NO_SUCH_KEY_HINT}"
    return text


def device_matches(expression: str, activation: Mapping[str, Any]) -> bool:
    """Evaluate a selector for one device; ``CelRuntimeError`` on any evaluation failure."""
    program = compile_expression(expression)
    try:
        result = program.evaluate(activation)
    except CelRuntimeError as exc:
        raise CelRuntimeError(_runtime_message(exc)) from None
    except CELEvalError as exc:
        raise CelRuntimeError(_runtime_message(exc)) from None
    except Exception as exc:  # a library function or celpy itself failed: still the selector's error
        raise CelRuntimeError(str(exc) or type(exc).__name__) from None
    if isinstance(result, CELEvalError):
        raise CelRuntimeError(_runtime_message(result))
    if not isinstance(result, ct.BoolType | bool):
        raise CelRuntimeError(f"expected boolean result, got {type(result).__name__}")
    return bool(result)
