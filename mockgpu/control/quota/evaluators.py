"""What a quota counts for each resource: the pod evaluator (``pkg/quota/v1/evaluator/core/pods.go``) and the
generic object-count evaluator (``k8s.io/apiserver/pkg/quota/v1/generic/evaluator.go``), keyed by group and
resource as upstream's quota registry keys them.

A pod uses ``count/pods`` always, and ``pods``, ``cpu``/``requests.cpu``, ``limits.cpu``, the same for
``memory`` and ``ephemeral-storage``, ``requests.<extended resource>`` (``requests.nvidia.com/gpu``) and
hugepages while it is not terminal (neither Succeeded nor Failed, nor past its deletion grace period). Extended
resources are counted only as ``requests.<name>``: a quota on ``limits.nvidia.com/gpu`` is accepted by
validation but counts nothing, as upstream. Every other resource uses ``count/<resource>[.<group>]`` (and its
legacy name: ``configmaps``, ``secrets``, ...) per object; those evaluators match no scoped quota. A Service also
uses ``services.nodeports`` and ``services.loadbalancers`` as its type asks for them, and is charged on update too.

Simplified: pod-level resources (``spec.resources``) and in-place resize (status resources) are not read; the
pod's ``status.qosClass`` decides BestEffort (the API server sets it on create).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from mockgpu.apimachinery.names import is_extended_resource_name, is_native_resource_name
from mockgpu.apimachinery.selectors import selector_matches
from mockgpu.apimachinery.timefmt import parse_rfc3339_nano
from mockgpu.control.quota.resources import (
    REQUESTS_PREFIX,
    Quantity,
    ResourceList,
    add,
    mask,
    parse_list,
)

Obj = dict[str, Any]
Selector = Mapping[str, Any]  # a ScopedResourceSelectorRequirement: scopeName, operator, values

ONE = Quantity(Fraction(1))
POD_RESOURCES = ("count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
                 "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods")
_POD_PREFIXES = ("hugepages-", "requests.hugepages-")
#: the compute resources a quota makes every container state (``validationSet``)
_CONSTRAINED = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory")
#: ``legacyObjectCountAliases``: the old names of object counts
LEGACY_COUNT_NAMES = {("", "services"): "services", ("", "replicationcontrollers"): "replicationcontrollers",
                      ("", "resourcequotas"): "resourcequotas", ("", "secrets"): "secrets",
                      ("", "configmaps"): "configmaps", ("", "persistentvolumeclaims"): "persistentvolumeclaims"}


def count_name(group: str, resource: str) -> str:
    """``ObjectCountQuotaResourceNameFor``: ``count/<resource>`` or ``count/<resource>.<group>``."""
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def scope_selectors(quota: Obj) -> list[dict[str, Any]]:
    """``GetScopeSelectorsFromQuota``: ``spec.scopes`` as ``Exists`` selectors, then ``spec.scopeSelector``."""
    spec = quota.get("spec") or {}
    out: list[dict[str, Any]] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    out += [dict(e) for e in ((spec.get("scopeSelector") or {}).get("matchExpressions") or [])]
    return out


# ---- pods ----------------------------------------------------------------------------------------------------

def _containers(pod: Obj, key: str) -> list[Obj]:
    return [c for c in ((pod.get("spec") or {}).get(key) or []) if isinstance(c, dict)]


def _resources(c: Obj, part: str) -> ResourceList:
    return parse_list((c.get("resources") or {}).get(part))


def _max(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        if k not in out or v.value > out[k].value:
            out[k] = v
    return out


def _aggregate(pod: Obj, part: str) -> ResourceList:
    """``PodRequests``/``PodLimits`` (component-helpers): the containers' sum, raised to what each init container
    needs (restartable init containers, sidecars, add to both), plus ``spec.overhead``."""
    total: ResourceList = {}
    for c in _containers(pod, "containers"):
        total = add(total, _resources(c, part))
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for c in _containers(pod, "initContainers"):
        own = _resources(c, part)
        if c.get("restartPolicy") == "Always":
            total = add(total, own)
            sidecars = add(sidecars, own)
            need = sidecars
        else:
            need = add(own, sidecars)
        init_max = _max(init_max, need)
    total = _max(total, init_max)
    return add(total, parse_list((pod.get("spec") or {}).get("overhead")))


def compute_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """``podComputeUsageHelper``."""
    out: ResourceList = {"pods": ONE}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = requests[name]
            out[REQUESTS_PREFIX + name] = requests[name]
        if name in limits:
            out["limits." + name] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            out[name] = value
            out[REQUESTS_PREFIX + name] = value
        if is_extended_resource_name(name) or name.startswith("deviceclass.resource.kubernetes.io/"):
            out[REQUESTS_PREFIX + name] = value
    return out


def counts_against_quota(pod: Obj, now: datetime) -> bool:
    """``QuotaV1Pod``: not Succeeded or Failed, and not past its deletion grace period."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    meta = pod.get("metadata") or {}
    grace, when = meta.get("deletionGracePeriodSeconds"), meta.get("deletionTimestamp")
    if when and grace is not None:
        try:
            deleted = parse_rfc3339_nano(str(when))
        except ValueError:
            return True
        if now > deleted + timedelta(seconds=int(grace)):
            return False
    return True


