"""The structured-parameters allocator, as ``k8s.io/dynamic-resource-allocation@v0.37.2/structured`` ("stable").

``Allocator(classes, slice_index, allocated).allocate(node, claims)`` looks for devices on ``node`` for every
request of every claim, one claim after the other, one request after the other, one device after the other: an
exhaustive depth-first search that backtracks and stops at the first full solution. A device is a candidate for a
request when it is not allocated to another claim (or already picked in this search), its pool is complete and
valid, the class's selectors and then the request's selectors (CEL) accept it, every shared counter it consumes
still has enough left in its pool (the pool's counters minus what allocated devices and the devices picked so far
consume), every ``NoSchedule``/``NoExecute`` taint it has (in its slice, or from a matching ``DeviceTaintRule``:
``taints``) is tolerated by the request (``taintPreventsAllocation``), and every ``matchAttribute`` constraint of
the claim that names the request (or names none) still holds. ``allocationMode: All`` takes every matching device
(all must be free; an incomplete or invalid pool makes it an error, as upstream).

Outcomes, as upstream: a list of allocation results (``{"devices": {"results": [...]}, "nodeSelector": ...}``),
``None`` when there is no solution on this node, ``FailedOnNode`` when there is none and some pool was invalid
("invalid resource pools were encountered"), and ``AllocationError`` for a claim that cannot be handled at all
(CEL compile or runtime error, unknown class, a constraint that ``All`` cannot meet) — the plugin turns the last
into an Error status.

Simplified: no prioritized lists (``firstAvailable``), admin access, binding
conditions, consumable capacity (``allowMultipleAllocations`` devices are still used by one claim) or device
configs in the result; the 32-device result limit is checked up front only. A selector's result on a device is
cached for as long as the slices are unchanged (upstream caches it for one ``Allocate`` call); the verdict is
the same, only cheaper, since cel-python evaluates an expression in about a quarter of a millisecond.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from mockgpu.sched.dra.pools import DeviceID, Pool, SliceIndex, counter_value
from mockgpu.sched.dra.taints import device_taints, prevents_allocation

ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize
INVALID_POOLS = "invalid resource pools were encountered"


class AllocationError(Exception):
    """The claims cannot be allocated anywhere until something (class, claim) changes; upstream's ``err``."""


class FailedOnNode(Exception):
    """Not on this node, for a reason worth telling (``ErrFailedAllocationOnNode``)."""


