"""Filter plugins: exact reasons and status codes.

NodeResourcesFit rows are transcribed from kubernetes v1.37.2
``pkg/scheduler/framework/plugins/noderesources/fit_test.go``: ``TestEnoughRequests`` (node allocatable cpu 10m,
memory 20, pods 32, example.com/aaa 5, ephemeral-storage 20, hugepages-2Mi 5; ``nodeInfo`` holds one pod with
the "used" requests), ``TestNotEnoughRequests`` (allocatable pods 1), ``TestStorageRequests`` and
``TestRestartableInitContainers`` (allocatable cpu 2m, memory 0, pods 1, empty node). A request larger than the
node's whole allocatable is UnschedulableAndUnresolvable (v1.34+). Rows not modelled: the DRA-backed extended
resource rows (``draExtendedResourceEnabled``, DeviceClass/ResourceSlice objects) and TestDeferredResizeFit
(in-place resize).
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


def _conv(r):
    return {k: (f"{v}m" if k == "cpu" else v) for k, v in r.items()}


def rp(*reqs, init=None, **spec):
    """upstream ``newResourcePod`` (+ ``newResourceInitPod``): one container per map; cpu in millicores."""
    return pod("p", *(container(_conv(r)) for r in reqs), init=[container(_conv(r)) for r in init or []], **spec)


def plr(pod_requests, *reqs, init=None):
    """upstream ``newPodLevelResourcesPod``: ``spec.resources.requests`` on top of the containers."""
    return rp(*reqs, init=init, resources={"requests": {k: str(v) for k, v in pod_requests.items()}})


def on_node(*used, pods="32", alloc=None):
    return NodeInfo.from_node(node("n", alloc or ALLOC, pods=pods), [rp(*used)] if used else [])


def sidecar_pod(request=None, sidecar=None):
    """``newPodWithRestartableInitContainers``: a regular container and one restartable init container."""
    side = container(_conv(sidecar) if sidecar is not None else None, restartPolicy="Always")
    return pod("p", container(_conv(request) if request is not None else None), init=[side])


EMPTY_2M = {"cpu": "2m", "memory": 0}  # TestRestartableInitContainers: cpu 2m, memory 0, pods 1
FIT_ROWS = [
    # --- TestEnoughRequests ---
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
    ("too many resources fails due to highest init container memory",
     rp({"cpu": 1, "memory": 1}, init=[{"cpu": 1, "memory": 3}, {"cpu": 1, "memory": 2}]),
     on_node({"cpu": 9, "memory": 19}), U, ("Insufficient memory",)),
    ("init container fits because it's the max, not sum, of containers and init containers",
     rp({"cpu": 1, "memory": 1}, init=[{"cpu": 1, "memory": 1}]), on_node({"cpu": 9, "memory": 19}), OK, ()),
    ("multiple init containers fit because it's the max, not sum, of containers and init containers",
     rp({"cpu": 1, "memory": 1}, init=[{"cpu": 1, "memory": 1}, {"cpu": 1, "memory": 1}]),
     on_node({"cpu": 9, "memory": 19}), OK, ()),
    ("both resources fit", rp({"cpu": 1, "memory": 1}), on_node({"cpu": 5, "memory": 5}), OK, ()),
    ("one resource memory fits", rp({"cpu": 2, "memory": 1}), on_node({"cpu": 9, "memory": 5}),
     U, ("Insufficient cpu",)),
    ("one resource cpu fits", rp({"cpu": 1, "memory": 2}), on_node({"cpu": 5, "memory": 19}),
     U, ("Insufficient memory",)),
    ("equal edge case", rp({"cpu": 5, "memory": 1}), on_node({"cpu": 5, "memory": 19}), OK, ()),
    ("equal edge case for init container", rp({"cpu": 4, "memory": 1}, init=[{"cpu": 5, "memory": 1}]),
     on_node({"cpu": 5, "memory": 19}), OK, ()),
    ("extended resource fits", rp({A: 1}), on_node({}), OK, ()),
    ("extended resource fits for init container", rp({}, init=[{A: 1}]), on_node({}), OK, ()),
    ("extended resource capacity enforced", rp({"cpu": 1, "memory": 1, A: 10}), on_node({A: 0}),
     UU, (f"Insufficient {A}",)),
    ("extended resource capacity enforced for init container", rp({}, init=[{"cpu": 1, "memory": 1, A: 10}]),
     on_node({A: 0}), UU, (f"Insufficient {A}",)),
    ("extended resource allocatable enforced", rp({"cpu": 1, "memory": 1, A: 1}), on_node({A: 5}),
     U, (f"Insufficient {A}",)),
    ("extended resource allocatable enforced for init container", rp({}, init=[{"cpu": 1, "memory": 1, A: 1}]),
     on_node({A: 5}), U, (f"Insufficient {A}",)),
    ("extended resource allocatable enforced for multiple containers",
     rp({"cpu": 1, "memory": 1, A: 3}, {"cpu": 1, "memory": 1, A: 3}), on_node({A: 2}), UU, (f"Insufficient {A}",)),
    ("extended resource allocatable admits multiple init containers",
     rp({}, init=[{"cpu": 1, "memory": 1, A: 3}, {"cpu": 1, "memory": 1, A: 3}]), on_node({A: 2}), OK, ()),
    ("extended resource allocatable enforced for multiple init containers",
     rp({}, init=[{"cpu": 1, "memory": 1, A: 6}, {"cpu": 1, "memory": 1, A: 3}]), on_node({A: 2}),
     UU, (f"Insufficient {A}",)),
    ("extended resource allocatable enforced for unknown resource", rp({"cpu": 1, "memory": 1, B: 1}),
     on_node({"cpu": 0, "memory": 0}), UU, (f"Insufficient {B}",)),
    ("extended resource allocatable enforced for unknown resource for init container",
     rp({}, init=[{"cpu": 1, "memory": 1, B: 1}]), on_node({"cpu": 0, "memory": 0}), UU, (f"Insufficient {B}",)),
    ("kubernetes.io resource capacity enforced", rp({"cpu": 1, "memory": 1, KA: 10}),
     on_node({"cpu": 0, "memory": 0}), UU, (f"Insufficient {KA}",)),
    ("kubernetes.io resource capacity enforced for init container", rp({}, init=[{"cpu": 1, "memory": 1, KB: 10}]),
     on_node({"cpu": 0, "memory": 0}), UU, (f"Insufficient {KB}",)),
    ("hugepages resource capacity enforced", rp({"cpu": 1, "memory": 1, HP: 10}), on_node({HP: 0}),
     UU, (f"Insufficient {HP}",)),
    ("hugepages resource capacity enforced for init container", rp({}, init=[{"cpu": 1, "memory": 1, HP: 10}]),
     on_node({HP: 0}), UU, (f"Insufficient {HP}",)),
    ("hugepages resource allocatable enforced for multiple containers",
     rp({"cpu": 1, "memory": 1, HP: 3}, {"cpu": 1, "memory": 1, HP: 3}), on_node({HP: 2}), UU, (f"Insufficient {HP}",)),
    ("resources + pod overhead fits", rp({"cpu": 1, "memory": 1}, overhead={"cpu": "3m", "memory": "13"}),
     on_node({"cpu": 5, "memory": 5}), OK, ()),
    ("requests + overhead does not fit for memory", rp({"cpu": 1, "memory": 1}, overhead={"cpu": "1m", "memory": "15"}),
     on_node({"cpu": 5, "memory": 5}), U, ("Insufficient memory",)),
    ("skip checking extended resource request with quantity zero via resource groups",
     rp({"cpu": 1, "memory": 1, A: 0}), on_node({"cpu": 0, "memory": 0, A: 6}), OK, ()),
    ("skip checking resource request with quantity zero", rp({A: 1}),
     on_node({"cpu": 20, "memory": 30, A: 1}), OK, ()),
    ("both pod-level and container-level resources fit", plr({"cpu": "1m", "memory": "2"}, {"cpu": 1, "memory": 1}),
     on_node({"cpu": 5, "memory": 5}), OK, ()),
    ("pod-level cpu resource not fit", plr({"cpu": "7m", "memory": "2"}, {"cpu": 1, "memory": 1}),
     on_node({"cpu": 5, "memory": 5}), U, ("Insufficient cpu",)),
    ("pod-level memory resource not fit", plr({"cpu": "3m", "memory": "2"}, {"cpu": 1, "memory": 1}),
     on_node({"cpu": 5, "memory": 19}), U, ("Insufficient memory",)),
    ("pod-level hugepages resource fit", plr({"cpu": "3m", "memory": "2", HP: 5}), on_node(), OK, ()),
    ("both pod-level and container-level hugepages resource fit",
     plr({"cpu": "3m", "memory": "2", HP: 5}, {"cpu": 1, "memory": 1, HP: 3}), on_node(), OK, ()),
    ("pod-level hugepages resource not fit", plr({"cpu": "3m", "memory": "2", HP: 10}), on_node(),
     UU, (f"Insufficient {HP}",)),
    ("one pod-level cpu resource fits and all init and non-init containers resources fit",
     plr({"cpu": "3m", "memory": "2"}, {"cpu": 1, "memory": 1}, init=[{"cpu": 1, "memory": 1}]),
     on_node({"cpu": 5, "memory": 19}), U, ("Insufficient memory",)),
    # --- TestNotEnoughRequests: allocatable pods 1, one pod already there ---
    ("even without specified resources, predicate fails when there's no space for additional pod", pod(),
     on_node({"cpu": 10, "memory": 20}, pods="1"), U, ("Too many pods",)),
    ("even if both resources fit, predicate fails when there's no space for additional pod",
     rp({"cpu": 1, "memory": 1}), on_node({"cpu": 5, "memory": 5}, pods="1"), U, ("Too many pods",)),
    ("even for equal edge case, predicate fails when there's no space for additional pod",
     rp({"cpu": 5, "memory": 1}), on_node({"cpu": 5, "memory": 19}, pods="1"), U, ("Too many pods",)),
    ("even for equal edge case, predicate fails when there's no space for additional pod due to init container",
     rp({"cpu": 5, "memory": 1}, init=[{"cpu": 5, "memory": 1}]), on_node({"cpu": 5, "memory": 19}, pods="1"),
     U, ("Too many pods",)),
    # --- TestStorageRequests ---
    ("empty storage requested, and pod fits", rp({"cpu": 1, "memory": 1}), on_node({"cpu": 2, "memory": 10}), OK, ()),
    ("storage ephemeral local storage request exceeds allocatable", rp({"ephemeral-storage": 25}),
     on_node({"cpu": 2, "memory": 2}), UU, ("Insufficient ephemeral-storage",)),
    ("ephemeral local storage is sufficient", rp({"ephemeral-storage": 5}),
     on_node({"cpu": 2, "memory": 2, "ephemeral-storage": 10}), OK, ()),
    ("pod fits", rp({"ephemeral-storage": 10}), on_node({"cpu": 2, "memory": 2}), OK, ()),
    # --- TestRestartableInitContainers (sidecars count towards the sum) ---
    ("allow pod without restartable init containers", pod("p", container()),
     on_node(pods="1", alloc=EMPTY_2M), OK, ()),
    ("allow pod with restartable init containers", sidecar_pod(), on_node(pods="1", alloc=EMPTY_2M), OK, ()),
    ("allow pod if the total requested resources do not exceed the node's allocatable resources",
     sidecar_pod({"cpu": 1}, {"cpu": 1}), on_node(pods="1", alloc=EMPTY_2M), OK, ()),
    ("not allow pod if the total requested resources do exceed the node's allocatable resources",
     sidecar_pod({"cpu": 1}, {"cpu": 2}), on_node(pods="1", alloc=EMPTY_2M), UU, ("Insufficient cpu",)),
    # mockgpu's own: the reason learners see most
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


def required_terms(*terms):
    return pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}})


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
    # component-helpers v0.37.2 LazyErrorNodeSelector: a term that does not parse never matches
    ("matchFields In with two values does not parse", NodeAffinity(), required_terms(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}), n("n1"),
     UU, ("node(s) didn't match Pod's node affinity/selector",)),
    ("matchFields In with one value", NodeAffinity(), required_terms(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}), n("n1"), OK, ()),
    ("matchFields NotIn", NodeAffinity(), required_terms(
        {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}), n("n1"),
     UU, ("node(s) didn't match Pod's node affinity/selector",)),
    ("matchFields Exists does not parse", NodeAffinity(), required_terms(
        {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}), n("n1"),
     UU, ("node(s) didn't match Pod's node affinity/selector",)),
    ("DoesNotExist with values does not parse, although the label is absent", NodeAffinity(), required_terms(
        {"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist", "values": ["x"]}]}), n(),
     UU, ("node(s) didn't match Pod's node affinity/selector",)),
    ("Gt with a non-integer value does not parse", NodeAffinity(), required_terms(
        {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["many"]}]}), n(labels={"cores": "8"}),
     UU, ("node(s) didn't match Pod's node affinity/selector",)),
    ("Gt on integer labels", NodeAffinity(), required_terms(
        {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]}), n(labels={"cores": "8"}), OK, ()),
    ("a broken term does not hide a matching one", NodeAffinity(), required_terms(
        {"matchExpressions": [{"key": "gpu", "operator": "In"}]},
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}), n(labels={"gpu": "a100"}), OK, ()),
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


NODE_AFFINITY_PRESCORE_ROWS = [
    ("no affinity: Skip", pod(), Code.SKIP),
    ("required terms only: Skip", required_terms({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}),
     Code.SKIP),
    ("preferred terms: scored", pod(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}]}}), Code.SUCCESS),
]


@pytest.mark.parametrize("p,code", [r[1:] for r in NODE_AFFINITY_PRESCORE_ROWS],
                         ids=[r[0] for r in NODE_AFFINITY_PRESCORE_ROWS])
def test_node_affinity_pre_score_skips_pods_without_preferences(p, code):
    # node_affinity.go v1.37.2 PreScore: no preferred terms (and no addedAffinity) -> Skip
    assert NodeAffinity().pre_score(p, [n()]).code is code
