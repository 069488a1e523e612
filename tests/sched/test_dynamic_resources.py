"""DynamicResources through ``schedule_one``: one row per case, as the upstream plugin's and allocator's tables.

Each row gives the nodes (model, GPU count, NVLink islands), the claims that exist (some already allocated), the
pod's claims, and expects either the chosen node with the devices allocated per claim, or the FailedScheduling
message (and a node's filter reason), or the cycle's error.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

import pytest

from mockgpu.sched.config import default_config
from mockgpu.sched.cycle import ANNOTATION_DRA_ALLOCATION, ANNOTATION_FILTER, annotations, schedule_one
from mockgpu.sched.dra.snapshot import DraSnapshot
from mockgpu.sched.plugins.dynamic_resources import DynamicResources
from tests.sched.dra_builders import CLASSES, MIG_CLASS, claim, claim_pod, node_slices, request
from tests.sched.sched_builders import infos, node, req_pod

NOT_HELPFUL = "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
CANNOT = "0/{n} nodes are available: {n} cannot allocate all claims. " + NOT_HELPFUL
PROFILE = 'device.attributes["gpu.mockgpu.io"].profile == "{}"'
MEM_40 = 'device.capacity["gpu.mockgpu.io"].memory.compareTo(quantity("40Gi")) >= 0'
HINT = (". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for "
        "optional fields")


@dataclass
class Case:
    name: str
    nodes: list[tuple]  # (node, model, gpus, islands | None)
    pod_claims: list[dict]  # claims the pod references (created)
    other_claims: list[dict] = field(default_factory=list)  # existing claims of other pods (maybe allocated)
    missing: list[str] = field(default_factory=list)  # claim names the pod references that do not exist
    want_node: str | None = None
    want_devices: dict[str, list[tuple[str, str]]] | None = None  # claim → [(request, device)]
    want_message: str | None = None
    want_reason: tuple[str, str] | None = None  # (node, DynamicResources filter reason)
    want_error: str | None = None
    check: object = None  # extra check on the allocation: callable(devices) -> bool
    taints: dict[tuple[str, str], list[dict]] = field(default_factory=dict)  # (node, device) → its slice's taints
    rules: list[dict] = field(default_factory=list)  # DeviceTaintRules


def _no_overlap(devices: list[tuple[str, str]]) -> bool:
    taken: set[int] = set()
    for _, dev in devices:
        start, size = int(dev.rsplit("-", 1)[1]), 4 if "3g40gb" in dev else 1
        span = set(range(start, start + size))
        if taken & span:
            return False
        taken |= span
    return len(devices) == 2


A100 = "A100-SXM4-80GB"
XID = "gpu.mockgpu.io/xid"


def taint(effect: str, value: str = "79") -> dict:
    return {"key": XID, "value": value, "effect": effect, "timeAdded": "2026-01-01T00:00:00Z"}


def rule(effect: str, **selector: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
            "spec": {"deviceSelector": selector, "taint": taint(effect)}}


CASES = [
    Case("one whole GPU", [("n1", A100, 2, None)], [claim("c", request("gpu"))],
         want_node="n1", want_devices={"c": [("gpu", "gpu-0")]}),
    Case("GPU with >= 40Gi via CEL: only the A100 node", [("l4", "L4", 2, None), ("a100", A100, 1, None)],
         [claim("c", request("gpu", selectors=[MEM_40]))],
         want_node="a100", want_devices={"c": [("gpu", "gpu-0")]}, want_reason=("l4", "cannot allocate all claims")),
    Case("two GPUs on one NVLink island: only the node whose two GPUs share one",
         [("split", A100, 2, [0, 1]), ("paired", A100, 3, [0, 1, 1])],
         [claim("c", request("gpus", count=2), constraints=[{"matchAttribute": "gpu.mockgpu.io/nvlinkIsland"}])],
         want_node="paired", want_devices={"c": [("gpus", "gpu-1"), ("gpus", "gpu-2")]},
         want_reason=("split", "cannot allocate all claims")),
    Case("matchAttribute without the attribute: no device qualifies", [("n1", "L4", 2, None)],
         [claim("c", request("gpus", count=2), constraints=[{"matchAttribute": "gpu.mockgpu.io/nvlinkIsland"}])],
         want_message=CANNOT.format(n=1)),
    Case("MIG 1g.10gb + 3g.40gb on one A100: non-overlapping placements", [("n1", A100, 1, None)],
         [claim("c", request("small", MIG_CLASS, selectors=[PROFILE.format("1g.10gb")]),
                request("big", MIG_CLASS, selectors=[PROFILE.format("3g.40gb")]))],
         want_node="n1", want_devices={"c": [("small", "gpu-0-mig-1g10gb-0"), ("big", "gpu-0-mig-3g40gb-4")]},
         check=_no_overlap),
    Case("MIG 3g.40gb when 1g.10gb instances sit in both halves: no placement left", [("n1", A100, 1, None)],
         [claim("c", request("big", MIG_CLASS, selectors=[PROFILE.format("3g.40gb")]))],
         other_claims=[claim("o", request("a", MIG_CLASS), request("b", MIG_CLASS),
                             allocated=[("a", "n1", "gpu-0-mig-1g10gb-1"), ("b", "n1", "gpu-0-mig-1g10gb-5")])],
         want_message=CANNOT.format(n=1)),
    Case("MIG 3g.40gb next to an allocated 1g.10gb: takes the other half", [("n1", A100, 1, None)],
         [claim("c", request("big", MIG_CLASS, selectors=[PROFILE.format("3g.40gb")]))],
         other_claims=[claim("o", request("a", MIG_CLASS), allocated=[("a", "n1", "gpu-0-mig-1g10gb-2")])],
         want_node="n1", want_devices={"c": [("big", "gpu-0-mig-3g40gb-4")]}),
    Case("whole GPU excluded once a MIG instance of it is allocated", [("n1", A100, 1, None)],
         [claim("c", request("gpu"))],
         other_claims=[claim("o", request("a", MIG_CLASS), allocated=[("a", "n1", "gpu-0-mig-1g10gb-6")])],
         want_message=CANNOT.format(n=1)),
    Case("whole GPU: the GPU without MIG instances is taken", [("n1", A100, 2, None)],
         [claim("c", request("gpu"))],
         other_claims=[claim("o", request("a", MIG_CLASS), allocated=[("a", "n1", "gpu-0-mig-1g10gb-6")])],
         want_node="n1", want_devices={"c": [("gpu", "gpu-1")]}),
    Case("MIG excluded on a GPU allocated whole", [("n1", A100, 1, None)],
         [claim("c", request("m", MIG_CLASS))],
         other_claims=[claim("o", request("g"), allocated=[("g", "n1", "gpu-0")])],
         want_message=CANNOT.format(n=1)),
    Case("allocationMode All: every GPU of the node", [("n1", "L4", 3, None)],
         [claim("c", request("all", mode="All"))],
         want_node="n1", want_devices={"c": [("all", "gpu-0"), ("all", "gpu-1"), ("all", "gpu-2")]}),
    Case("allocationMode All with one GPU in use elsewhere: unschedulable", [("n1", "L4", 3, None)],
         [claim("c", request("all", mode="All"))],
         other_claims=[claim("o", request("g"), allocated=[("g", "n1", "gpu-1")])],
         want_message=CANNOT.format(n=1)),
    Case("count larger than any node has: upstream's reason on every node",
         [("n1", "L4", 2, None), ("n2", "L4", 2, None)], [claim("c", request("gpus", count=3))],
         want_message=CANNOT.format(n=2), want_reason=("n2", "cannot allocate all claims")),
    Case("devices taken by other claims are not offered again", [("n1", "L4", 2, None), ("n2", "L4", 1, None)],
         [claim("c", request("gpus", count=2))],
         other_claims=[claim("o", request("g"), allocated=[("g", "n1", "gpu-0")])],
         want_message=CANNOT.format(n=2)),
    Case("CEL runtime error (missing attribute): the cycle fails with upstream's error", [("n1", "L4", 1, None)],
         [claim("c", request("gpu", selectors=['device.attributes["gpu.mockgpu.io"].nvlinkIsland == 0']))],
         want_error='running "DynamicResources" filter plugin: claim default/c: selector #0 on device '
                    "gpu.mockgpu.io/n1/gpu-0: CEL runtime error: no such key: nvlinkIsland" + HINT),
    Case("CEL guarded with has(): no error, the device just does not match", [("n1", "L4", 1, None)],
         [claim("c", request("gpu", selectors=['has(device.attributes["gpu.mockgpu.io"].nvlinkIsland)']))],
         want_message=CANNOT.format(n=1)),
    Case("pod whose claim does not exist", [("n1", "L4", 1, None), ("n2", "L4", 1, None)], [],
         missing=["nope"],
         want_message='0/2 nodes are available: could not find ResourceClaim "default/nope". '
                      + NOT_HELPFUL.format(n=2)),
    Case("unknown device class", [("n1", "L4", 1, None)], [claim("c", request("gpu", "no-such-class"))],
         want_message="0/1 nodes are available: request gpu: device class no-such-class does not exist. "
                      + NOT_HELPFUL.format(n=1)),
    Case("claim allocated already: the pod goes to the allocation's node",
         [("n1", "L4", 1, None), ("n2", "L4", 1, None)],
         [claim("c", request("gpu"), allocated=[("gpu", "n2", "gpu-0")])],
         want_node="n2", want_devices={}, want_reason=("n1", "resourceclaim not available on the node")),
    Case("two claims in one pod get different devices", [("n1", "L4", 2, None)],
         [claim("a", request("gpu")), claim("b", request("gpu"))],
         want_node="n1", want_devices={"a": [("gpu", "gpu-0")], "b": [("gpu", "gpu-1")]}),
    # device taints (taintPreventsAllocation): NoSchedule and NoExecute keep untolerating requests off a device
    Case("NoSchedule taint in the slice: the other GPU", [("n1", "L4", 2, None)], [claim("c", request("gpu"))],
         taints={("n1", "gpu-0"): [taint("NoSchedule")]}, want_node="n1", want_devices={"c": [("gpu", "gpu-1")]}),
    Case("NoExecute taints on every GPU: unschedulable, upstream's message", [("n1", "L4", 1, None)],
         [claim("c", request("gpu"))], taints={("n1", "gpu-0"): [taint("NoExecute")]},
         want_message=CANNOT.format(n=1), want_reason=("n1", "cannot allocate all claims")),
    Case("effect None is informational only", [("n1", "L4", 1, None)], [claim("c", request("gpu"))],
         taints={("n1", "gpu-0"): [taint("None")]}, want_node="n1", want_devices={"c": [("gpu", "gpu-0")]}),
    Case("a toleration (Exists on the key) lets the tainted GPU be allocated", [("n1", "L4", 1, None)],
         [claim("c", request("gpu", tolerations=[{"key": XID, "operator": "Exists"}]))],
         taints={("n1", "gpu-0"): [taint("NoExecute")]}, want_node="n1", want_devices={"c": [("gpu", "gpu-0")]}),
    Case("a toleration with another value does not", [("n1", "L4", 1, None)],
         [claim("c", request("gpu", tolerations=[{"key": XID, "operator": "Equal", "value": "48"}]))],
         taints={("n1", "gpu-0"): [taint("NoSchedule")]}, want_message=CANNOT.format(n=1)),
    Case("a toleration for NoSchedule does not tolerate NoExecute", [("n1", "L4", 1, None)],
         [claim("c", request("gpu", tolerations=[{"operator": "Exists", "effect": "NoSchedule"}]))],
         taints={("n1", "gpu-0"): [taint("NoExecute")]}, want_message=CANNOT.format(n=1)),
    Case("DeviceTaintRule on one device: the other node", [("n1", "L4", 1, None), ("n2", "L4", 1, None)],
         [claim("c", request("gpu"))], rules=[rule("NoSchedule", driver="gpu.mockgpu.io", pool="n1", device="gpu-0")],
         want_node="n2", want_devices={"c": [("gpu", "gpu-0")]}, want_reason=("n1", "cannot allocate all claims")),
    Case("DeviceTaintRule with an empty selector taints every device", [("n1", "L4", 1, None), ("n2", "L4", 1, None)],
         [claim("c", request("gpu"))], rules=[rule("NoExecute")], want_message=CANNOT.format(n=2)),
    Case("DeviceTaintRule of another driver does not apply", [("n1", "L4", 1, None)], [claim("c", request("gpu"))],
         rules=[rule("NoSchedule", driver="other.example.com")], want_node="n1",
         want_devices={"c": [("gpu", "gpu-0")]}),
    Case("allocationMode All with one tainted GPU: unschedulable", [("n1", "L4", 2, None)],
         [claim("c", request("all", mode="All"))], taints={("n1", "gpu-1"): [taint("NoSchedule")]},
         want_message=CANNOT.format(n=1)),
]


def _run(case: Case):
    nodes = [node(n, {"cpu": "16", "memory": "64Gi"}) for n, *_ in case.nodes]
    slices = [s for n, model, gpus, islands in case.nodes for s in node_slices(n, model, gpus, islands=islands)]
    for s in slices:
        for d in s["spec"].get("devices") or []:
            taints = case.taints.get((s["spec"]["nodeName"], d["name"]))
            if taints:
                d["taints"] = taints
    claims = {f"default/{c['metadata']['name']}": c for c in case.pod_claims + case.other_claims}
    pod = claim_pod("p", *[c["metadata"]["name"] for c in case.pod_claims], *case.missing)
    dra = DraSnapshot(classes=CLASSES, slices=slices, claims=claims, taint_rules=case.rules)
    profile = default_config().profiles["default-scheduler"]
    return pod, dra, schedule_one(pod, infos(nodes), profile, random.Random(0), dra=dra)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_dynamic_resources(case: Case):
    pod, dra, res = _run(case)
    if case.want_error is not None:
        assert res.error == case.want_error
        assert res.selected_node is None
        return
    assert res.error is None
    assert res.selected_node == case.want_node
    if case.want_message is not None:
        assert res.message == case.want_message
    if case.want_reason is not None:
        where, reason = case.want_reason
        assert res.filter_results[where]["DynamicResources"] == reason
    if case.want_devices is not None:
        got = {k.split("/", 1)[1]: [(r["request"], r["device"]) for r in a["devices"]["results"]]
               for k, a in res.claim_allocations.items()}
        assert got == case.want_devices
        for alloc in res.claim_allocations.values():
            assert alloc["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [case.want_node]}]}]}
            assert all(r["driver"] == "gpu.mockgpu.io" and r["pool"] == case.want_node
                       for r in alloc["devices"]["results"])
        notes = annotations(res)
        every = {c["metadata"]["name"]: [{"request": r["request"], "device": r["device"]}
                                         for r in c["status"]["allocation"]["devices"]["results"]]
                 for c in case.pod_claims if (c.get("status") or {}).get("allocation")}  # allocated before
        every.update({c: [{"request": r, "device": d} for r, d in devs] for c, devs in case.want_devices.items()})
        assert json.loads(notes[ANNOTATION_DRA_ALLOCATION]) == every
    if case.check is not None:
        assert case.check(next(iter(got.values())))


def test_pods_without_claims_are_untouched():
    """Same result, annotations and no DynamicResources entry, with or without a DRA snapshot."""
    nodes = infos([node("n1", {"cpu": "4", "memory": "8Gi"}), node("n2", {"cpu": "8", "memory": "8Gi"})])
    profile = default_config().profiles["default-scheduler"]
    pod = req_pod("plain", {"cpu": "1"})
    dra = DraSnapshot(classes=CLASSES, slices=node_slices("n1", "L4", 1), claims={})
    with_dra = schedule_one(pod, nodes, profile, random.Random(0), dra=dra)
    without = schedule_one(pod, nodes, profile, random.Random(0))
    assert annotations(with_dra) == annotations(without)
    assert "DynamicResources" not in json.loads(annotations(with_dra)[ANNOTATION_FILTER])["n1"]
    assert with_dra.selected_node == without.selected_node == "n2"


@pytest.mark.parametrize("pod_claims, template_status, want", [
    (["c"], None, ""),
    (["nope"], None, 'could not find ResourceClaim "default/nope"'),
    ([], "missing", 'pod "default/p": ResourceClaim not created yet'),
    ([], "generated", ""),
])
def test_pre_enqueue(pod_claims, template_status, want):
    """Upstream PreEnqueue: a pod waits (silently) until every claim it references exists."""
    pod = claim_pod("p", *pod_claims, template="tpl" if template_status else "")
    claims = {"default/c": claim("c", request("gpu"))}
    if template_status == "generated":
        pod["status"] = {"resourceClaimStatuses": [{"name": "t", "resourceClaimName": "p-t-abc"}]}
        gen = claim("p-t-abc", request("gpu"))
        gen["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "p", "uid": "uid-p", "controller": True}]
        claims["default/p-t-abc"] = gen
    status = DynamicResources().pre_enqueue(pod, DraSnapshot(classes=CLASSES, claims=claims))
    assert status.message == want
    assert status.is_success == (want == "")


@pytest.mark.parametrize("drop_counters, generations, want_node", [
    (False, (1,), "n1"),
    (True, (1,), None),  # counters slice missing: the pool is incomplete, nothing is allocated from it
    (False, (1, 2), None),  # devices at generation 1 are outdated by a generation-2 slice: incomplete
])
def test_pool_completeness(drop_counters, generations, want_node):
    slices = node_slices("n1", A100, 1, drop_counters=drop_counters, generation=generations[0])
    if len(generations) > 1:  # only the counters slice was republished at the newer generation
        slices[1]["spec"]["pool"]["generation"] = generations[1]
    dra = DraSnapshot(classes=CLASSES, slices=slices, claims={"default/c": claim("c", request("gpu"))})
    res = schedule_one(claim_pod("p", "c"), infos([node("n1", {"cpu": "4"})]),
                       default_config().profiles["default-scheduler"], random.Random(0), dra=dra)
    assert res.selected_node == want_node
    if want_node is None:
        assert res.message == CANNOT.format(n=1)


def test_filter_outside_a_cycle_does_prefilter_work():
    """A direct Filter call (no schedule_one, so no snapshot and no PreFilter) still answers, never raises."""
    status = DynamicResources().filter(claim_pod("p", "c"), infos([node("n1", {"cpu": "1"})])[0])
    assert (status.code.name, status.message) == ("UNSCHEDULABLE_AND_UNRESOLVABLE",
                                                  'could not find ResourceClaim "default/c"')


@pytest.mark.parametrize("selection, want_nodes, want_selector", [
    ({"allNodes": True}, ["n1", "n2"], None),  # network-attached: no node selector in the allocation
    ({"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "rack", "operator": "In", "values": ["a"]}]}]}}, ["n2"],  # the slice's selector is copied
     {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a"]}]}]}),
    ({"nodeName": "n1"}, ["n1"], {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}),
])
def test_slice_node_selection(selection, want_nodes, want_selector):
    s = node_slices("shared", "L4", 1)[0]
    del s["spec"]["nodeName"]
    s["spec"].update(selection)
    nodes = infos([node("n1", {"cpu": "1"}), node("n2", {"cpu": "1"}, labels={"rack": "a"})])
    dra = DraSnapshot(classes=CLASSES, slices=[s], claims={"default/c": claim("c", request("gpu"))})
    res = schedule_one(claim_pod("p", "c"), nodes, default_config().profiles["default-scheduler"],
                       random.Random(0), dra=dra)
    assert res.feasible == want_nodes
    alloc = res.claim_allocations["default/c"]
    assert alloc.get("nodeSelector") == want_selector
    assert alloc["devices"]["results"] == [{"request": "gpu", "driver": "gpu.mockgpu.io", "pool": "shared",
                                            "device": "gpu-0"}]
