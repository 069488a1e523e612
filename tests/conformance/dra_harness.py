"""Differential conformance for DRA: the same DeviceClasses, ResourceSlices and claims on both control planes.

The slices are the ones our driver publishes (``mockgpu.dra.slices.node_slices`` for a spec's nodes), created
through the API like the suite's plain Node objects (no kubelet, no driver process: pods are bound, never run).
Per pod: feasibility, the chosen node (or the feasible set), ``PodScheduled`` and ``FailedScheduling`` texts
(``conformance_harness.compare``). Per claim: the shape of ``status`` (keys of ``allocation``, its
``nodeSelector`` with the node's name abstracted, each result's fields, ``reservedFor``). Per side, on its own
allocations: the constraints hold (each device is of its request's class and passes the case's predicate,
counts, ``matchAttribute``), no device is allocated twice and no two allocated devices consume the same shared
counter (so MIG placements never overlap and a whole GPU never shares its card). Device names may differ
where upstream is free to choose; they are compared and a difference is reported as ``devices``.

Device taints (section "dra-taints"): a case may taint devices in the slices (``taints``: device name → taints),
create DeviceTaintRules before the pods (``rules``) and, once the pods are decided, one more rule
(``evict_rule``); then, per pod, whether it was evicted (gone, or terminating), its ``DisruptionTarget``
condition and its ``DeviceTaintManagerEviction`` events, and the rule's ``EvictionInProgress`` condition (status,
reason, message, observedGeneration) are compared, after both sides reached the case's expectation or 45 s.

Simplified: kube-scheduler does not log when its informer has seen a ResourceSlice; the runner waits until the
upstream API lists the case's slices and then 1 s (the embedded scheduler's store is checked directly).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance_harness import NS, Decision, EmbeddedSide, Side, UpstreamSide, compare, make_node, make_pod
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mockgpu.config.clusterspec import parse_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.dra.slices import DRIVER, node_slices

Device = dict[str, Any]
HOLD = "mockgpu.io/conformance-hold"  # keeps an evicted pod (terminating) readable until the case's cleanup
CLASS_TYPES = {"gpu.mockgpu.io": "gpu", "mig.gpu.mockgpu.io": "mig"}


def dra_spec(pools: list[dict[str, Any]]) -> Any:
    """A ClusterSpec (name ``conformance`` on both sides, so UUIDs agree) of DRA-managed pools."""
    for p in pools:
        p.setdefault("gpu", {}).setdefault("management", "dra")
    return parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec",
                       "metadata": {"name": "conformance"}, "spec": {"nodePools": pools}})


def claim(name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None,
          template: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"devices": {"requests": list(requests)}}
    if constraints:
        spec["devices"]["constraints"] = constraints
    if template:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": name, "namespace": NS}, "spec": {"spec": spec}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


def request(name: str, device_class: str = "gpu.mockgpu.io", *cel: str, **exactly: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": device_class, **exactly}
    if cel:
        body["selectors"] = [{"cel": {"expression": e}} for e in cel]
    return {"name": name, "exactly": body}


def dra_pod(name: str, **claims: dict[str, str]) -> dict[str, Any]:
    """A pod whose one container uses every pod claim: ``gpu={"resourceClaimTemplateName": "t"}``."""
    pod = make_pod(name, None, resourceClaims=[{"name": k, **v} for k, v in claims.items()])
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": k} for k in claims]}
    return pod


@dataclass
class DraCase:
    name: str
    pools: list[dict[str, Any]]
    objects: list[dict[str, Any]]  # ResourceClaims and ResourceClaimTemplates, created before the pods
    pods: list[dict[str, Any]]
    predicate: Callable[[str, Device], bool] | None = None  # (request, device) -> must hold for its devices
    expect: tuple[bool, ...] = (True,)  # per pod: scheduled (True) or Pending; both sides must agree with it
    settle: float = 30.0  # how long a pod may stay undecided (a pod the scheduler never tries: Pending)
    section: str = "dra"
    taints: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # device name -> its slice taints
    rules: list[dict[str, Any]] = field(default_factory=list)  # DeviceTaintRules made before the pods
    evict_rule: dict[str, Any] | None = None  # a DeviceTaintRule made once the pods are decided
    expect_evicted: tuple[bool, ...] = ()  # per pod, after evict_rule
    rule_reason: str = ""  # evict_rule's final EvictionInProgress reason (Completed, NotStarted, NoEffect)


@dataclass
class Allocation:
    """One side's outcome of a case: decisions per pod, claims per pod."""

    decisions: dict[str, Decision] = field(default_factory=dict)
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)  # claim name -> claim (as stored)
    pod_claims: dict[str, list[str]] = field(default_factory=dict)  # pod -> its claims' names


