"""The leaf room's rules, table-driven: upstream's resource-name classes and the API's time formats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from mockgpu.apimachinery.names import is_extended_resource_name, is_native_resource_name
from mockgpu.apimachinery.timefmt import go_rfc3339, micro_time, parse_rfc3339_nano, rfc3339, rfc3339_nano

T = datetime(2026, 12, 4, 18, 5, 9, 123456, tzinfo=UTC)


@pytest.mark.parametrize(("name", "native", "extended"), [
    ("cpu", True, False),
    ("memory", True, False),
    ("kubernetes.io/something", True, False),
    ("nvidia.com/gpu", False, True),
    ("nvidia.com/mig-1g.10gb", False, True),
    ("nvidia.com/gpu.shared", False, True),
    ("requests.nvidia.com/gpu", False, False),  # the quota prefix is not an extended resource
    # requests.<name> must be a qualified name: a prefix that is no DNS subdomain, or a name part over 63
    # characters, is not extended (the scheduler's simplified copy said it was)
    ("Example.com/gpu", False, False),
    ("example.com/" + "g" * 64, False, False),
    ("a/b/c", False, False),
])
def test_resource_name_classes(name, native, extended):
    assert is_native_resource_name(name) is native
    assert is_extended_resource_name(name) is extended


@pytest.mark.parametrize(("fn", "when", "want"), [
    (rfc3339, T, "2026-12-04T18:05:09Z"),
    (rfc3339, T.timestamp(), "2026-12-04T18:05:09Z"),
    (rfc3339, T.astimezone(timezone(timedelta(hours=2))), "2026-12-04T18:05:09Z"),
    (rfc3339, T.replace(tzinfo=None), "2026-12-04T18:05:09Z"),  # naive is UTC
    (micro_time, T, "2026-12-04T18:05:09.123456Z"),
    (rfc3339_nano, T, "2026-12-04T18:05:09.123456000Z"),
    (go_rfc3339, T, "2026-12-04T18:05:09Z"),
    (go_rfc3339, T.astimezone(timezone(timedelta(hours=2))), "2026-12-04T20:05:09+02:00"),
])
def test_time_formats(fn, when, want):
    assert fn(when) == want


def test_rfc3339_nano_round_trips_to_the_microsecond():
    assert parse_rfc3339_nano(rfc3339_nano(T)) == T
    assert parse_rfc3339_nano("2026-12-04T18:05:09Z") == T.replace(microsecond=0)
