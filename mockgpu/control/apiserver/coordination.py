"""coordination.k8s.io/v1 Leases: MicroTime decoding, validation and the ``kubectl get leases`` row.

Node heartbeats use one Lease per node, as the kubelet's node lease controller keeps them upstream — the
contract for the embedded kubelets: namespace ``kube-node-lease``, name = the node's name, ``holderIdentity``
= the node's name, ``leaseDurationSeconds: 40``, ``renewTime`` refreshed every 10 s (a quarter of the
duration), ``ownerReferences`` to the Node. ``kubectl describe node`` reads that Lease. Simplified: the
alpha ``strategy``/``preferredHolder`` fields (CoordinatedLeaderElection) are stored but not validated beyond
upstream's rule that ``preferredHolder`` needs ``strategy``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from mockgpu.control.apiserver.status import FieldError, field_forbidden, field_invalid

NODE_LEASE_NAMESPACE = "kube-node-lease"
NODE_LEASE_DURATION_SECONDS = 40
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


def format_micro_time(when: datetime) -> str:
    """How a MicroTime is encoded: UTC, six fractional digits."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def micro_now() -> str:
    return format_micro_time(datetime.now(UTC))


LEASE_TIME_FIELDS = ("acquireTime", "renewTime")


def normalize_lease_times(lease: dict[str, Any]) -> None:
    """MicroTimes are re-encoded in UTC on the way out, as the Go types do (``+02:00`` becomes ``Z``)."""
    spec = lease.get("spec")
    if not isinstance(spec, dict):
        return
    for key in LEASE_TIME_FIELDS:
        if isinstance(spec.get(key), str):
            spec[key] = format_micro_time(parse_micro_time(spec[key]))


def lease_decode_error(lease: dict[str, Any]) -> str | None:
    """The MicroTime parse error of a lease's spec, as the decoder reports it; None when every time parses."""
    spec = lease.get("spec")
    for key in LEASE_TIME_FIELDS:
        value = spec.get(key) if isinstance(spec, dict) else None
        if isinstance(value, str):
            try:
                parse_micro_time(value)
            except MicroTimeError as exc:
                return str(exc)
    return None


def validate_lease(lease: dict[str, Any]) -> list[FieldError]:
    """upstream ``ValidateLeaseSpec`` (the GA fields)."""
    spec = lease.get("spec") or {}
    errs: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errs.append(field_invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        errs.append(field_invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    if spec.get("preferredHolder") and not spec.get("strategy"):
        errs.append(field_forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"))
    return errs


def node_lease(node: str, now: datetime | None = None, node_uid: str | None = None) -> dict[str, Any]:
    """The Lease a kubelet keeps for ``node`` (the contract above), renewed ``now``."""
    meta: dict[str, Any] = {"name": node, "namespace": NODE_LEASE_NAMESPACE}
    if node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}]
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
            "spec": {"holderIdentity": node, "leaseDurationSeconds": NODE_LEASE_DURATION_SECONDS,
                     "renewTime": format_micro_time(now or datetime.now(UTC))}}
