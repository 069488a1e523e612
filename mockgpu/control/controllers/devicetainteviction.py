"""The device taint eviction controller: pods whose allocated devices carry a ``NoExecute`` taint they do not
tolerate are deleted, and each DeviceTaintRule's ``EvictionInProgress`` condition says how that goes.

Modelled on kube-controller-manager v1.37.2's ``pkg/controller/devicetainteviction`` (``DRADeviceTaints`` and
``DRADeviceTaintRules`` GA, on):

- a device's evicting taints are its ``NoExecute`` taints in the newest generation of its pool's ResourceSlices
  plus every ``NoExecute`` DeviceTaintRule that selects it (driver, pool, device; ``ruleMatchesDevice``);
- a claim's eviction time (``claimEvictionTime``) is the earliest, over its allocated devices' evicting taints, of
  the taint's ``timeAdded``, moved later by the smallest ``tolerationSeconds`` of the allocation result's
  tolerations with ``effect: NoExecute`` that tolerate it; such a toleration without ``tolerationSeconds``
  ignores the taint (only tolerations naming ``NoExecute`` count here, as upstream);
- a scheduled pod's eviction time (``podEvictionTime``) is the earliest of its claims' (the claims it names and
  those made from its templates, allocated and reserved for this pod); when it has come, the controller emits
  ``Normal DeviceTaintManagerEviction "Marking for deletion"``, adds the condition ``DisruptionTarget=True``
  (reason ``DeletionByDeviceTaintManager``, message ``Device Taint manager: deleting due to NoExecute taint``)
  with a status patch and deletes the pod with a UID precondition; a pod whose pending eviction goes away (the
  taint or the claim changed) gets ``"Cancelling deletion"``;
- a DeviceTaintRule's ``status.conditions`` get ``EvictionInProgress`` (``maybeUpdateRuleStatus``) at once when the
  rule is new or its spec changed, and again ``ruleStatusPeriod`` (10 s) after pods were evicted or became
  pending: ``True``/``PodsPendingEviction`` while pods wait, then ``False``/``Completed`` or ``NotStarted``; for
  ``effect: None`` ``NoEffect`` with what ``NoExecute`` would do; for other effects ``OtherEffect``; each with
  upstream's messages and ``observedGeneration``.

Simplified: the whole set of pods is re-evaluated on any slice, rule or claim change (upstream keeps indexes); the
condition is written with a PUT of ``/status`` (upstream: server-side apply with force, as field manager
``device-taint-eviction-controller``); no metrics; a taint without ``timeAdded`` counts from now.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.controllers.api import PREFIX, Recorder
from mockgpu.control.controllers.base import Manager
from mockgpu.control.controllers.logic import parse_time
from mockgpu.control.controllers.resourceclaim import pod_claim_names
from mockgpu.sched.dra.taints import rule_matches, tolerates

Obj = dict[str, Any]
COMPONENT = "device-taint-eviction-controller"
SYNC_ALL = "DeviceTaintEviction"  # the manager's key for a re-evaluation of every pod
RULE = "DeviceTaintRule"  # the manager's key for one rule's status
RULE_STATUS_PERIOD = 10.0  # ruleStatusPeriod
CONDITION = "EvictionInProgress"
EVENT_REASON = "DeviceTaintManagerEviction"
DISRUPTION = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByDeviceTaintManager",
              "message": "Device Taint manager: deleting due to NoExecute taint"}


@dataclass(frozen=True)
class Reason:
    """One taint that makes a pod go: a DeviceTaintRule's (``rule`` its name) or a slice's."""

    rule: str = ""
    slice: str = ""
    device: str = ""
    index: int = 0


@dataclass
class Eviction:
    when: float
    reasons: set[Reason] = field(default_factory=set)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def newest_devices(slices: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], tuple[str, Mapping[str, Any]]]:
    """(driver, pool, device) → (slice name, device), from each pool's newest generation only."""
    newest: dict[tuple[str, str], int] = {}
    slices = list(slices)
    for s in slices:
        spec = s.get("spec") or {}
        key = (spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""))
        newest[key] = max(newest.get(key, 0), int((spec.get("pool") or {}).get("generation") or 0))
    out: dict[tuple[str, str, str], tuple[str, Mapping[str, Any]]] = {}
    for s in slices:
        spec = s.get("spec") or {}
        driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
        if int((spec.get("pool") or {}).get("generation") or 0) != newest[(driver, pool)]:
            continue
        for d in spec.get("devices") or []:
            out[(driver, pool, d.get("name", ""))] = (_meta(s).get("name", ""), d)
    return out


