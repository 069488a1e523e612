"""DynamicResources: pods with ResourceClaims, as kube-scheduler v1.37.2's plugin with structured parameters.

PreEnqueue: every claim the pod references must exist (``could not find ResourceClaim "<ns>/<name>"``; a claim
from a template must be named in ``pod.status.resourceClaimStatuses`` first: ``pod "<ns>/<name>": ResourceClaim
not created yet``). PreFilter: the same check (for callers that skip PreEnqueue), claims already allocated restrict
the pod to their allocation's node selector, claims reserved by 256 consumers are ``resourceclaim in use``, every
request's DeviceClass must exist (``request <r>: device class <c> does not exist``); a pod without claims is
skipped (no Filter, nothing recorded). Filter: on each node the allocator (``mockgpu.sched.dra.allocator``) must
find devices for every unallocated claim (else ``cannot allocate all claims``) and every allocated claim must be
available there (else ``resourceclaim not available on the node``); all of these are UnschedulableAndUnresolvable,
so preemption does not help, as upstream. A claim the allocator cannot handle at all (CEL error, …) is an Error
status: the cycle stops with ``running "DynamicResources" filter plugin: <error>``. Reserve hands the chosen
node's new allocations (claim key → ``AllocationResult``) to the binder, which writes them to the claims' status
(PreBind) before binding, and every claim's allocation to the annotations.

Inputs: a ``DraSnapshot`` passed to ``schedule_one(dra=...)``; without one there are no classes, slices or claims.

Simplified: no Score (upstream scores prioritized-list subrequests only), no extended resources backed by DRA,
no PodGroup claims, no binding conditions, no filter timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mockgpu.sched.dra.allocator import AllocationError, Allocator, FailedOnNode, allocated_devices, claim_key
from mockgpu.sched.dra.claimname import ClaimNameError
from mockgpu.sched.dra.claimname import claim_name as resourceclaim_name
from mockgpu.sched.dra.snapshot import SNAPSHOT_KEY, DraSnapshot
from mockgpu.sched.framework import Code, Status, cycle_state
from mockgpu.sched.nodeselector import selector_matches
from mockgpu.sched.snapshot import NodeInfo

NAME = "DynamicResources"
_STATE_KEY = "dra.state"
ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
ERR_IN_USE = "resourceclaim in use"
RESERVED_FOR_MAX_SIZE = 256  # resourceapi.ResourceClaimReservedForMaxSize


def has_claims(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("resourceClaims"))


class ClaimLookupError(Exception):
    """A referenced claim cannot be used yet (upstream: ``foreachPodResourceClaim`` errors)."""


def pod_claims(pod: Mapping[str, Any], claims: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The pod's ResourceClaims in ``spec.resourceClaims`` order, as upstream ``resourceclaim.Name`` + lister."""
    meta = pod.get("metadata") or {}
    ns, name = meta.get("namespace") or "default", meta.get("name", "")
    out = []
    for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        try:
            claim_name, must_check_owner = resourceclaim_name(pod, ref)
        except ClaimNameError as exc:
            raise ClaimLookupError(str(exc)) from None
        if claim_name is None:
            continue  # intentionally not generated: ignored, as upstream
        claim = claims.get(f"{ns}/{claim_name}")
        if claim is None:
            raise ClaimLookupError(f'could not find ResourceClaim "{ns}/{claim_name}"')
        if (claim.get("metadata") or {}).get("deletionTimestamp"):
            raise ClaimLookupError(f'resourceclaim "{claim_name}" is being deleted')
        if must_check_owner and not _owned_by(claim, pod):
            raise ClaimLookupError(f"ResourceClaim {ns}/{claim_name} was not created for Pod {ns}/{name} "
                                   f"(Pod is not owner)")
        out.append(claim)
    return out