def decide(side: Side, name: str, timeout: float) -> Decision:
    """``Side.decide``, except that a pod left without a decision for ``timeout`` s is Pending, untried."""
    try:
        return side.decide(name, timeout)
    except AssertionError:
        pod = side.get_pod(name) or {}
        if (pod.get("spec") or {}).get("nodeName"):
            raise
        return Decision(node=None, condition=None, event=side._event(name), feasible=frozenset())


def _resource(side: Side) -> client.ResourceV1Api:
    return client.ResourceV1Api(side.api)


def _raw(side: Side, obj: Any) -> dict[str, Any]:
    return side.api.sanitize_for_serialization(obj)


def _claims_of(side: Side, pod: dict[str, Any]) -> list[str]:
    names = []
    statuses = {s.get("name"): s.get("resourceClaimName") for s in
                (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = pc.get("resourceClaimName") or statuses.get(pc["name"])
        if name:
            names.append(name)
    return names


def shape(c: dict[str, Any], node: str | None) -> dict[str, Any]:
    """What the comparison looks at in a claim's status: field names and the node, not device names."""
    st = c.get("status") or {}
    alloc = st.get("allocation") or {}
    out: dict[str, Any] = {"status": sorted(st), "allocation": sorted(alloc),
                           "finalizers": sorted((c.get("metadata") or {}).get("finalizers") or [])}
    if alloc:
        sel = json.dumps(alloc.get("nodeSelector"), sort_keys=True)
        out["nodeSelector"] = json.loads(sel.replace(json.dumps(node), '"<node>"')) if node else sel
        out["devices"] = sorted(alloc.get("devices") or {})
        out["results"] = sorted((tuple(sorted(r)), r.get("request"), r.get("driver"), r.get("pool") == node)
                                for r in (alloc.get("devices") or {}).get("results") or [])
    out["reservedFor"] = [(r.get("resource"), r.get("name"), sorted(r)) for r in st.get("reservedFor") or []]
    return out


def devices_of(c: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(request, pool, device) of a claim's allocation."""
    alloc = (c.get("status") or {}).get("allocation") or {}
    return sorted((r["request"], r["pool"], r["device"]) for r in (alloc.get("devices") or {}).get("results") or [])


def attr(d: Device, name: str) -> Any:
    value = (d.get("attributes") or {}).get(name)
    return None if value is None else next(iter(value.values()))


def violations(case: DraCase, alloc: Allocation, devices: dict[tuple[str, str], Device],
               counter_use: dict[tuple[str, str], list[tuple[str, str]]]) -> list[str]:
    """The constraints each allocation must satisfy on either side, whatever devices it chose."""
    out: list[str] = []
    taken: dict[tuple[str, str], str] = {}
    counters: dict[tuple[str, str, str], tuple[str, str]] = {}
    for cname, c in alloc.claims.items():
        spec = (c.get("spec") or {}).get("devices") or {}
        reqs = {r["name"]: r.get("exactly") or {} for r in spec.get("requests") or []}
        got = devices_of(c)
        for req, pool, dev in got:
            key = (pool, dev)
            d = devices.get(key)
            if d is None:
                out.append(f"{cname}: {pool}/{dev} is no device of the case's slices")
                continue
            if key in taken:
                out.append(f"{pool}/{dev} allocated twice ({taken[key]}, {cname})")
            taken[key] = cname
            want = CLASS_TYPES.get(reqs.get(req, {}).get("deviceClassName", ""))
            if want and attr(d, "type") != want:
                out.append(f"{cname}/{req}: {dev} is of type {attr(d, 'type')}, the class selects {want}")
            if case.predicate is not None and not case.predicate(req, d):
                out.append(f"{cname}/{req}: {dev} does not satisfy the request's selector")
            for counter_set, counter in counter_use.get(key, []):
                if counter.startswith("memory-slice-"):
                    k = (pool, counter_set, counter)
                    if k in counters and counters[k] != key:
                        out.append(f"{pool}/{counters[k][1]} and {dev} both consume {counter_set}/{counter}")
                    counters[k] = key
        if got:
            for req, body in reqs.items():
                n = sum(1 for r, _, _ in got if r == req)
                if body.get("allocationMode", "ExactCount") == "ExactCount" and n != int(body.get("count", 1)):
                    out.append(f"{cname}/{req}: {n} devices, asked for {body.get('count', 1)}")
                if body.get("allocationMode") == "All":
                    pools = {p for r, p, _ in got if r == req}
                    match = {k for k in devices if k[0] in pools
                             and attr(devices[k], "type") == CLASS_TYPES.get(body.get("deviceClassName", ""))}
                    if {(p, dv) for r, p, dv in got if r == req} != match:
                        out.append(f"{cname}/{req}: allocationMode All got {n} of {len(match)} devices")
            for con in spec.get("constraints") or []:
                name = con.get("matchAttribute", "").split("/")[-1]
                scope = set(con.get("requests") or reqs)
                values = {json.dumps(attr(devices[(p, dv)], name)) for r, p, dv in got
                          if r in scope and (p, dv) in devices}
                if len(values) != 1 or values == {"null"}:
                    out.append(f"{cname}: matchAttribute {con.get('matchAttribute')} violated: {sorted(values)}")
    return out


class DraRunner:
    def __init__(self, emb: EmbeddedSide, up: UpstreamSide) -> None:
        self.emb, self.up = emb, up
        self.last: dict[str, Allocation] = {}  # the last case's outcome per side
        self.last_eviction: dict[str, dict[str, Any]] = {}  # the last case's eviction outcome per side

    def run(self, case: DraCase) -> list[tuple[str, str]]:
        spec = dra_spec(case.pools)
        nodes = [n.name for n in spec.nodes()]
        slices = [s for n in nodes for s in node_slices(node_inventory(spec, n))]
        for s in slices:
            for d in s["spec"].get("devices") or []:
                if d["name"] in case.taints:
                    d["taints"] = case.taints[d["name"]]
        devices = {(s["spec"]["pool"]["name"], d["name"]): d for s in slices for d in s["spec"].get("devices") or []}
        counter_use = {(s["spec"]["pool"]["name"], d["name"]): [(cc["counterSet"], k) for cc in
                                                                 d.get("consumesCounters") or []
                                                                 for k in cc.get("counters") or {}]
                       for s in slices for d in s["spec"].get("devices") or []}
        pods = [p["metadata"]["name"] for p in case.pods]
        sides: tuple[Side, Side] = (self.emb, self.up)
        out: dict[str, Allocation] = {s.name: Allocation() for s in sides}
        diffs: list[tuple[str, str]] = []
        self.last = out
        try:
            for side in sides:
                side.create_nodes(make_node(n, {"cpu": "64", "memory": "512Gi"}) for n in nodes)
                for s in slices:
                    _resource(side).create_resource_slice(s)
                side.wait_seen(nodes, [])
            self._wait_slices([s["metadata"]["name"] for s in slices])
            if case.rules:
                for side in sides:
                    for r in case.rules:
                        _resource(side).create_device_taint_rule(r)
                self._wait_rules([r["metadata"]["name"] for r in case.rules])
            for side in sides:
                for obj in case.objects:
                    if obj["kind"] == "ResourceClaim":
                        _resource(side).create_namespaced_resource_claim(NS, obj)
                    else:
                        _resource(side).create_namespaced_resource_claim_template(NS, obj)
            for pod in case.pods:
                name = pod["metadata"]["name"]
                if case.evict_rule is not None:  # an evicted pod stays (terminating) to show its condition
                    pod = {**pod, "metadata": {**pod["metadata"], "finalizers": [HOLD]}}
                for side in sides:
                    side.core.create_namespaced_pod(NS, pod)
                u, e = decide(self.up, name, case.settle), decide(self.emb, name, case.settle)
                out["upstream"].decisions[name], out["embedded"].decisions[name] = u, e
                diffs += [(d.kind, f"{name}: {d.detail}") for d in compare(e, u)]
                for side, d in ((self.emb, e), (self.up, u)):
                    if d.node:
                        side.wait_seen([], [name])
            for side in sides:
                self._collect(side, case, out[side.name])
            diffs += self._compare(case, out, devices, counter_use)
            if case.evict_rule is not None:
                diffs += self._evict(case, pods)
        finally:
            for side in sides:
                self._cleanup(side, case, pods, [s["metadata"]["name"] for s in slices], nodes)
                for r in [*case.rules, *([case.evict_rule] if case.evict_rule else [])]:
                    try:
                        _resource(side).delete_device_taint_rule(r["metadata"]["name"])
                    except ApiException as exc:
                        if exc.status != 404:
                            raise
        return diffs

    def _wait_rules(self, names: list[str], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if set(names) <= set(self.emb.scheduler.dra.taint_rules):
                time.sleep(1.0)  # kube-scheduler's informer, as for slices
                return
            time.sleep(0.05)
        raise AssertionError(f"the embedded scheduler did not see DeviceTaintRules {names}")

    def _eviction(self, side: Side, case: DraCase, pods: list[str]) -> dict[str, Any]:
        """What a user sees of the eviction on one side: per pod (evicted, DisruptionTarget, eviction events),
        and the rule's EvictionInProgress condition."""
        assert case.evict_rule is not None
        out: dict[str, Any] = {}
        for name in pods:
            found = side.get_pod(name)
            pod = found or {}
            state = "gone" if found is None else \
                "terminating" if pod["metadata"].get("deletionTimestamp") else "present"
            conds = [(c.get("status"), c.get("reason"), c.get("message"))
                     for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "DisruptionTarget"]
            events = sorted({(e.type, e.reason, e.message, e.source.component) for e in side.core.list_namespaced_event(
                NS, field_selector=f"involvedObject.name={name}").items if e.reason == "DeviceTaintManagerEviction"})
            out[name] = (state, conds, events)
        rule = _raw(side, _resource(side).read_device_taint_rule(case.evict_rule["metadata"]["name"]))
        cond = next((c for c in (rule.get("status") or {}).get("conditions") or []
                     if c.get("type") == "EvictionInProgress"), {})
        out["rule"] = tuple(cond.get(k) for k in ("status", "reason", "message", "observedGeneration"))
        return out

    def _evict(self, case: DraCase, pods: list[str], timeout: float = 45.0) -> list[tuple[str, str]]:
        assert case.evict_rule is not None
        sides: tuple[Side, Side] = (self.emb, self.up)
        for side in sides:
            _resource(side).create_device_taint_rule(case.evict_rule)

        def done(seen: dict[str, Any]) -> bool:
            evicted = tuple(seen[p][0] != "present" for p in pods)
            return evicted == case.expect_evicted and seen["rule"][1] == case.rule_reason

        deadline = time.monotonic() + timeout
        seen: dict[str, dict[str, Any]] = {}
        while time.monotonic() < deadline:
            seen = {side.name: self._eviction(side, case, pods) for side in sides}
            if all(done(v) for v in seen.values()):
                break
            time.sleep(0.5)
        self.last_eviction = seen
        diffs: list[tuple[str, str]] = []
        emb, up = seen["embedded"], seen["upstream"]
        for key in [*pods, "rule"]:
            if emb[key] != up[key]:
                diffs.append(("eviction", f"{key}: embedded {emb[key]} != upstream {up[key]}"))
        for name, v in seen.items():
            if not done(v):
                diffs.append((f"expect:{name}", f"pods {tuple(v[p][0] for p in pods)}, rule {v['rule']}; the "
                                                f"case expects {case.expect_evicted}, {case.rule_reason}"))
        return diffs

    def _wait_slices(self, names: list[str], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            have_up = {s.metadata.name for s in _resource(self.up).list_resource_slice().items}
            if set(names) <= have_up and set(names) <= set(self.emb.scheduler.dra.slices):
                time.sleep(1.0)  # kube-scheduler's informer: not observable, see the module docstring
                return
            time.sleep(0.05)
        raise AssertionError(f"the schedulers did not see slices {names}")

    def _collect(self, side: Side, case: DraCase, alloc: Allocation) -> None:
        res = _resource(side)
        for pod in case.pods:
            name = pod["metadata"]["name"]
            stored = side.get_pod(name) or {}
            if pod["spec"].get("resourceClaims") and any("resourceClaimTemplateName" in pc
                                                         for pc in pod["spec"]["resourceClaims"]):
                deadline = time.monotonic() + 10  # the claim controller writes resourceClaimStatuses
                while not (stored.get("status") or {}).get("resourceClaimStatuses") and time.monotonic() < deadline:
                    time.sleep(0.05)
                    stored = side.get_pod(name) or {}
            alloc.pod_claims[name] = _claims_of(side, stored)
            for cname in alloc.pod_claims[name]:
                try:
                    alloc.claims[cname] = _raw(side, res.read_namespaced_resource_claim(cname, NS))
                except ApiException as exc:
                    if exc.status != 404:
                        raise

    def _compare(self, case: DraCase, out: dict[str, Allocation], devices: dict, counter_use: dict
                 ) -> list[tuple[str, str]]:
        emb, up = out["embedded"], out["upstream"]
        diffs: list[tuple[str, str]] = []
        for pod, up_claims in up.pod_claims.items():
            emb_claims = emb.pod_claims.get(pod, [])
            if len(up_claims) != len(emb_claims):
                diffs.append(("claims", f"{pod}: embedded {emb_claims} != upstream {up_claims}"))
                continue
            for uc, ec in zip(up_claims, emb_claims, strict=True):
                u, e = up.claims.get(uc), emb.claims.get(ec)
                if (u is None) != (e is None):
                    diffs.append(("claims", f"{pod}: claim {uc} upstream {u is not None}, embedded {e is not None}"))
                    continue
                if u is None or e is None:
                    continue
                su = shape(u, up.decisions[pod].node)
                se = shape(e, emb.decisions[pod].node)
                if su != se:
                    diffs.append(("allocation", f"{pod}/{uc}: embedded {se} != upstream {su}"))
                if [d[0::2] for d in devices_of(u)] != [d[0::2] for d in devices_of(e)]:
                    diffs.append(("devices", f"{pod}/{uc}: embedded {devices_of(e)} != upstream {devices_of(u)}"))
        for name, alloc in out.items():
            for v in violations(case, alloc, devices, counter_use):
                diffs.append((f"constraint:{name}", v))
        return diffs

    def _cleanup(self, side: Side, case: DraCase, pods: list[str], slices: list[str], nodes: list[str]) -> None:
        res = _resource(side)
        if case.evict_rule is not None:
            for name in pods:
                try:
                    side.core.patch_namespaced_pod(name, NS, {"metadata": {"finalizers": None}})
                except ApiException as exc:
                    if exc.status != 404:
                        raise
        side.delete_pods(pods)
        side.wait_deleted(pods, [])
        for obj in case.objects:
            try:
                if obj["kind"] == "ResourceClaim":
                    res.delete_namespaced_resource_claim(obj["metadata"]["name"], NS)
                else:
                    res.delete_namespaced_resource_claim_template(obj["metadata"]["name"], NS)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        deadline = time.monotonic() + 30  # the claim controller deallocates and drops the delete-protection
        left: list[str] = []
        while time.monotonic() < deadline:
            left = [c.metadata.name for c in res.list_namespaced_resource_claim(NS).items]
            if not left:
                break
            time.sleep(0.1)
        for s in slices:
            try:
                res.delete_resource_slice(s)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        side.delete_nodes(nodes)
        side.wait_deleted([], nodes)
        assert not left, f"{side.name}: claims {left} not removed after their pods and their deletion"


__all__ = ["DRIVER", "DraCase", "DraRunner", "claim", "dra_pod", "request"]
