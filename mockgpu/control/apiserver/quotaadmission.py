"""The admission plugins that read the namespace's quota objects: LimitRanger (mutating, then validating) and
ResourceQuota (validating, last), as kube-apiserver runs them around the strategy's validation
(``plugin/pkg/admission/limitranger``, ``k8s.io/apiserver/pkg/admission/plugin/resourcequota``).

ResourceQuota's ``CheckRequest``: for each quota of the namespace that matches the object (its ``status.hard``
names a resource the object's evaluator tracks, and the object is in each of its scopes), the object must state
the compute resources the quota limits ("must specify ..."), the quota must have a status ("status unknown for
quota"), and ``status.used`` plus what the object uses must stay within ``status.hard`` ("exceeded quota: ...").
The charge is then written to the quota's ``status.used`` in the same step as the object itself: the embedded
server's verbs run one at a time on its event loop, so two creates can never both take the last unit of a quota
(upstream gets the same from its quota status updates with a resourceVersion precondition, retried). The quota
controller recomputes ``status.used`` from the objects afterwards, releasing what deleted or finished objects
held. Subresources, cluster-scoped kinds and kinds that are never stored (bindings, reviews) are not
charged, as upstream ignores them. Simplified: no admission configuration (``limitedResources``).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from mockgpu.apimachinery.status import StatusError, forbidden
from mockgpu.control.apiserver import limitranges
from mockgpu.control.apiserver.registry.kind import Kind
from mockgpu.control.apiserver.store import Obj, Store
from mockgpu.control.quota import evaluators
from mockgpu.control.quota.resources import (
    add,
    less_than_or_equal,
    mask,
    negative,
    parse_list,
    pretty,
    remove_zeros,
    subtract_non_negative,
    to_raw,
)

QUOTAS = "resourcequotas"
LIMIT_RANGES = "limitranges"


def _name(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or meta.get("generateName") or "Unknown")


def _forbidden(info: Kind, obj: Obj, reason: str) -> StatusError:
    """``admission.NewForbidden``: ``<resource> "<name>" is forbidden: <reason>``."""
    return forbidden(info.plural, _name(obj), reason, group=info.group)


def mutate(info: Kind, ns: str, obj: Obj, store: Store) -> None:
    """Mutating admission on create: LimitRanger's defaults for the kinds it handles."""
    if info.limit_ranged:
        limitranges.admit(obj, store.list(LIMIT_RANGES, ns))


def validate(info: Kind, ns: str, obj: Obj, old: Obj | None, store: Store) -> list[tuple[Obj, Obj]]:
    """Validating admission: LimitRanger's min/max on create, then ResourceQuota. A 403, or the quotas to charge
    as (stored quota, quota with the new ``status.used``) pairs."""
    if old is None and info.limit_ranged:
        msg = limitranges.check(obj, store.list(LIMIT_RANGES, ns))
        if msg is not None:
            raise _forbidden(info, obj, msg)
    if not info.namespaced or not info.stored or info.review is not None:
        return []
    quotas = store.list(QUOTAS, ns)
    if not quotas:
        return []
    return check_request(info, obj, old, quotas, datetime.now(UTC))


def check_request(info: Kind, obj: Obj, old: Obj | None, quotas: list[Obj],
                  now: datetime) -> list[tuple[Obj, Obj]]:
    """``CheckRequest`` (see the module docstring)."""
    ev = evaluators.evaluator_for(info.group, info.plural)
    if old is not None and not ev.update_counts(obj, old):
        return []
    interesting: list[Obj] = []
    for quota in quotas:
        if not evaluators.matches(quota, ev, obj):
            continue
        status = quota.get("status") or {}
        restricted = ev.matching(list(status.get("hard") or {}))
        msg = ev.constraints(restricted, obj)
        if msg is not None:
            raise _forbidden(info, obj, f"failed quota: {quota['metadata']['name']}: {msg}")
        used = status.get("used") or {}
        if any(name not in used for name in status.get("hard") or {} if name in restricted):
            raise _forbidden(info, obj, f"status unknown for quota: {quota['metadata']['name']}, resources: "
                                        f"{','.join(sorted(restricted))}")
        interesting.append(quota)
    if not interesting:
        return []
    usage = ev.usage(obj, now)
    if neg := negative(usage):
        raise _forbidden(info, obj, f"quota usage is negative for resource(s): {','.join(sorted(neg))}")
    deltas = {id(q): usage for q in interesting}
    if old is not None and (old.get("metadata") or {}).get("resourceVersion"):
        delta = subtract_non_negative(usage, ev.usage(old, now))
        deltas = {id(q): delta if evaluators.matches(q, ev, old) else usage for q in interesting}
    deltas = {k: d for k, d in ((k, remove_zeros(d)) for k, d in deltas.items()) if d}
    charges: list[tuple[Obj, Obj]] = []
    for quota in interesting:
        if id(quota) not in deltas:
            continue
        delta = deltas[id(quota)]
        status = quota.get("status") or {}
        hard, used = parse_list(status.get("hard")), parse_list(status.get("used"))
        requested = mask(delta, hard)
        new_used = add(used, requested)
        ok, exceeded = less_than_or_equal(mask(new_used, requested), hard)
        if not ok:
            raise _forbidden(info, obj, f"exceeded quota: {quota['metadata']['name']}, requested: "
                                        f"{pretty(mask(requested, exceeded))}, used: {pretty(mask(used, exceeded))}, "
                                        f"limited: {pretty(mask(hard, exceeded))}")
        new = copy.deepcopy(quota)
        new.setdefault("status", {})["used"] = to_raw(new_used)
        if new != quota:
            charges.append((quota, new))
    return charges


def charge(store: Store, charges: list[tuple[Obj, Obj]]) -> None:
    """Write the quotas' new ``status.used`` (what upstream's evaluator does with its status updates)."""
    for old, new in charges:
        store.update(QUOTAS, new, old)