def _owned_by(claim: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    uid = (pod.get("metadata") or {}).get("uid")
    return any(o.get("uid") == uid and o.get("controller") for o in
               (claim.get("metadata") or {}).get("ownerReferences") or [])


def _reserved_for_pod(claim: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    uid = (pod.get("metadata") or {}).get("uid")
    return any(r.get("resource") == "pods" and r.get("uid") == uid
               for r in (claim.get("status") or {}).get("reservedFor") or [])


def _allocation(claim: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return (claim.get("status") or {}).get("allocation")


@dataclass
class _PodState:
    claims: list[dict[str, Any]]
    to_allocate: list[dict[str, Any]] = field(default_factory=list)
    available_on: list[Mapping[str, Any] | None] = field(default_factory=list)  # per claim: allocation node selector
    allocator: Allocator | None = None
    per_node: dict[str, tuple[Status, list[dict[str, Any]]]] = field(default_factory=dict)


def _error(message: str) -> Status:
    return Status(Code.ERROR, (message,))


class DynamicResources:
    name = NAME

    def __init__(self, args: object = None) -> None:
        pass

    # ---- PreEnqueue / PreFilter ------------------------------------------------------------------------------

    @staticmethod
    def _snapshot() -> DraSnapshot:
        snap = cycle_state().get(SNAPSHOT_KEY)
        return snap if isinstance(snap, DraSnapshot) else DraSnapshot()

    def pre_enqueue(self, pod: Mapping[str, Any], snapshot: DraSnapshot | None = None) -> Status:
        if not has_claims(pod):
            return Status.success()
        try:
            pod_claims(pod, (snapshot or self._snapshot()).claims)
        except ClaimLookupError as exc:
            return Status.unschedulable(str(exc), resolvable=False)
        return Status.success()

    def pre_filter(self, pod: Mapping[str, Any], nodes: list[NodeInfo]) -> Status:
        state = cycle_state()
        state.pop(_STATE_KEY, None)
        result = self._prepare(pod)
        if isinstance(result, Status):
            return result
        state[_STATE_KEY] = (pod, result)
        return Status.success()

    def _prepare(self, pod: Mapping[str, Any]) -> Status | _PodState:
        """PreFilter's work: the pod's claims, their checks, the allocator (or the status that ends it)."""
        if not has_claims(pod):
            return Status(Code.SKIP)
        snap = self._snapshot()
        try:
            claims = pod_claims(pod, snap.claims)
        except ClaimLookupError as exc:
            return Status.unschedulable(str(exc), resolvable=False)
        if not claims:
            return Status(Code.SKIP)
        ps = _PodState(claims)
        for claim in claims:
            alloc = _allocation(claim)
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            if alloc is not None and len(reserved) >= RESERVED_FOR_MAX_SIZE and not _reserved_for_pod(claim, pod):
                return Status.unschedulable(ERR_IN_USE, resolvable=False)
            if alloc is not None:
                ps.available_on.append(alloc.get("nodeSelector"))
                continue
            ps.available_on.append(None)
            ps.to_allocate.append(claim)
            for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
                exactly = req.get("exactly")
                if exactly is None:
                    continue  # firstAvailable (not modelled): the allocator reports it
                class_name = exactly.get("deviceClassName") or ""
                if not class_name:
                    return _error(f"request {req.get('name', '')}: unsupported request type")
                if class_name not in snap.classes:
                    return Status.unschedulable(f"request {req.get('name', '')}: device class {class_name} does "
                                                f"not exist", resolvable=False)
        if ps.to_allocate:
            in_use = allocated_devices(c for k, c in snap.claims.items())
            ps.allocator = Allocator(snap.classes, snap.slice_index, in_use, snap.taint_rules)
        return ps

    def _pod_state(self, pod: Mapping[str, Any]) -> _PodState | None:
        entry = cycle_state().get(_STATE_KEY)
        if entry is None or entry[0] is not pod:
            return None
        state: _PodState = entry[1]
        return state

    # ---- Filter ----------------------------------------------------------------------------------------------

    def filter(self, pod: Mapping[str, Any], node: NodeInfo) -> Status:
        if not has_claims(pod):
            return Status(Code.SKIP)
        ps = self._pod_state(pod)
        if ps is None:  # PreFilter did not run (a direct Filter call): do its work for this pod now
            prepared = self._prepare(pod)
            if isinstance(prepared, Status):
                return prepared
            ps = prepared
            cycle_state()[_STATE_KEY] = (pod, ps)
        hit = ps.per_node.get(node.name)
        if hit is None:
            hit = ps.per_node[node.name] = self._filter(ps, node)
        return hit[0]

    def _filter(self, ps: _PodState, node: NodeInfo) -> tuple[Status, list[dict[str, Any]]]:
        unavailable = False
        for selector in ps.available_on:
            if selector is not None and not selector_matches(selector.get("nodeSelectorTerms") or [], node.labels,
                                                             node.name):
                unavailable = True
        allocations: list[dict[str, Any]] = []
        if ps.allocator is not None:
            try:
                result = ps.allocator.allocate(node.node, ps.to_allocate)
            except FailedOnNode as exc:
                return Status.unschedulable(str(exc), resolvable=False), []
            except AllocationError as exc:
                return _error(str(exc)), []
            if result is None or len(result) != len(ps.to_allocate):
                return Status.unschedulable(ERR_CANNOT_ALLOCATE, resolvable=False), []
            allocations = result
        if unavailable:
            return Status.unschedulable(ERR_NOT_AVAILABLE, resolvable=False), []
        return Status.success(), allocations

    # ---- Reserve ---------------------------------------------------------------------------------------------

    def reserve(self, pod: Mapping[str, Any], node_name: str) -> dict[str, Any]:
        """``{"allocated": claim key → allocation made now on node_name, "claims": every claim of the pod →
        its allocation (made now or before)}``; empty for a pod without claims."""
        ps = self._pod_state(pod)
        if ps is None:
            return {}
        allocated: dict[str, Any] = {}
        if ps.to_allocate:
            hit = ps.per_node.get(node_name)
            if hit is None or not hit[0].is_success:
                return {}
            allocated = {claim_key(c): a for c, a in zip(ps.to_allocate, hit[1], strict=True)}
        claims = {claim_key(c): allocated.get(claim_key(c)) or _allocation(c) for c in ps.claims}
        return {"allocated": allocated, "claims": claims}