def claim_key(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def allocated_devices(claims: Iterable[Mapping[str, Any]]) -> set[DeviceID]:
    """Every device named in some claim's ``status.allocation``."""
    out: set[DeviceID] = set()
    for c in claims:
        alloc = (c.get("status") or {}).get("allocation") or {}
        for r in (alloc.get("devices") or {}).get("results") or []:
            out.add((r.get("driver", ""), r.get("pool", ""), r.get("device", "")))
    return out


def node_selector_for(node_name: str) -> dict[str, Any]:
    """The allocation's node selector for node-local devices, exactly as upstream's ``createNodeSelector``."""
    return {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}


def _node_selector(specs: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Upstream ``createNodeSelector``: a node-local device pins the claim to its node; otherwise the (single)
    terms of the slices' node selectors are merged; nothing to say means "available everywhere" (None)."""
    fields: list[dict[str, Any]] = []
    exprs: list[dict[str, Any]] = []
    for spec in specs:
        if spec.get("nodeName"):
            return node_selector_for(str(spec["nodeName"]))
        terms = (spec.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
        if len(terms) == 1:
            for req in terms[0].get("matchFields") or []:
                if req not in fields:
                    fields.append(req)
            for req in terms[0].get("matchExpressions") or []:
                if req not in exprs:
                    exprs.append(req)
    if not fields and not exprs:
        return None
    term: dict[str, list[dict[str, Any]]] = {}
    if exprs:
        term["matchExpressions"] = exprs
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


class _Request:
    __slots__ = ("all_devices", "class_", "claim_index", "name", "num", "selectors", "tolerations")

    def __init__(self, claim_index: int, name: str, class_: Mapping[str, Any], selectors: list[str], num: int,
                 tolerations: Sequence[Mapping[str, Any]] = ()) -> None:
        self.claim_index, self.name, self.class_, self.selectors, self.num = (
            claim_index, name, class_, selectors, num)
        self.tolerations = tolerations
        self.all_devices: list[tuple[Pool, dict[str, Any], dict[str, Any]]] | None = None


class _MatchAttribute:
    """All devices of the named requests (all requests when none are named) share one attribute value."""

    def __init__(self, attribute: str, requests: list[str]) -> None:
        self.attribute = attribute
        self.requests = set(requests)
        self.value: Any = None
        self.count = 0

    def _applies(self, request: str) -> bool:
        return not self.requests or request in self.requests

    def _lookup(self, driver: str, device: Mapping[str, Any]) -> Any:
        attrs = device.get("attributes") or {}
        if self.attribute in attrs:
            return attrs[self.attribute]
        domain, _, ident = self.attribute.partition("/")
        if ident and domain == driver and ident in attrs:
            return attrs[ident]
        return None

    def add(self, request: str, driver: str, device: Mapping[str, Any]) -> bool:
        if not self._applies(request):
            return True
        attr = self._lookup(driver, device)
        if attr is None:
            return False
        value = next(((k, v) for k, v in attr.items() if k in ("int", "bool", "string", "version")), None)
        if value is None:
            return False
        if self.count == 0:
            self.value = value
        elif value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: str) -> None:
        if self._applies(request):
            self.count -= 1


class Allocator:
    """One cycle's view: classes by name, the slices (indexed), the devices allocated to claims already, and the
    DeviceTaintRules whose taints devices get on top of their slices' (upstream's slice tracker patches them in)."""

    def __init__(self, classes: Mapping[str, Mapping[str, Any]], slices: SliceIndex,
                 allocated: set[DeviceID], taint_rules: Sequence[Mapping[str, Any]] = ()) -> None:
        self.classes = classes
        self.slices = slices
        self.allocated = allocated
        self.taint_rules = taint_rules
        # id(device) → (device, CEL activation)
        self._activations: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._available: dict[str, dict[str, dict[str, Fraction]]] = {}

    # ---- public ----------------------------------------------------------------------------------------------

    def allocate(self, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
        """Allocation results for ``claims`` on ``node`` (same order), or None; see the module docstring."""
        return _Run(self, node, claims).run()

    # ---- shared between runs ---------------------------------------------------------------------------------

    def activation(self, driver: str, device: dict[str, Any]) -> dict[str, Any]:
        from mockgpu.sched.dra import cel  # celpy (~0.2 s to import and build its parser) only once DRA is used

        hit = self._activations.get(id(device))
        if hit is None or hit[0] is not device:
            hit = self._activations[id(device)] = (device, cel.device_activation(driver, device))
        return hit[1]

    def available_counters(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        """The pool's counters minus what devices allocated to other claims consume (may go negative)."""
        hit = self._available.get(pool.id)
        if hit is not None:
            return hit
        avail = {cs: dict(counters) for cs, counters in pool.counter_sets.items()}
        for s in pool.all_slices:
            for d in (s.get("spec") or {}).get("devices") or []:
                if (pool.driver, pool.name, d.get("name", "")) not in self.allocated:
                    continue
                for use in d.get("consumesCounters") or []:
                    counters = avail.get(use.get("counterSet"))
                    if counters is None:
                        continue
                    for c, v in (use.get("counters") or {}).items():
                        if c in counters:
                            counters[c] -= counter_value(v)
        self._available[pool.id] = avail
        return avail


class _Run:
    """One ``allocate`` call: the search state."""

    def __init__(self, alloc: Allocator, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> None:
        self.a = alloc
        self.node = node
        self.node_name = (node.get("metadata") or {}).get("name", "")
        self.claims = claims
        self.pools = alloc.slices.pools_for(node)
        self.picking: set[DeviceID] = set()
        self.consumed: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.results: list[list[dict[str, Any]]] = [[] for _ in claims]
        self.local: list[list[Mapping[str, Any]]] = [[] for _ in claims]  # per result: its slice's spec
        self.matches: dict[tuple[int, str, DeviceID], bool] = {}
        self.requests: list[list[_Request]] = []
        self.constraints: list[list[_MatchAttribute]] = []

    def run(self) -> list[dict[str, Any]] | None:
        for i, claim in enumerate(self.claims):
            self.requests.append(self._requests(i, claim))
            self.constraints.append(self._constraints(claim))
        if not self._one(0, 0, 0):
            if any(p.invalid for p in self.pools):
                raise FailedOnNode(INVALID_POOLS)
            return None
        out = []
        for results, local in zip(self.results, self.local, strict=True):
            allocation: dict[str, Any] = {"devices": {"results": results}}
            selector = _node_selector(local)
            if selector is not None:
                allocation["nodeSelector"] = selector
            out.append(allocation)
        return out

    # ---- validation ------------------------------------------------------------------------------------------

    def _requests(self, index: int, claim: Mapping[str, Any]) -> list[_Request]:
        key = claim_key(claim)
        out: list[_Request] = []
        total = 0
        for raw in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            name = raw.get("name", "")
            exactly = raw.get("exactly")
            if exactly is None:
                if raw.get("firstAvailable"):
                    raise AllocationError(f"claim {key}, request {name}: has subrequests, but the "
                                          f"DRAPrioritizedList feature is not modelled by mockgpu")
                raise AllocationError(f"claim {key}, request {name}: missing device class name "
                                      f"(unsupported request type?)")
            selectors = []
            for i, sel in enumerate(exactly.get("selectors") or []):
                expr = (sel.get("cel") or {}).get("expression")
                if not expr:
                    raise AllocationError(f"claim {key}, request {name}, selector #{i}: CEL expression empty "
                                          f"(unsupported selector type?)")
                selectors.append(expr)
            if exactly.get("adminAccess"):
                raise AllocationError(f"claim {key}, request {name}: admin access is requested, but the feature "
                                      f"is disabled")
            class_name = exactly.get("deviceClassName") or ""
            if not class_name:
                raise AllocationError(f"claim {key}, request {name}: missing device class name "
                                      f"(unsupported request type?)")
            class_ = self.a.classes.get(class_name)
            if class_ is None:
                raise AllocationError(f"claim {key}, request {name}: could not retrieve device class "
                                      f'{class_name}: deviceclass.resource.k8s.io "{class_name}" not found')
            mode = exactly.get("allocationMode") or "ExactCount"
            req = _Request(index, name, class_, selectors, 0, list(exactly.get("tolerations") or []))
            if mode == "ExactCount":
                req.num = int(exactly.get("count") or 1)
            elif mode == "All":
                req.all_devices = []
                for pool in self.pools:
                    if pool.incomplete:
                        raise AllocationError(f"claim {key}, request {name}: asks for all devices, but resource "
                                              f"pool {pool.id} is currently being updated")
                    if pool.invalid:
                        raise AllocationError(f"claim {key}, request {name}: asks for all devices, but resource "
                                              f"pool {pool.id} is currently invalid")
                    for s in pool.device_slices:
                        for d in (s.get("spec") or {}).get("devices") or []:
                            if self._selectable(req, pool, d):
                                req.all_devices.append((pool, s, d))
                req.num = len(req.all_devices)
            else:
                raise AllocationError(f"claim {key}, request {name}: unsupported count mode {mode}")
            if req.num > ALLOCATION_RESULTS_MAX_SIZE - total:
                raise AllocationError(f"claim {key}, request {name}: adding {req.num} devices exceeds the claim "
                                      f"limit of {ALLOCATION_RESULTS_MAX_SIZE}, with {total} already accounted for")
            total += req.num
            out.append(req)
        return out

    def _constraints(self, claim: Mapping[str, Any]) -> list[_MatchAttribute]:
        out = []
        for i, raw in enumerate(((claim.get("spec") or {}).get("devices") or {}).get("constraints") or []):
            attr = raw.get("matchAttribute")
            if not attr:
                raise AllocationError(f"claim {claim_key(claim)}, constraint #{i}: empty constraint "
                                      f"(unsupported constraint type?)")
            out.append(_MatchAttribute(str(attr), list(raw.get("requests") or [])))
        return out

    # ---- matching --------------------------------------------------------------------------------------------

    def _selectable(self, req: _Request, pool: Pool, device: dict[str, Any]) -> bool:
        dev_id = (pool.driver, pool.name, device.get("name", ""))
        key = (req.claim_index, req.name, dev_id)
        hit = self.matches.get(key)
        if hit is not None:
            return hit
        ok = (self._selectors_match(req, pool, device, dev_id, class_=True)
              and self._selectors_match(req, pool, device, dev_id, class_=False))
        self.matches[key] = ok
        return ok

    def _selectors_match(self, req: _Request, pool: Pool, device: dict[str, Any], dev_id: DeviceID, *,
                         class_: bool) -> bool:
        if class_:
            exprs = [(s.get("cel") or {}).get("expression", "") for s in (req.class_.get("spec") or {}).get(
                "selectors") or []]
            where = f"class {(req.class_.get('metadata') or {}).get('name', '')}"
        else:
            exprs = req.selectors
            where = f"claim {claim_key(self.claims[req.claim_index])}"
        device_name = "/".join(dev_id)
        from mockgpu.sched.dra import cel  # see Allocator.activation

        cache = self.a.slices.cel_results
        for i, expr in enumerate(exprs):
            key = (expr, id(device))
            hit = cache.get(key)
            if hit is None or hit[0] is not device:
                try:
                    cel.compile_expression(expr)
                except cel.CelCompileError as exc:
                    raise AllocationError(f"{where}: selector #{i}: CEL compile error: {exc}") from None
                try:
                    hit = (device, cel.device_matches(expr, self.a.activation(pool.driver, device)), "")
                except cel.CelRuntimeError as exc:
                    hit = (device, False, str(exc))
                cache[key] = hit
            if hit[2]:
                raise AllocationError(f"{where}: selector #{i} on device {device_name}: CEL runtime error: "
                                      f"{hit[2]}")
            if not hit[1]:
                return False
        return True

    # ---- the search ------------------------------------------------------------------------------------------

    def _one(self, ci: int, ri: int, di: int) -> bool:
        if ci >= len(self.claims):
            return True
        reqs = self.requests[ci]
        if ri >= len(reqs):
            return self._one(ci + 1, 0, 0)
        req = reqs[ri]
        if req.all_devices is not None and not req.all_devices:
            return False  # "All" needs at least one device
        if di >= req.num:
            return self._one(ci, ri + 1, 0)
        if req.all_devices is not None:
            pool, s, device = req.all_devices[di]
            undo = self._take(req, pool, s, device, must=True)
            if undo is None:
                return False
            if self._one(ci, ri, di + 1):
                return True
            undo()
            return False
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for s in pool.device_slices:
                for device in (s.get("spec") or {}).get("devices") or []:
                    dev_id = (pool.driver, pool.name, device.get("name", ""))
                    if dev_id in self.a.allocated or dev_id in self.picking:
                        continue
                    if not self._selectable(req, pool, device):
                        continue
                    undo = self._take(req, pool, s, device, must=False)
                    if undo is None:
                        continue
                    if self._one(ci, ri, di + 1):
                        return True
                    undo()
        return False

    def _take(self, req: _Request, pool: Pool, s: Mapping[str, Any], device: dict[str, Any], *, must: bool):  # type: ignore[no-untyped-def]
        """Mark ``device`` picked for ``req``; returns the undo function, or None when it cannot be used."""
        dev_id = (pool.driver, pool.name, device.get("name", ""))
        if dev_id in self.a.allocated or dev_id in self.picking:
            return None
        if prevents_allocation(device_taints(pool.driver, pool.name, device, self.a.taint_rules), req.tolerations):
            return None  # upstream: not selectable for this request, no error (also under allocationMode: All)
        uses = device.get("consumesCounters") or []
        if uses and not self._reserve_counters(pool, uses):
            return None
        added: list[_MatchAttribute] = []
        for c in self.constraints[req.claim_index]:
            if not c.add(req.name, pool.driver, device):
                for done in reversed(added):
                    done.remove(req.name)
                if uses:
                    self._release_counters(pool, uses)
                if must:
                    raise AllocationError(f"claim {claim_key(self.claims[req.claim_index])}, request {req.name}: "
                                          f"cannot add device {'/'.join(dev_id)} because a claim constraint "
                                          f"would not be satisfied")
                return None
            added.append(c)
        self.picking.add(dev_id)
        results = self.results[req.claim_index]
        result: dict[str, Any] = {"request": req.name, "driver": pool.driver, "pool": pool.name,
                                  "device": device.get("name", "")}
        if req.tolerations:  # the request's tolerations go with each result (the eviction controller reads them)
            result["tolerations"] = [dict(t) for t in req.tolerations]
        results.append(result)
        local = self.local[req.claim_index]
        local.append(s.get("spec") or {})

        def undo() -> None:
            results.pop()
            local.pop()
            self.picking.discard(dev_id)
            for done in reversed(added):
                done.remove(req.name)
            if uses:
                self._release_counters(pool, uses)
        return undo

    def _reserve_counters(self, pool: Pool, uses: list[dict[str, Any]]) -> bool:
        consumed = self.consumed.setdefault(pool.id, {})
        for use in uses:
            cs = consumed.setdefault(use.get("counterSet", ""), {})
            for c, v in (use.get("counters") or {}).items():
                cs[c] = cs.get(c, Fraction(0)) + counter_value(v)
        available = self.a.available_counters(pool)
        for cs_name, counters in available.items():
            used = consumed.get(cs_name, {})
            for c, left in counters.items():
                if left < used.get(c, 0):
                    self._release_counters(pool, uses)
                    return False
        return True

    def _release_counters(self, pool: Pool, uses: list[dict[str, Any]]) -> None:
        consumed = self.consumed[pool.id]
        for use in uses:
            cs = consumed[use.get("counterSet", "")]
            for c, v in (use.get("counters") or {}).items():
                cs[c] -= counter_value(v)
