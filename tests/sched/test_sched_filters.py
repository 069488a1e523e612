"""Filter plugins: exact reasons and status codes.

NodeResourcesFit rows follow upstream fit_test.go ``TestEnoughRequests`` / ``TestNotEnoughRequests`` (node
allocatable cpu 10m, memory 20, pods 32, example.com/aaa 5, ephemeral-storage 20, hugepages-2Mi 5), with
v1.34+ codes: a request larger than the node's whole allocatable is UnschedulableAndUnresolvable.
"""

from __future__ import annotations

import pytest
from sched_builders import container, node, pod

from mockgpu.sched.framework import Code
from mockgpu.sched.plugins.node_affinity import NodeAffinity
from mockgpu.sched.plugins.node_name import NodeName
from mockgpu.sched.plugins.node_resources_fit import FitArgs, NodeResourcesFit
from mockgpu.sched.plugins.node_unschedulable import NodeUnschedulable
from mockgpu.sched.plugins.taint_toleration import TaintToleration
from mockgpu.sched.snapshot import NodeInfo

A, B = "example.com/aaa", "example.com/bbb"
KA, KB, HP = "kubernetes.io/something", "subdomain.kubernetes.io/something", "hugepages-2Mi"
ALLOC = {"cpu": "10m", "memory": 20, A: 5, "ephemeral-storage": 20, HP: 5}
OK, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def rp(*reqs, init=None, **spec):
    """upstream ``newResourcePod``: one container per map; cpu given in millicores."""
    def conv(r):
        return {("cpu" if k == "cpu" else k): (f"{v}m" if k == "cpu" else v) for k, v in r.items()}
    return pod("p", *(container(conv(r)) for r in reqs), init=[container(conv(r)) for r in init or []], **spec)


def on_node(*used, pods="32"):
    return NodeInfo.from_node(node("n", ALLOC, pods=pods), [rp(*used)] if used else [])