def pod_usage(pod: Obj, now: datetime) -> ResourceList:
    """``PodUsageFunc``."""
    out: ResourceList = {"count/pods": ONE}
    if not counts_against_quota(pod, now):
        return out
    return add(out, compute_usage(_aggregate(pod, "requests"), _aggregate(pod, "limits")))


def is_terminating(pod: Obj) -> bool:
    deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    return isinstance(deadline, int) and deadline >= 0


def is_best_effort(pod: Obj) -> bool:
    qos = (pod.get("status") or {}).get("qosClass")
    if qos:
        return bool(qos == "BestEffort")
    return not any(name in ("cpu", "memory")
                   for key in ("initContainers", "containers") for c in _containers(pod, key)
                   for part in ("requests", "limits") for name in _resources(c, part))


def _cross_namespace_affinity(pod: Obj) -> bool:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = affinity.get(kind) or {}
        terms = list(a.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [(w or {}).get("podAffinityTerm") or {}
                  for w in a.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        if any((t or {}).get("namespaces") or (t or {}).get("namespaceSelector") is not None for t in terms):
            return True
    return False


def pod_matches_scope(selector: Selector, pod: Obj) -> bool:
    """``podMatchesScopeFunc``."""
    scope = selector.get("scopeName")
    if scope == "Terminating":
        return is_terminating(pod)
    if scope == "NotTerminating":
        return not is_terminating(pod)
    if scope == "BestEffort":
        return is_best_effort(pod)
    if scope == "NotBestEffort":
        return not is_best_effort(pod)
    if scope == "PriorityClass":
        pc = (pod.get("spec") or {}).get("priorityClassName") or ""
        if selector.get("operator") == "Exists":
            return bool(pc)
        label_selector = {"matchExpressions": [{"key": "PriorityClass", "operator": selector.get("operator"),
                                                "values": list(selector.get("values") or [])}]}
        return selector_matches(label_selector, {"PriorityClass": pc} if pc else {})
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(pod)
    return False


def _container_compute(c: Obj) -> set[str]:
    return set(compute_usage(_resources(c, "requests"), _resources(c, "limits")))


def pod_constraints(required: Iterable[str], pod: Obj) -> str | None:
    """``podEvaluator.Constraints``: every container must state the compute resources a matching quota limits;
    the message, or None."""
    wanted = set(required) & set(_CONSTRAINED)
    missing: dict[str, set[str]] = {}
    for key in ("containers", "initContainers"):
        for c in _containers(pod, key):
            for name in wanted - _container_compute(c):
                missing.setdefault(name, set()).add(str(c.get("name") or ""))
    if not missing:
        return None
    return "must specify " + "; ".join(f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing))


# ---- evaluators -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Evaluator:
    """One resource's ``quota.Evaluator``: which quota resources it tracks, what an object uses, which scopes an
    object matches and what a matching quota requires of it."""

    group: str
    resource: str
    matching: Callable[[Iterable[str]], list[str]]
    usage: Callable[[Obj, datetime], ResourceList]
    matches_scope: Callable[[Selector, Obj], bool]
    constraints: Callable[[Iterable[str], Obj], str | None]
    update_counts: Callable[[Obj, Obj], bool]  # (new, old): whether an update is charged (Handles)


def _pod_matching(names: Iterable[str]) -> list[str]:
    """``podEvaluator.MatchingResources``."""
    names = list(names)
    out = [n for n in names if n in POD_RESOURCES]
    out += [n for n in names if n.startswith(_POD_PREFIXES)]
    out += [n for n in names if n.startswith(REQUESTS_PREFIX) and (
        not is_native_resource_name(n) or n.startswith("requests.deviceclass.resource.kubernetes.io/"))]
    return out


PODS = Evaluator("", "pods", _pod_matching, pod_usage, pod_matches_scope, pod_constraints,
                 lambda new, old: is_terminating(new) != is_terminating(old))


def object_count(group: str, resource: str) -> Evaluator:
    """``NewObjectCountEvaluator``: one ``count/<resource>[.<group>]`` (and its legacy name) per object; matches
    no scope, charges creates only."""
    names = [count_name(group, resource)] + ([LEGACY_COUNT_NAMES[(group, resource)]]
                                            if (group, resource) in LEGACY_COUNT_NAMES else [])
    usage = dict.fromkeys(names, ONE)
    return Evaluator(group, resource, lambda given: [n for n in given if n in names],
                     lambda obj, now: dict(usage), lambda selector, obj: False, lambda required, obj: None,
                     lambda new, old: False)


# ---- services (pkg/quota/v1/evaluator/core/services.go) -----------------------------------------------------

SERVICE_RESOURCES = ("count/services", "services", "services.nodeports", "services.loadbalancers")


def service_usage(svc: Obj, now: datetime) -> ResourceList:
    """``serviceEvaluator.Usage``: the object counts, node ports (one per port of a NodePort or LoadBalancer
    Service; of a LoadBalancer with ``allocateLoadBalancerNodePorts: false``, only its ports that name one) and
    load balancers."""
    spec = svc.get("spec") or {}
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    node_ports, balancers = 0, 0
    if spec.get("type") == "NodePort":
        node_ports = len(ports)
    elif spec.get("type") == "LoadBalancer":
        node_ports = len(ports) if spec.get("allocateLoadBalancerNodePorts") is not False else \
            sum(1 for p in ports if p.get("nodePort"))
        balancers = 1
    return {"count/services": ONE, "services": ONE, "services.nodeports": Quantity(Fraction(node_ports)),
            "services.loadbalancers": Quantity(Fraction(balancers))}


SERVICES = Evaluator("", "services", lambda given: [n for n in given if n in SERVICE_RESOURCES], service_usage,
                     lambda selector, obj: False, lambda required, obj: None, lambda new, old: True)

#: evaluators with rules of their own (upstream ``NewEvaluators``); every other resource counts objects
_EVALUATORS = {("", "pods"): PODS, ("", "services"): SERVICES}


def evaluator_for(group: str, resource: str) -> Evaluator:
    return _EVALUATORS.get((group, resource)) or object_count(group, resource)


def matches(quota: Obj, evaluator: Evaluator, obj: Obj) -> bool:
    """``generic.Matches``: the quota's ``status.hard`` names a resource the evaluator tracks, and the object is
    in every scope of the quota."""
    hard = list((quota.get("status") or {}).get("hard") or {})
    return bool(evaluator.matching(hard)) and all(evaluator.matches_scope(s, obj) for s in scope_selectors(quota))


def usage_of(quota: Obj, evaluator: Evaluator, objects: Iterable[Obj], now: datetime) -> ResourceList:
    """``CalculateUsageStats`` for one evaluator: the tracked resources start at zero, then each object in every
    scope of the quota adds its usage; masked to what the quota tracks."""
    hard = list((quota.get("spec") or {}).get("hard") or {})
    tracked = evaluator.matching(hard)
    if not tracked:
        return {}
    used: ResourceList = {name: Quantity(Fraction(0)) for name in tracked}
    selectors = scope_selectors(quota)
    for obj in objects:
        if all(evaluator.matches_scope(s, obj) for s in selectors):
            used = add(used, evaluator.usage(obj, now))
    return mask(used, tracked)