def claim_eviction(claim: Mapping[str, Any], devices: Mapping[tuple[str, str, str], tuple[str, Mapping[str, Any]]],
                   rules: Iterable[Mapping[str, Any]], now: float) -> Eviction | None:
    """``claimEvictionTime``: when the claim's pods must go and which taints say so; None if never."""
    evicting_rules = [r for r in rules if ((r.get("spec") or {}).get("taint") or {}).get("effect") == "NoExecute"]
    result: Eviction | None = None
    allocation = (claim.get("status") or {}).get("allocation") or {}
    for res in (allocation.get("devices") or {}).get("results") or []:
        dev_id = (res.get("driver", ""), res.get("pool", ""), res.get("device", ""))
        found = devices.get(dev_id)
        taints: list[tuple[Reason, Mapping[str, Any]]] = []
        if found is not None:
            slice_name, device = found
            taints += [(Reason(slice=slice_name, device=dev_id[2], index=i), t)
                       for i, t in enumerate(device.get("taints") or []) if t.get("effect") == "NoExecute"]
        taints += [(Reason(rule=_meta(r).get("name", "")), (r.get("spec") or {}).get("taint") or {})
                   for r in evicting_rules if rule_matches(r, *dev_id)]
        for reason, taint in taints:
            seconds: int | None = None
            forever = False
            for tol in res.get("tolerations") or []:
                if tol.get("effect") == "NoExecute" and tolerates(tol, taint):
                    if tol.get("tolerationSeconds") is None:
                        forever = True
                        break
                    s = max(int(tol["tolerationSeconds"]), 0)
                    seconds = s if seconds is None else min(seconds, s)
            if forever:
                continue
            added = parse_time(taint.get("timeAdded"))
            when = (now if added is None else added) + (seconds or 0)
            if result is None:
                result = Eviction(when, {reason})
            else:
                result.reasons.add(reason)
                result.when = min(result.when, when)
    return result