FIT_ROWS = [
    ("no resources requested always fits", pod(), on_node({"cpu": 10, "memory": 20}), OK, ()),
    ("too many resources fails", rp({"cpu": 1, "memory": 1}), on_node({"cpu": 10, "memory": 20}),
     U, ("Insufficient cpu", "Insufficient memory")),
    ("too many resources fails due to init container cpu", rp({"cpu": 1, "memory": 1}, init=[{"cpu": 3, "memory": 1}]),
     on_node({"cpu": 8, "memory": 19}), U, ("Insufficient cpu",)),
    ("too many resources fails due to highest init container cpu",
     rp({"cpu": 1, "memory": 1}, init=[{"cpu": 3, "memory": 1}, {"cpu": 2, "memory": 1}]),
     on_node({"cpu": 8, "memory": 19}), U, ("Insufficient cpu",)),
    ("too many resources fails due to init container memory",
     rp({"cpu": 1, "memory": 1}, init=[{"cpu": 1, "memory": 3}]), on_node({"cpu": 9, "memory": 19}),
     U, ("Insufficient memory",)),
    ("init container fits because it's the max, not sum", rp({"cpu": 1, "memory": 1}, init=[{"cpu": 1, "memory": 1}]),
     on_node({"cpu": 9, "memory": 19}), OK, ()),
    ("both resources fit", rp({"cpu": 1, "memory": 1}), on_node({"cpu": 5, "memory": 5}), OK, ()),
    ("one resource memory fits", rp({"cpu": 2, "memory": 1}), on_node({"cpu": 9, "memory": 5}),
     U, ("Insufficient cpu",)),
    ("equal edge case", rp({"cpu": 5, "memory": 1}), on_node({"cpu": 5, "memory": 19}), OK, ()),
    ("equal edge case for init container", rp({"cpu": 4, "memory": 1}, init=[{"cpu": 5, "memory": 1}]),
     on_node({"cpu": 5, "memory": 19}), OK, ()),
    ("extended resource fits", rp({A: 1}), on_node(), OK, ()),
    # 10 > allocatable 5: unresolvable (v1.34+)
    ("extended resource capacity enforced", rp({"cpu": 1, "memory": 1, A: 10}), on_node({A: 0}),
     UU, (f"Insufficient {A}",)),
    ("extended resource allocatable enforced", rp({"cpu": 1, "memory": 1, A: 1}), on_node({A: 5}),
     U, (f"Insufficient {A}",)),
    ("extended resource allocatable enforced for multiple containers",
     rp({"cpu": 1, "memory": 1, A: 3}, {"cpu": 1, "memory": 1, A: 3}), on_node({A: 2}), UU, (f"Insufficient {A}",)),
    ("extended resource allocatable admits multiple init containers",
     rp(init=[{"cpu": 1, "memory": 1, A: 3}, {"cpu": 1, "memory": 1, A: 3}]), on_node({A: 2}), OK, ()),
    ("extended resource allocatable enforced for unknown resource", rp({"cpu": 1, "memory": 1, B: 1}), on_node(),
     UU, (f"Insufficient {B}",)),
    ("kubernetes.io resource capacity enforced", rp({"cpu": 1, "memory": 1, KA: 10}), on_node(),
     UU, (f"Insufficient {KA}",)),
    ("kubernetes.io resource capacity enforced for init container", rp(init=[{"cpu": 1, "memory": 1, KB: 10}]),
     on_node(), UU, (f"Insufficient {KB}",)),
    ("hugepages resource capacity enforced", rp({"cpu": 1, "memory": 1, HP: 10}), on_node(),
     UU, (f"Insufficient {HP}",)),
    ("hugepages resource allocatable enforced for multiple containers",
     rp({"cpu": 1, "memory": 1, HP: 3}, {"cpu": 1, "memory": 1, HP: 3}), on_node({HP: 2}), UU, (f"Insufficient {HP}",)),
    ("resources + pod overhead fits", rp({"cpu": 1, "memory": 1}, overhead={"cpu": "3m", "memory": "13"}),
     on_node({"cpu": 5, "memory": 5}), OK, ()),
    ("requests + overhead does not fit for memory", rp({"cpu": 1, "memory": 1}, overhead={"cpu": "1m", "memory": "15"}),
     on_node({"cpu": 5, "memory": 5}), U, ("Insufficient memory",)),
    ("skip checking extended resource request with quantity zero", rp({"cpu": 1, "memory": 1, A: 0}),
     on_node({A: 6}), OK, ()),
    ("skip checking resource request with quantity zero", rp({"cpu": 0, "memory": 0, A: 1}),
     on_node({"cpu": 20, "memory": 30, A: 1}), OK, ()),
    ("ephemeral storage request exceeds allocatable", rp({"ephemeral-storage": 25}), on_node({"cpu": 2, "memory": 2}),
     UU, ("Insufficient ephemeral-storage",)),
    # TestNotEnoughRequests: allocatable pods 1, one pod already there
    ("too many pods even without requests", pod(), on_node({"cpu": 10, "memory": 20}, pods="1"),
     U, ("Too many pods",)),
    ("too many pods even for equal edge case", rp({"cpu": 5, "memory": 1}), on_node({"cpu": 5, "memory": 19}, pods="1"),
     U, ("Too many pods",)),
    ("gpu short on a node", rp({"nvidia.com/gpu": 1}),
     NodeInfo.from_node(node("n", {"nvidia.com/gpu": 2}), [rp({"nvidia.com/gpu": 2})]),
     U, ("Insufficient nvidia.com/gpu",)),
]


@pytest.mark.parametrize("p,info,code,reasons", [r[1:] for r in FIT_ROWS], ids=[r[0] for r in FIT_ROWS])
def test_node_resources_fit_filter(p, info, code, reasons):
    status = NodeResourcesFit().filter(p, info)
    assert (status.code, status.reasons) == (code, reasons)


IGNORE_ROWS = [
    ("skip checking ignored extended resource", FitArgs(ignored_resources=(B,)), rp({"cpu": 1, "memory": 1, B: 1}),
     OK, ()),
    ("skip checking ignored extended resource via resource groups", FitArgs(ignored_resource_groups=("example.com",)),
     rp({"cpu": 1, "memory": 1, B: 1, KA: 1}), UU, (f"Insufficient {KA}",)),
    ("kubernetes.io names are never ignored", FitArgs(ignored_resources=(KA,)), rp({KA: 1}),
     UU, (f"Insufficient {KA}",)),
]


@pytest.mark.parametrize("args,p,code,reasons", [r[1:] for r in IGNORE_ROWS], ids=[r[0] for r in IGNORE_ROWS])
def test_ignored_resources(args, p, code, reasons):
    status = NodeResourcesFit(args).filter(p, on_node())
    assert (status.code, status.reasons) == (code, reasons)


def n(name="n1", **kw):
    return NodeInfo.from_node(node(name, {"cpu": "4"}, **kw))


