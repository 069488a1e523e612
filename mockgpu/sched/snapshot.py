"""Node and pod snapshots the plugins read: what a node offers and what its pods request.

Pod requests follow upstream's ``PodRequests`` (k8s.io/component-helpers/resource): the sum of the app
containers plus restartable init containers (sidecars), maxed per resource against every init container's
need (its own request plus the sidecars declared before it), pod-level ``spec.resources.requests``
replacing the container aggregate for cpu/memory/hugepages, then ``spec.overhead`` added. Units are
integers: cpu in millicores (``MilliValue``), everything else ``Value()`` (bytes, counts).

Simplified: in-place resize status (``status.containerStatuses[].allocatedResources``) is ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mockgpu.apimachinery.names import is_extended_resource_name
from mockgpu.apimachinery.quantity import int_value, milli_value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
DEFAULT_MILLI_CPU_REQUEST = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest (200Mi)
_NON_ZERO_DEFAULTS = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}


def resource_value(name: str, quantity: str | int | float) -> int:
    """A quantity in the scheduler's integer unit for that resource (millicores for cpu)."""
    if isinstance(quantity, str):
        return _resource_value_text(name == CPU, quantity)
    return milli_value(quantity) if name == CPU else int_value(quantity)


@lru_cache(maxsize=4096)
def _resource_value_text(milli: bool, quantity: str) -> int:
    # The same few quantity strings ("1", "32", "256Gi") are parsed for every node of every cycle.
    return milli_value(quantity) if milli else int_value(quantity)


# Upstream computes the incoming pod's requests once, in PreFilter, into the CycleState; plugins read
# them from there. ``cycle_cache`` is that state: inside it, each pod object's requests are computed once.
_CYCLE: ContextVar[dict[tuple[int, bool, bool], tuple[Mapping[str, Any], dict[str, int]]] | None] = ContextVar(
    "mockgpu_sched_cycle", default=None)


@contextmanager
def cycle_cache() -> Iterator[None]:
    """Memoize ``pod_requests`` for the duration of one scheduling cycle (pods must not change inside it)."""
    token = _CYCLE.set({})
    try:
        yield
    finally:
        _CYCLE.reset(token)


def resource_list(raw: Mapping[str, object] | None) -> dict[str, int]:
    """``{name: quantity}`` from the API → ``{name: int}``; keys are kept even when the value is 0."""
    return {str(k): resource_value(str(k), v) for k, v in (raw or {}).items()}  # type: ignore[arg-type]


def is_scalar_resource_name(name: str) -> bool:
    """Upstream's ``IsScalarResourceName``: extended, hugepages-*, prefixed native, attachable volumes."""
    return (is_extended_resource_name(name) or "kubernetes.io/" in name
            or name.startswith(("hugepages-", "attachable-volumes-")))


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def _container_requests(container: Mapping[str, Any], defaults: Mapping[str, int]) -> dict[str, int]:
    reqs = resource_list((container.get("resources") or {}).get("requests"))
    for name, default in defaults.items():
        reqs.setdefault(name, default)  # only a *missing* key gets the default; an explicit 0 stays 0
    return reqs


def pod_requests(pod: Mapping[str, Any], *, non_zero: bool = False, pod_level: bool = True) -> dict[str, int]:
    """The pod's effective request per resource, as upstream ``PodRequests``.

    ``non_zero=True`` is the scoring variant (``NonMissingContainerRequests``): every container that does
    not set cpu/memory counts 100m / 200Mi. A pod with no containers gets no default. ``pod_level=False``
    ignores ``spec.resources`` (upstream ``SkipPodLevelResources``), as v1.37.2's NodeResourcesFit *scoring*
    does for the incoming pod: its scorer is built without the PodLevelResources feature flag.
    """
    cache = _CYCLE.get()
    key = (id(pod), non_zero, pod_level)
    if cache is None:
        return _pod_requests(pod, non_zero, pod_level)
    hit = cache.get(key)
    if hit is None or hit[0] is not pod:  # the cached pod object is held, so its id cannot be reused
        hit = cache[key] = (pod, _pod_requests(pod, non_zero, pod_level))
    return dict(hit[1])


def _pod_requests(pod: Mapping[str, Any], non_zero: bool, pod_level: bool = True) -> dict[str, int]:
    return _requests_with_defaults(pod, _NON_ZERO_DEFAULTS if non_zero else {}, pod_level)


def _is_pod_level_requests_set(pod: Mapping[str, Any]) -> bool:
    """Upstream ``IsPodLevelRequestsSet``: ``spec.resources.requests`` names cpu, memory or a hugepages size."""
    reqs = ((pod.get("spec") or {}).get("resources") or {}).get("requests") or {}
    return any(k in (CPU, MEMORY) or str(k).startswith("hugepages-") for k in reqs)


