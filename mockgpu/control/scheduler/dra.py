"""The scheduler's DRA state: DeviceClasses, ResourceSlices, ResourceClaims and DeviceTaintRules from the watches,
plus the claims it has allocated but not yet seen written back (upstream's assume cache for claims), and the
PreBind writes.

``snapshot()`` is what a cycle's DynamicResources plugin reads; the pool index inside it is rebuilt only when a
slice or class changed. After a pod with claims is chosen, ``assume(pod, allocations)`` records the claims as
allocated and reserved for the pod at once (the next cycle already sees those devices taken); ``prebind`` (on a
writer thread) then writes each claim as upstream's ``bindClaim``: the ``resource.kubernetes.io/delete-protection``
finalizer with a PUT of the claim when it gets allocated, then a PUT of its ``status`` with ``allocation`` and
``reservedFor`` + the pod, retried on a conflict after a fresh GET. The watch's copy replaces the assumed one
once it shows the pod in ``reservedFor``.

Simplified: queueing hints are one rule (any class/slice/claim change re-queues every unschedulable pod); a
failed PreBind drops the assumption but does not undo a status already written (upstream's Unreserve does not
either once the API call succeeded).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.scheduler.api import RawApi
from mockgpu.sched.dra.allocator import claim_key
from mockgpu.sched.dra.snapshot import DraSnapshot
from mockgpu.sched.plugins.dynamic_resources import ClaimLookupError, has_claims, pod_claims

FINALIZER = "resource.kubernetes.io/delete-protection"
KINDS = ("deviceclasses", "resourceslices", "resourceclaims", "devicetaintrules")
CONFLICT_RETRIES = 5


class PreBindError(Exception):
    """The claim changed under us in a way a retry cannot fix (deleted, allocated elsewhere)."""


def _name(obj: Mapping) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def _reserved_for(claim: Mapping, uid: str) -> bool:
    return any(r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or [])


class DraStore:
    """Used from the scheduler's thread only (``prebind`` gets its own copies)."""

    def __init__(self) -> None:
        self.classes: dict[str, dict] = {}
        self.slices: dict[str, dict] = {}
        self.taint_rules: dict[str, dict] = {}
        self.claims: dict[str, dict] = {}
        self.assumed: dict[str, tuple[str, dict]] = {}  # claim key → (pod uid, claim as the scheduler wrote it)
        self._snap: DraSnapshot | None = None

    # ---- watch events ----------------------------------------------------------------------------------------

    def sync(self, kind: str, items: list[dict]) -> None:
        table = self._table(kind)
        table.clear()
        for obj in items:
            self.apply(kind, "ADDED", obj)
        self._snap = None

    def apply(self, kind: str, typ: str, obj: dict) -> None:
        """One watch event; every change may help a pending pod, so the caller re-queues them."""
        if kind == "resourceclaims":
            meta = obj.get("metadata") or {}
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
            if typ == "DELETED":
                self.claims.pop(key, None)
                self.assumed.pop(key, None)
            else:
                self.claims[key] = obj
                entry = self.assumed.get(key)
                if entry is not None and _reserved_for(obj, entry[0]):
                    del self.assumed[key]  # the API has what we assumed
            return
        table = self._table(kind)
        if typ == "DELETED":
            table.pop(_name(obj), None)
        else:
            table[_name(obj)] = obj
        self._snap = None

    def _table(self, kind: str) -> dict[str, dict]:
        return {"deviceclasses": self.classes, "resourceslices": self.slices, "resourceclaims": self.claims,
                "devicetaintrules": self.taint_rules}[kind]

    # ---- cycles ----------------------------------------------------------------------------------------------

    def snapshot(self) -> DraSnapshot:
        if self._snap is None:
            self._snap = DraSnapshot(dict(self.classes), list(self.slices.values()), {},
                                     [self.taint_rules[k] for k in sorted(self.taint_rules)])
        claims = dict(self.claims)
        for key, (_, claim) in self.assumed.items():
            claims[key] = claim
        return self._snap.with_claims(claims)

    def assume(self, pod: Mapping, allocations: Mapping[str, dict]) -> list[dict]:
        """Record the pod's claims as allocated (``allocations``) and reserved for it; returns the claims to write."""
        if not has_claims(pod):
            return []
        meta = pod.get("metadata") or {}
        uid = meta.get("uid", "")
        try:
            claims = pod_claims(pod, self.snapshot().claims)
        except ClaimLookupError:
            return []
        out = []
        for claim in claims:
            key = claim_key(claim)
            if _reserved_for(claim, uid) and key not in allocations:
                continue
            new = copy.deepcopy(claim)
            status = new.setdefault("status", {})
            if key in allocations:
                status["allocation"] = copy.deepcopy(dict(allocations[key]))
            status.setdefault("reservedFor", []).append({"resource": "pods", "name": meta.get("name", ""),
                                                         "uid": uid})
            self.assumed[key] = (uid, new)
            out.append(new)
        return out

    def forget(self, pod: Mapping) -> None:
        uid = (pod.get("metadata") or {}).get("uid", "")
        for key in [k for k, (u, _) in self.assumed.items() if u == uid]:
            del self.assumed[key]


def prebind(api: RawApi, claims: list[dict], pod: Mapping) -> None:
    """Write each claim's allocation and reservation (upstream ``bindClaim``); raises on failure."""
    uid = (pod.get("metadata") or {}).get("uid", "")
    for wanted in claims:
        meta = wanted["metadata"]
        ns, name = meta.get("namespace") or "default", meta["name"]
        allocation = (wanted.get("status") or {}).get("allocation")
        claim = _current(api, ns, name)
        for attempt in range(CONFLICT_RETRIES):
            try:
                _write(api, claim, allocation, pod, uid)
                break
            except ApiException as exc:
                if exc.status != 409 or attempt == CONFLICT_RETRIES - 1:
                    raise
                claim = _current(api, ns, name)


def _current(api: RawApi, ns: str, name: str) -> dict:
    return api.get_claim(ns, name)


def _untimed(allocation: Any) -> Any:
    if isinstance(allocation, Mapping):
        return {k: v for k, v in allocation.items() if k != "allocationTimestamp"}
    return allocation


def _write(api: RawApi, claim: dict, allocation: Any, pod: Mapping, uid: str) -> None:
    meta = claim.setdefault("metadata", {})
    if meta.get("deletionTimestamp"):
        raise PreBindError(f"claim {meta.get('namespace')}/{meta.get('name')} got deleted in the meantime")
    status = claim.setdefault("status", {})
    if _reserved_for(claim, uid):
        return
    if allocation is not None and not status.get("allocation"):
        if FINALIZER not in (meta.get("finalizers") or []):
            meta["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
            claim = api.update_claim(claim)
            status = claim.setdefault("status", {})
        status["allocation"] = allocation
    elif allocation is not None and _untimed(status.get("allocation")) != _untimed(allocation):
        raise PreBindError(f"claim {meta.get('namespace')}/{meta.get('name')} got allocated elsewhere in the "
                           f"meantime")
    if status.get("allocation") and not status["allocation"].get("allocationTimestamp"):
        # v1.37 stamps the allocation (DRADeviceBindingConditions, beta, and DRAResourceClaimDeviceStatus, GA: on)
        status["allocation"] = {**status["allocation"], "allocationTimestamp": rfc3339()}
    status["reservedFor"] = [*(status.get("reservedFor") or []),
                             {"resource": "pods", "name": (pod.get("metadata") or {}).get("name", ""), "uid": uid}]
    api.update_claim(claim, status=True)