TAINT_GPU = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TAINT_CP = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
OTHER_ROWS = [
    ("NodeName matches", NodeName(), pod(nodeName="n1"), n(), OK, ()),
    ("NodeName unset", NodeName(), pod(), n(), OK, ()),
    ("NodeName mismatch", NodeName(), pod(nodeName="n2"), n(), UU, ("node(s) didn't match the requested node name",)),
    ("cordoned node", NodeUnschedulable(), pod(), n(unschedulable=True), UU, ("node(s) were unschedulable",)),
    ("cordoned node tolerated", NodeUnschedulable(),
     pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]),
     n(unschedulable=True), OK, ()),
    ("untolerated taint with value", TaintToleration(), pod(), n(taints=[TAINT_GPU]),
     UU, ("node(s) had untolerated taint(s)",)),
    ("untolerated taint without value", TaintToleration(), pod(), n(taints=[TAINT_CP]),
     UU, ("node(s) had untolerated taint(s)",)),
    ("taint tolerated by Exists", TaintToleration(), pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}]),
     n(taints=[TAINT_GPU]), OK, ()),
    ("taint tolerated by Equal value", TaintToleration(),
     pod(tolerations=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]), n(taints=[TAINT_GPU]),
     OK, ()),
    ("wrong value not tolerated", TaintToleration(),
     pod(tolerations=[{"key": "nvidia.com/gpu", "value": "absent"}]), n(taints=[TAINT_GPU]),
     UU, ("node(s) had untolerated taint(s)",)),
    ("PreferNoSchedule does not filter", TaintToleration(), pod(),
     n(taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]), OK, ()),
    ("nodeSelector matches", NodeAffinity(), pod(nodeSelector={"gpu": "a100"}), n(labels={"gpu": "a100"}), OK, ()),
    ("nodeSelector mismatch", NodeAffinity(), pod(nodeSelector={"gpu": "a100"}), n(labels={"gpu": "t4"}),
     UU, ("node(s) didn't match Pod's node affinity/selector",)),
    ("required affinity In", NodeAffinity(), pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100", "h100"]}]}]}}}),
     n(labels={"gpu": "h100"}), OK, ()),
    ("required affinity terms are ORed", NodeAffinity(), pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}), n(), OK, ()),
    ("required affinity Gt on non-integer label fails", NodeAffinity(), pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "mem", "operator": "Gt", "values": ["10"]}]}]}}}), n(labels={"mem": "x"}),
     UU, ("node(s) didn't match Pod's node affinity/selector",)),
    ("NotIn matches a node without the label", NodeAffinity(), pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["t4"]}]}]}}}), n(), OK, ()),
    ("empty term matches nothing", NodeAffinity(), pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}), n(),
     UU, ("node(s) didn't match Pod's node affinity/selector",)),
]


@pytest.mark.parametrize("plugin,p,info,code,reasons", [r[1:] for r in OTHER_ROWS], ids=[r[0] for r in OTHER_ROWS])
def test_other_filters(plugin, p, info, code, reasons):
    status = plugin.filter(p, info)
    assert (status.code, status.reasons) == (code, reasons)


def test_taint_toleration_score_counts_prefer_no_schedule_and_reverses():
    soft = {"key": "k", "value": "v", "effect": "PreferNoSchedule"}
    nodes = [n("a"), n("b", taints=[soft]), n("c", taints=[soft, {**soft, "key": "k2"}])]
    plugin = TaintToleration()
    raw = {x.name: plugin.score(pod(), x) for x in nodes}
    assert raw == {"a": 0, "b": 1, "c": 2}
    # reverse DefaultNormalizeScore: 100 - 100*s//max
    assert plugin.normalize(pod(), raw) == {"a": 100, "b": 50, "c": 0}
    tolerant = pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "PreferNoSchedule"}])
    assert plugin.score(tolerant, nodes[2]) == 1


def test_node_affinity_score_sums_preferred_weights_and_normalizes():
    prefs = [{"weight": 20, "preference": {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}},
             {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]
    p = pod(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": prefs}})
    nodes = [n("a", labels={"gpu": "a100", "zone": "z"}), n("b", labels={"zone": "z"}), n("c")]
    plugin = NodeAffinity()
    raw = {x.name: plugin.score(p, x) for x in nodes}
    assert raw == {"a": 25, "b": 5, "c": 0}
    assert plugin.normalize(p, raw) == {"a": 100, "b": 20, "c": 0}  # 100*5//25 = 20