def node_non_zero_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """cpu and memory a pod adds to its node's *non-zero* sums, as upstream ``PodInfo.CalculateResource``.

    Without pod-level requests: every container missing cpu/memory counts 100m/200Mi. With pod-level requests
    (``getNonMissingContainerRequests``): only a resource missing from the pod's effective requests gets the
    per-container default, so a container without memory next to one with memory adds nothing.
    """
    if not _is_pod_level_requests_set(pod):
        nz = pod_requests(pod, non_zero=True)
    else:
        reqs = pod_requests(pod)
        defaults = {k: v for k, v in _NON_ZERO_DEFAULTS.items() if k not in reqs}
        nz = _requests_with_defaults(pod, defaults) if defaults else reqs
    return {k: nz.get(k, 0) for k in (CPU, MEMORY)}


def _requests_with_defaults(pod: Mapping[str, Any], defaults: Mapping[str, int],
                            pod_level: bool = True) -> dict[str, int]:
    spec = pod.get("spec") or {}
    reqs: dict[str, int] = {}
    for c in spec.get("containers") or []:
        _add(reqs, _container_requests(c, defaults))
    sidecars: dict[str, int] = {}
    init_need: dict[str, int] = {}
    for c in spec.get("initContainers") or []:
        creq = _container_requests(c, defaults)
        if c.get("restartPolicy") == "Always":
            _add(reqs, creq)
            _add(sidecars, creq)
            need = dict(sidecars)
        else:
            need = dict(creq)
            _add(need, sidecars)
        _max(init_need, need)
    _max(reqs, init_need)
    if pod_level:
        for name, value in resource_list((spec.get("resources") or {}).get("requests")).items():
            if name in (CPU, MEMORY) or name.startswith("hugepages-"):
                reqs[name] = value
    _add(reqs, resource_list(spec.get("overhead")))
    return reqs


def pod_key(pod: Mapping[str, Any]) -> str:
    """``namespace/name`` (namespace defaults to ``default``)."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def pod_priority(pod: Mapping[str, Any]) -> int:
    """``spec.priority`` (set by admission from the PriorityClass); 0 when absent."""
    return int((pod.get("spec") or {}).get("priority") or 0)


@dataclass
class NodeInfo:
    """One node and the pods assigned (or assumed) to it, as the scheduler's cache holds it.

    ``requested`` sums real requests (Filter, BalancedAllocation); ``non_zero_requested`` holds cpu and
    memory with the per-container defaults (NodeResourcesFit scoring). Build with ``from_node``; place a
    pod with ``add_pod`` (mutates) or ``with_pod`` (copy), e.g. for sequential placement in a simulation.
    """

    node: dict[str, Any]
    allocatable: dict[str, int]
    pods: list[dict[str, Any]] = field(default_factory=list)
    requested: dict[str, int] = field(default_factory=dict)
    non_zero_requested: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_node(cls, node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]] = ()) -> NodeInfo:
        status = node.get("status") or {}
        info = cls(node=dict(node), allocatable=resource_list(status.get("allocatable")))
        for p in pods:
            info.add_pod(p)
        return info

    @property
    def name(self) -> str:
        return str((self.node.get("metadata") or {}).get("name", ""))

    @property
    def labels(self) -> dict[str, str]:
        return dict((self.node.get("metadata") or {}).get("labels") or {})

    @property
    def taints(self) -> list[dict[str, Any]]:
        return list((self.node.get("spec") or {}).get("taints") or [])

    @property
    def unschedulable(self) -> bool:
        return bool((self.node.get("spec") or {}).get("unschedulable"))

    @property
    def pod_count(self) -> int:
        return len(self.pods)

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        self.pods.append(dict(pod))
        _add(self.requested, pod_requests(pod))
        _add(self.non_zero_requested, node_non_zero_requests(pod))

    def remove_pod(self, key: str) -> None:
        """Drop the pod ``namespace/name`` and recompute the sums (used by the preemption dry run)."""
        remaining = [p for p in self.pods if pod_key(p) != key]
        self.pods, self.requested, self.non_zero_requested = [], {}, {}
        for p in remaining:
            self.add_pod(p)

    def with_pod(self, pod: Mapping[str, Any]) -> NodeInfo:
        clone = self.clone()
        clone.add_pod(pod)
        return clone

    def clone(self) -> NodeInfo:
        return NodeInfo(node=self.node, allocatable=dict(self.allocatable), pods=list(self.pods),
                        requested=dict(self.requested), non_zero_requested=dict(self.non_zero_requested))
