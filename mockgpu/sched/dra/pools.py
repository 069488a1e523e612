"""Resource pools visible from one node, as upstream ``GatherPools`` (structured/internal/stable/pools_stable.go).

Slices of a pool with an older ``pool.generation`` than the newest seen are outdated and ignored. A pool is
complete when it has ``pool.resourceSliceCount`` slices of its newest generation; an incomplete pool gives no
devices (and makes ``allocationMode: All`` fail). Slices with ``sharedCounters`` always belong to their pool,
whatever node they name. A pool whose device names repeat, whose counter set names repeat, or whose devices
consume a counter (set) that the pool does not define is invalid. With PartitionableDevices on (beta, default in
v1.37) counters are honoured.

Simplified: ``spec.nodeSelector`` slices are matched with the scheduler's node-selector code; per-device node
selection (``perDeviceNodeSelection``) and binding conditions are not modelled (such devices are ignored as
upstream's disabled-feature paths do); device taints are the allocator's (``taints``). Pools are visited sorted
by (driver, pool) and slices by name (upstream: Go map and lister order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from mockgpu.apimachinery.quantity import QuantityError, parse_quantity
from mockgpu.sched.nodeselector import selector_matches

DeviceID = tuple[str, str, str]  # (driver, pool, device)


@dataclass
class Pool:
    """One pool as the allocator sees it from one node."""

    driver: str
    name: str
    device_slices: list[dict[str, Any]] = field(default_factory=list)  # slices with devices for this node
    # every current slice (counters of devices elsewhere)
    all_slices: list[dict[str, Any]] = field(default_factory=list)
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    incomplete: bool = False
    invalid: str = ""

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


def _spec(s: Mapping[str, Any]) -> Mapping[str, Any]:
    return s.get("spec") or {}


def _pool_of(s: Mapping[str, Any]) -> Mapping[str, Any]:
    return _spec(s).get("pool") or {}


def _generation(s: Mapping[str, Any]) -> int:
    return int(_pool_of(s).get("generation") or 0)


def counter_value(raw: Any) -> Fraction:
    """A ``Counter`` (``{"value": "1"}``) as an exact number (0 if unparsable: validation prevents that)."""
    return _quantity(str((raw or {}).get("value", "0")))


@lru_cache(maxsize=1024)
def _quantity(text: str) -> Fraction:
    try:
        return parse_quantity(text)
    except QuantityError:
        return Fraction(0)


def slice_targets(s: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Does this slice's node selection include ``node``?"""
    spec = _spec(s)
    name = (node.get("metadata") or {}).get("name", "")
    if spec.get("nodeName"):
        return bool(spec["nodeName"] == name)
    if spec.get("allNodes"):
        return True
    sel = spec.get("nodeSelector")
    if sel is not None:
        labels = (node.get("metadata") or {}).get("labels") or {}
        return selector_matches(sel.get("nodeSelectorTerms") or [], labels, name)
    return False


class SliceIndex:
    """All slices grouped by pool, newest generation only; built once per scheduling cycle."""

    def __init__(self, slices: Iterable[Mapping[str, Any]]) -> None:
        by_pool: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for s in slices:
            key = (str(_spec(s).get("driver") or ""), str(_pool_of(s).get("name") or ""))
            current = by_pool.get(key)
            if current is None or _generation(s) > _generation(current[0]):
                by_pool[key] = [dict(s)]
            elif _generation(s) == _generation(current[0]):
                current.append(dict(s))
        self.pools = {k: sorted(v, key=lambda s: (s.get("metadata") or {}).get("name", ""))
                      for k, v in sorted(by_pool.items())}
        # Pools whose device slices all name one node are only looked at for that node.
        self._by_node: dict[str, list[tuple[str, str]]] = {}
        self._anywhere: list[tuple[str, str]] = []
        for k, v in self.pools.items():
            names = {_spec(s).get("nodeName") for s in v if not _spec(s).get("sharedCounters")}
            if len(names) == 1 and next(iter(names)):
                self._by_node.setdefault(str(next(iter(names))), []).append(k)
            else:
                self._anywhere.append(k)
        self._cache: dict[tuple[str, str, str], Pool] = {}
        # (expression, id(device)) → (device, matched, runtime error): a selector's verdict on a device is a pure
        # function of the two, so it is kept as long as these slices are (upstream: for one Allocate call).
        self.cel_results: dict[tuple[str, int], tuple[dict[str, Any], bool, str]] = {}

    def pools_for(self, node: Mapping[str, Any]) -> list[Pool]:
        """The pools with devices for ``node`` (upstream skips pools none of whose device slices target it)."""
        out = []
        node_name = (node.get("metadata") or {}).get("name", "")
        keys = self._by_node.get(node_name, [])
        if self._anywhere:
            keys = sorted([*keys, *self._anywhere])
        for driver, name in keys:
            slices = self.pools[(driver, name)]
            targeting = [s for s in slices if not _spec(s).get("sharedCounters") and slice_targets(s, node)]
            if not targeting:
                continue
            key = (driver, name, "|".join((s.get("metadata") or {}).get("name", "") for s in targeting))
            pool = self._cache.get(key)
            if pool is None:
                pool = self._cache[key] = _build(driver, name, slices, targeting)
            out.append(pool)
        return out


def _build(driver: str, name: str, slices: list[dict[str, Any]], targeting: list[dict[str, Any]]) -> Pool:
    pool = Pool(driver, name, device_slices=targeting, all_slices=slices)
    if len(slices) != int(_pool_of(slices[0]).get("resourceSliceCount") or 0):
        pool.incomplete = True
        return pool
    seen: set[str] = set()
    for s in slices:
        for d in _spec(s).get("devices") or []:
            if d.get("name") in seen:
                pool.invalid = f"duplicate device name {d.get('name')}"
                return pool
            seen.add(d.get("name"))
    for s in slices:
        for cs in _spec(s).get("sharedCounters") or []:
            if cs.get("name") in pool.counter_sets:
                pool.invalid = f"duplicate counter set name {cs.get('name')}"
                return pool
            pool.counter_sets[cs.get("name")] = {str(k): counter_value(v)
                                                 for k, v in (cs.get("counters") or {}).items()}
    for s in slices:
        for d in _spec(s).get("devices") or []:
            for use in d.get("consumesCounters") or []:
                counters = pool.counter_sets.get(use.get("counterSet"))
                if counters is None:
                    pool.invalid = f"counter set {use.get('counterSet')} not found"
                    return pool
                for c in use.get("counters") or {}:
                    if c not in counters:
                        pool.invalid = f"counter {c} not found in counter set {use.get('counterSet')}"
                        return pool
    return pool