def _reserved_for(claim: Mapping[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or [])


def pod_eviction(pod: Mapping[str, Any], claims: Mapping[str, Eviction | None]) -> Eviction | None:
    """``podEvictionTime``: the earliest eviction of the pod's claims (``claims``: name → the claim's eviction,
    for the allocated claims of the pod's namespace reserved for it)."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return None
    out: Eviction | None = None
    for name in pod_claim_names(dict(pod)):
        ev = claims.get(name)
        if ev is None:
            continue
        if out is None:
            out = Eviction(ev.when, set(ev.reasons))
        else:
            out.when = min(out.when, ev.when)
            out.reasons |= ev.reasons
    return out


def rule_condition(effect: str, pending: int, namespaces: int, evicted: int, published: int,
                   allocated: int) -> tuple[str, str, str]:
    """(status, reason, message) of ``EvictionInProgress``, worded as upstream's ``maybeUpdateRuleStatus``."""
    status, reason, message = "False", "Effect" + effect, ""
    if effect == "NoExecute":
        if pending > 0:
            status, reason = "True", "PodsPendingEviction"
            message = ("1 pod needs" if pending == 1 else f"{pending} pods need") + " to be evicted in "
            message += "1 namespace." if namespaces == 1 else f"{namespaces} different namespaces."
        elif evicted > 0:
            reason = "Completed"
        else:
            reason = "NotStarted"
    elif effect == "None":
        reason = "NoEffect"
        message += "1 published device selected. " if published == 1 else f"{published} published devices selected. "
        message += "1 allocated device selected. " if allocated == 1 else f"{allocated} allocated devices selected. "
        message += "1 pod would be evicted in " if pending == 1 else f"{pending} pods would be evicted in "
        message += "1 namespace " if namespaces == 1 else f"{namespaces} different namespaces "
        message += ("if the effect was NoExecute. This information will not be updated again. Recreate the "
                    "DeviceTaintRule to trigger an update.")
    else:
        reason, message = "OtherEffect", "Eviction only happens for the NoExecute effect."
    if evicted > 0:
        message += (" " if message else "") + ("1 pod " if evicted == 1 else f"{evicted} pods ")
        message += "evicted since starting the controller."
    return status, reason, message


class DeviceTaintEvictionController:
    """Keys: ``(SYNC_ALL, "", "")`` evaluates every pod; ``(RULE, "", name)`` a rule's status."""

    def __init__(self, mgr: Manager, clock: Any = time.time) -> None:
        self.mgr = mgr
        self.clock = clock
        self.recorder = Recorder(mgr.api, COMPONENT)
        self.pending: dict[tuple[str, str, str], Eviction] = {}  # (ns, name, uid) → its eviction
        self.evicted: set[str] = set()  # pod uids done with
        self.evicted_by_rule: dict[str, int] = {}  # rule uid → pods evicted since the controller started

    # ---- routing ---------------------------------------------------------------------------------------------

    def route(self, plural: str, typ: str, obj: Obj, old: Obj | None = None) -> None:
        if plural == "devicetaintrules":
            if typ != "DELETED" and (old is None or old.get("spec") != obj.get("spec")):
                self.mgr.enqueue(RULE, "", _meta(obj).get("name", ""))  # at once, before evicting
            self.mgr.enqueue(SYNC_ALL, "", "")
        elif plural in ("resourceslices", "resourceclaims"):
            if self._any_taints() or self.pending:
                self.mgr.enqueue(SYNC_ALL, "", "")
        elif plural == "pods" and (obj.get("spec") or {}).get("resourceClaims"):
            if self._any_taints() or self.pending:
                self.mgr.enqueue(SYNC_ALL, "", "")

    def _any_taints(self) -> bool:
        if self.mgr.cache.list("devicetaintrules"):
            return True
        return any(d.get("taints") for s in self.mgr.cache.list("resourceslices")
                   for d in (s.get("spec") or {}).get("devices") or [])

    # ---- evaluation ------------------------------------------------------------------------------------------

    def _claim_evictions(self, rules: list[Obj], now: float) -> dict[tuple[str, str], tuple[Obj, Eviction | None]]:
        devices = newest_devices(self.mgr.cache.list("resourceslices"))
        out: dict[tuple[str, str], tuple[Obj, Eviction | None]] = {}
        for c in self.mgr.cache.list("resourceclaims"):
            if (c.get("status") or {}).get("allocation"):
                out[(_meta(c).get("namespace", ""), _meta(c).get("name", ""))] = (
                    c, claim_eviction(c, devices, rules, now))
        return out

    def _evictions(self, rules: list[Obj], now: float) -> list[tuple[Obj, Eviction]]:
        """Every scheduled pod that has to go (now or later) and why."""
        claims = self._claim_evictions(rules, now)
        out = []
        for pod in self.mgr.cache.list("pods"):
            meta = _meta(pod)
            ns, uid = meta.get("namespace", ""), meta.get("uid", "")
            mine = {name: ev for (cns, name), (c, ev) in claims.items() if cns == ns and _reserved_for(c, uid)}
            ev = pod_eviction(pod, mine)
            if ev is not None:
                out.append((pod, ev))
        return out

    def sync(self, ns: str, name: str) -> None:
        now = self.clock()
        rules = self.mgr.cache.list("devicetaintrules")
        rule_uid = {_meta(r).get("name", ""): _meta(r).get("uid", "") for r in rules}
        seen: set[tuple[str, str, str]] = set()
        next_at: float | None = None
        for pod, ev in self._evictions(rules, now):
            meta = _meta(pod)
            key = (meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", ""))
            if key[2] in self.evicted or meta.get("deletionTimestamp"):
                continue
            seen.add(key)
            before = self.pending.get(key)
            self.pending[key] = ev
            if before is None or before.reasons != ev.reasons:
                for r in {x.rule for x in ev.reasons if x.rule}:
                    self.mgr.enqueue(RULE, "", r, after=RULE_STATUS_PERIOD)
            if ev.when > now:
                next_at = ev.when if next_at is None else min(next_at, ev.when)
                continue
            if self._evict(pod):
                for r in {x.rule for x in ev.reasons if x.rule}:
                    uid = rule_uid.get(r, "")
                    self.evicted_by_rule[uid] = self.evicted_by_rule.get(uid, 0) + 1
                    self.mgr.enqueue(RULE, "", r, after=RULE_STATUS_PERIOD)
            self.evicted.add(key[2])
            self.pending.pop(key, None)
            seen.discard(key)
        for key in [k for k in self.pending if k not in seen]:
            del self.pending[key]
            pod = self.mgr.cache.get("pods", key[0], key[1])
            if pod is not None and _meta(pod).get("uid") == key[2] and not _meta(pod).get("deletionTimestamp"):
                self.recorder.event({**pod, "apiVersion": "v1", "kind": "Pod"}, "Normal", EVENT_REASON,
                                    "Cancelling deletion")
        if next_at is not None:
            self.mgr.enqueue(SYNC_ALL, "", "", after=max(next_at - now, 0.0) + 0.01)

    def _evict(self, cached: Obj) -> bool:
        """``addConditionAndDeletePod``; False when the pod was gone or replaced (nothing done)."""
        meta = _meta(cached)
        ns, name, uid = meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", "")
        pod = self.mgr.api.get("pods", ns, name)
        if pod is None or _meta(pod).get("uid") != uid:
            return False
        if _meta(pod).get("deletionTimestamp"):
            return True
        self.recorder.event({**pod, "apiVersion": "v1", "kind": "Pod"}, "Normal", EVENT_REASON,
                            "Marking for deletion")
        current = next((c for c in (pod.get("status") or {}).get("conditions") or []
                        if c.get("type") == DISRUPTION["type"]), None)
        if current is None or any(current.get(k) != v for k, v in DISRUPTION.items()):
            cond = {**DISRUPTION, "lastTransitionTime": rfc3339()}
            if current is not None and current.get("status") == DISRUPTION["status"]:
                cond["lastTransitionTime"] = current.get("lastTransitionTime") or cond["lastTransitionTime"]
            self.mgr.api.patch_pod(ns, name, {"metadata": {"uid": uid}, "status": {"conditions": [cond]}},
                                   status=True)
        try:
            self.mgr.api.delete("pods", ns, name, uid=uid)
        except ApiException as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True

    # ---- rule status -----------------------------------------------------------------------------------------

    def sync_rule(self, ns: str, name: str) -> None:
        rule = self.mgr.cache.get("devicetaintrules", "", name)
        if rule is None:
            return
        meta = _meta(rule)
        generation = int(meta.get("generation") or 0)
        conditions = list((rule.get("status") or {}).get("conditions") or [])
        existing = next((c for c in conditions if c.get("type") == CONDITION), None)
        now = self.clock()
        if existing is not None and existing.get("observedGeneration") == generation:
            since = now - (parse_time(existing.get("lastTransitionTime")) or 0.0)
            if since < RULE_STATUS_PERIOD:
                self.mgr.enqueue(RULE, "", name, after=RULE_STATUS_PERIOD - since)
                return
        effect = ((rule.get("spec") or {}).get("taint") or {}).get("effect", "")
        pending = namespaces = published = allocated = 0
        if effect in ("NoExecute", "None"):
            simulated = copy.deepcopy(rule)
            simulated["spec"]["taint"]["effect"] = "NoExecute"
            rules = [simulated if _meta(r).get("name") == name else r
                     for r in self.mgr.cache.list("devicetaintrules")]
            pods = [(p, ev) for p, ev in self._evictions(rules, now)
                    if not _meta(p).get("deletionTimestamp") and any(x.rule == name for x in ev.reasons)]
            pending, namespaces = len(pods), len({_meta(p).get("namespace") for p, _ in pods})
            if effect == "None":
                published = sum(1 for d in newest_devices(self.mgr.cache.list("resourceslices"))
                                if rule_matches(rule, *d))
                allocated = sum(1 for c in self.mgr.cache.list("resourceclaims")
                                for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {})
                                .get("results") or []
                                if rule_matches(rule, r.get("driver", ""), r.get("pool", ""), r.get("device", "")))
        status, reason, message = rule_condition(effect, pending, namespaces,
                                                 self.evicted_by_rule.get(meta.get("uid", ""), 0), published,
                                                 allocated)
        new = {"type": CONDITION, "status": status, "observedGeneration": generation, "reason": reason,
               "message": message}
        if existing is not None and all(existing.get(k) == v for k, v in new.items()):
            return
        new["lastTransitionTime"] = rfc3339(now)
        updated = copy.deepcopy(rule)
        updated.setdefault("status", {})["conditions"] = [c for c in conditions if c.get("type") != CONDITION] + [
            new]
        out = self.mgr.api.request("PUT", f"{PREFIX['devicetaintrules']}/devicetaintrules/{name}/status",
                                   body=updated)
        self.mgr.wrote("devicetaintrules", out)
