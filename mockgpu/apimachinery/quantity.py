"""Kubernetes resource quantities (``500m``, ``2``, ``256Gi``, ``1e3``) as exact numbers.

A leaf module (no imports from the package) so that the API server's validation and the pure
scheduling core parse quantities the same way.
"""

from __future__ import annotations

import re
from fractions import Fraction

_SUFFIX = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9),
    "T": Fraction(10**12), "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_RE = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][-+]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$"
)


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity; the message is upstream's."""


def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity; QuantityError with upstream's wording if malformed."""
    if isinstance(text, bool):
        raise QuantityError("quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if text != text or text in (float("inf"), float("-inf")):
            raise QuantityError(f"quantity must be finite, got {text}")
        return Fraction(str(text))
    m = _RE.match(text.strip()) if isinstance(text, str) else None
    if not m or len(text) > 64:
        raise QuantityError("quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    number, exp, suffix = m.groups()
    value = Fraction(number)
    if exp:
        value *= Fraction(10) ** int(exp[1:])
    return value * _SUFFIX[suffix or ""]


def milli_value(text: str | int | float) -> int:
    """Value in thousandths, rounded up as Kubernetes' MilliValue does (CPU is counted this way)."""
    v = parse_quantity(text) * 1000
    return -((-v.numerator) // v.denominator)


def int_value(text: str | int | float) -> int:
    """Value rounded up to an integer, as Kubernetes' Value() does (memory, extended resources)."""
    v = parse_quantity(text)
    return -((-v.numerator) // v.denominator)


def is_integer(text: str | int | float) -> bool:
    """Whether the quantity is a whole number (extended resources must be)."""
    return parse_quantity(text).denominator == 1


_DECIMAL = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"), (-6, "u"),
            (-9, "n"))
_BINARY = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


def canonical(value: Fraction | str | int | float) -> str:
    """A quantity as ``Quantity.String()`` prints it: 0.5 → 500m, 2000 → 2k, 1536Mi stays 1536Mi, 2048Mi → 2Gi."""
    binary = isinstance(value, str) and value.strip().endswith("i")
    v = value if isinstance(value, Fraction) else parse_quantity(value)
    if v == 0:
        return "0"
    sign, v = ("-" if v < 0 else ""), abs(v)
    if binary and v.denominator == 1 and v >= 1024:
        for exp, suffix in _BINARY:
            if v % (2 ** exp) == 0:
                return f"{sign}{v // 2 ** exp}{suffix}"
        return f"{sign}{v}"
    nanos = -((-v * 10**9).__floor__())  # upstream rounds up below 1n
    v = Fraction(nanos, 10**9)
    for exp, suffix in _DECIMAL:
        scaled = v / Fraction(10) ** exp
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{suffix}"
    return f"{sign}{nanos}n"
