"""Kubernetes quantities parse to the exact values upstream's resource.Quantity gives."""

from __future__ import annotations

from fractions import Fraction

import pytest

from mockgpu.apimachinery.quantity import QuantityError, int_value, is_integer, milli_value, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", Fraction(2)),
        ("500m", Fraction(1, 2)),
        ("1Gi", Fraction(2**30)),
        ("1.5G", Fraction(1_500_000_000)),
        ("1e3", Fraction(1000)),
        ("100n", Fraction(1, 10**7)),
        ("3u", Fraction(3, 10**6)),
        (".5", Fraction(1, 2)),
        (4, Fraction(4)),
        (0.25, Fraction(1, 4)),
    ],
    ids=["int", "milli", "binary-Gi", "decimal-G", "exponent", "nano", "micro", "leading-dot", "py-int", "py-float"],
)
def test_parse(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "lots", "1Gb", "1..2", "--1", float("inf"), float("nan"), True],
                         ids=["empty", "word", "bad-suffix", "two-dots", "two-signs", "inf", "nan", "bool"])
def test_malformed_is_a_quantity_error(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)  # type: ignore[arg-type]


def test_rounding_helpers_round_up_like_kubernetes() -> None:
    assert milli_value("0.0001") == 1  # MilliValue rounds up
    assert int_value("1500m") == 2  # Value rounds up
    assert is_integer("2") and not is_integer("500m")
