"""``metav1.MicroTime``: how kube-apiserver decodes and encodes the microsecond timestamps of Leases
(``spec.acquireTime``, ``spec.renewTime``) and Events (``eventTime``, ``series.lastObservedTime``); and how it
decodes a ``metav1.Time`` (RFC 3339, :func:`time_error`). The kinds' records list where their MicroTimes are.

Decoding is Go's ``time.Parse`` with the layout ``2006-01-02T15:04:05.000000Z07:00``: exactly six fractional
digits, a ``Z`` or numeric offset, and Go's error texts; encoding is UTC with six digits.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from mockgpu.apimachinery.timefmt import micro_time

RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"

# Go's time.Parse walks the layout element by element; each element: (layout text, pattern of the value)
_ELEMENTS = (("2006", r"\d{4}"), ("-", "-"), ("01", r"\d{2}"), ("-", "-"), ("02", r"\d{2}"), ("T", "T"),
             ("15", r"\d{2}"), (":", ":"), ("04", r"\d{2}"), (":", ":"), ("05", r"\d{2}"), (".000000", r"\.\d{6}"),
             ("Z07:00", r"Z|[+-]\d{2}:\d{2}"))
_RANGES = {"01": (1, 12, "month"), "02": (1, 31, "day"), "15": (0, 23, "hour"), "04": (0, 59, "minute"),
           "05": (0, 59, "second")}


class MicroTimeError(ValueError):
    """A value that ``metav1.MicroTime`` cannot decode; the text is Go's ``time.Parse`` error."""


def parse_micro_time(value: str) -> datetime:
    """``metav1.MicroTime.UnmarshalJSON``: RFC 3339 with exactly six fractional digits (Go's time.Parse
    refuses other widths for a ``.000000`` layout), as a UTC datetime."""
    rest, parts = value, {}
    layout_prefix = f'parsing time "{value}" as "{RFC3339_MICRO}"'
    for elem, pattern in _ELEMENTS:
        m = re.match(pattern, rest)
        if m is None:
            raise MicroTimeError(f'{layout_prefix}: cannot parse "{rest}" as "{elem}"')
        parts[elem] = m.group(0)
        rest = rest[m.end():]
        if elem in _RANGES:
            low, high, what = _RANGES[elem]
            if not low <= int(parts[elem]) <= high:
                raise MicroTimeError(f'parsing time "{value}": {what} out of range')
    if rest:
        raise MicroTimeError(f'{layout_prefix}: extra text: "{rest}"')
    zone = parts["Z07:00"]
    offset = timedelta(0) if zone == "Z" else (1 if zone[0] == "+" else -1) * timedelta(
        hours=int(zone[1:3]), minutes=int(zone[4:6]))
    try:
        local = datetime(int(parts["2006"]), int(parts["01"]), int(parts["02"]), int(parts["15"]), int(parts["04"]),
                         int(parts["05"]), int(parts[".000000"][1:]), tzinfo=UTC)
    except ValueError:
        raise MicroTimeError(f'parsing time "{value}": day out of range') from None
    return local - offset


RFC3339 = "2006-01-02T15:04:05Z07:00"
#: ``time.RFC3339`` (``metav1.Time``): as the MicroTime layout without its fraction; Go still accepts one
_RFC3339_ELEMENTS = tuple(e for e in _ELEMENTS if e[0] != ".000000")


def time_error(value: str) -> str | None:
    """``metav1.Time.UnmarshalJSON``'s error for ``value`` (Go's ``time.Parse(time.RFC3339, ...)``), or None.
    Simplified: the calendar check is per field (month 1-12, day 1-31), not per month."""
    rest = value
    for elem, pattern in _RFC3339_ELEMENTS:
        m = re.match(pattern, rest)
        if m is None:
            return f'parsing time "{value}" as "{RFC3339}": cannot parse "{rest}" as "{elem}"'
        rest = rest[m.end():]
        if elem in _RANGES:
            low, high, what = _RANGES[elem]
            if not low <= int(m.group(0)) <= high:
                return f'parsing time "{value}": {what} out of range'
        if elem == "05":  # Go reads a fraction after the seconds even when the layout has none
            rest = rest[re.match(r"(?:[.,]\d+)?", rest).end():]  # type: ignore[union-attr]
    return f'parsing time "{value}" as "{RFC3339}": extra text: "{rest}"' if rest else None


def _holders(paths: tuple[tuple[str, ...], ...], obj: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    out = []
    for path in paths:
        cur: Any = obj
        for key in path[:-1]:
            cur = cur.get(key) if isinstance(cur, dict) else None
        if isinstance(cur, dict) and isinstance(cur.get(path[-1]), str):
            out.append((cur, path[-1]))
    return out


def normalize(paths: tuple[tuple[str, ...], ...], obj: dict[str, Any]) -> None:
    """Re-encode the MicroTimes at ``paths`` (a kind's record lists them) as the Go types do on the way out
    (``+02:00`` becomes UTC ``Z``)."""
    for holder, key in _holders(paths, obj):
        holder[key] = micro_time(parse_micro_time(holder[key]))
