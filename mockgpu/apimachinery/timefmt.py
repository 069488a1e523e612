"""Time as the API writes it (``k8s.io/apimachinery/pkg/apis/meta/v1``): ``metav1.Time`` is RFC 3339 in UTC with
whole seconds (``2006-01-02T15:04:05Z``), ``metav1.MicroTime`` has six fractional digits (Events, Leases,
ResourceClaim allocation stamps); container log lines carry Go's ``time.RFC3339Nano`` (nine digits here).

Every component formats time through these (one home). A ``when`` is a Unix timestamp, an aware datetime, or
None for now; a naive datetime is taken as UTC.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

RFC3339 = "%Y-%m-%dT%H:%M:%SZ"
RFC3339_MICRO = "%Y-%m-%dT%H:%M:%S.%fZ"


def utc(when: float | datetime | None = None) -> datetime:
    """``when`` as an aware UTC datetime (now when None)."""
    if when is None:
        return datetime.fromtimestamp(time.time(), UTC)
    if isinstance(when, datetime):
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return datetime.fromtimestamp(when, UTC)


def rfc3339(when: float | datetime | None = None) -> str:
    """``metav1.Time``: UTC, whole seconds (the fraction is dropped, as Go's ``time.RFC3339`` layout does)."""
    return utc(when).strftime(RFC3339)


def micro_time(when: float | datetime | None = None) -> str:
    """``metav1.MicroTime``: UTC, six fractional digits."""
    return utc(when).strftime(RFC3339_MICRO)


def rfc3339_nano(when: float | datetime | None = None) -> str:
    """Go's ``time.RFC3339Nano`` as the kubelet writes log lines (nine fractional digits: microseconds + 000)."""
    return utc(when).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def parse_rfc3339_nano(text: str) -> datetime:
    """The UTC datetime of a ``rfc3339_nano`` (or whole-second ``rfc3339``) text; digits past micro are dropped."""
    date, _, frac = text.rstrip("Z").partition(".")
    base = datetime.strptime(date, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return base.replace(microsecond=int((frac + "000000")[:6])) if frac else base


def go_rfc3339(when: datetime) -> str:
    """Go's ``time.Format(time.RFC3339)`` of a zoned time: whole seconds, ``Z`` for UTC, ``+02:00`` otherwise
    (the CronJob controller's messages name a schedule's time in its own zone)."""
    text = when.replace(microsecond=0).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
