"""Upstream's own NodeResourcesFit and BalancedAllocation score tables, transcribed as rows.

Source: kubernetes **v1.37.2**, pkg/scheduler/framework/plugins/noderesources/ (Go module cache
``k8s.io/kubernetes@v1.37.2``): least_allocated_test.go, most_allocated_test.go,
requested_to_capacity_ratio_test.go (TestRequestedToCapacityRatioScoringStrategy,
TestResourceBinPackingSingleExtended, TestResourceBinPackingMultipleExtended), fit_test.go (TestFitScore) and
balanced_allocation_test.go.
Upstream's node sizes are kept as written: ``st.MakeNode().Capacity({"cpu": "4000"})`` is 4000 *cores*,
``makeNode(name, 4000, ...)`` is 4000 *millicores*; only ratios matter. ``pod()`` with no container is upstream's
``st.MakePod().Obj()`` (no containers, so no non-zero defaults).

Rows not transcribed here, and why:

* "Resources not set, pods scheduled with error" (least/most): an internal-config plugin built with no resources
  returns an Error status; a v1 file cannot express it (defaulting fills cpu and memory).
* "resource with negative weight", "resource with zero weight", "resource weight larger than MaxNodeScore"
  (least/most): plugin construction errors, covered through the config parser in test_sched_config.py (a v1
  weight of 0 is defaulted to 1, so only the negative and > 100 rows are errors there).
* balanced_allocation_test.go "include DRA resource on a node for balanced resource allocation" (with and without
  PreScore): DRA-backed extended resources (DeviceClass, ResourceSlice) are not modelled.
* fit_test.go TestFitScore "... with Extended resources" (with and without PreScore): DRA-backed.
* TestBrokenLinearFunction is in test_sched_strategies.py.
"""

from __future__ import annotations

import pytest
from sched_builders import container, infos, node, pod, req_pod

from mockgpu.sched.framework import Code
from mockgpu.sched.plugins.balanced_allocation import BalancedArgs, NodeResourcesBalancedAllocation
from mockgpu.sched.plugins.node_resources_fit import FitArgs, NodeResourcesFit
from mockgpu.sched.strategies import ScoringStrategy

LA, MA, RTCR = (ScoringStrategy.LEAST_ALLOCATED, ScoringStrategy.MOST_ALLOCATED,
                ScoringStrategy.REQUESTED_TO_CAPACITY_RATIO)
CPU_MEM = {"cpu": 1, "memory": 1}
EXT = "abc.com/xyz"  # util_test.go extendedRes
EXT_SET = {"cpu": 1, "memory": 1, EXT: 1}
LEAST_SHAPE = ((0, 10), (100, 0))


def n2(c1, m1, c2, m2, e1=None, e2=None):
    """node1/node2 as upstream ``st.MakeNode().Capacity`` (cores, bytes, optional extended resource)."""
    a1 = {"cpu": c1, "memory": m1, **({EXT: e1} if e1 else {})}
    a2 = {"cpu": c2, "memory": m2, **({EXT: e2} if e2 else {})}
    return [node("node1", a1), node("node2", a2)]


def mk(name, milli_cpu, memory, ext=None):
    """upstream test_util ``makeNode(name, milliCPU, memory, extendedResources)``."""
    return node(name, {"cpu": f"{milli_cpu}m", "memory": memory, **(ext or {})})


def on(p, node_name):
    p["spec"]["nodeName"] = node_name
    return p


TWO_CONTAINERS = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})

FIT_ROWS = [
    # --- least_allocated_test.go ---
    ("LA nothing scheduled, nothing requested", LA, CPU_MEM, (), pod(), [], n2(4000, 10000, 4000, 10000),
     {"node1": 100, "node2": 100}),
    # node1 cpu (4000-3000)*100/4000=25, mem (10000-5000)*100/10000=50 -> 37; node2 50,50 -> 50
    ("LA nothing scheduled, resources requested, differently sized nodes", LA, CPU_MEM, (),
     req_pod("p", *TWO_CONTAINERS), [], n2(4000, 10000, 6000, 10000), {"node1": 37, "node2": 50}),
    ("LA no resources requested, pods scheduled", LA, CPU_MEM, (), pod(),
     [pod("a", node_name="node1"), pod("b", node_name="node1"), pod("c", node_name="node2"),
      pod("d", node_name="node2")], n2(4000, 10000, 4000, 10000), {"node1": 100, "node2": 100}),
    # node1 cpu (10000-6000)/10000=40, mem 100 -> 70; node2 40, (20000-5000)/20000=75 -> 57
    ("LA no resources requested, pods scheduled with resources", LA, CPU_MEM, (), pod(),
     [req_pod("a", {"cpu": "3000", "memory": "0"}, node_name="node1"),
      req_pod("b", {"cpu": "3000", "memory": "0"}, node_name="node1"),
      req_pod("c", {"cpu": "3000", "memory": "0"}, node_name="node2"),
      req_pod("d", {"cpu": "3000", "memory": "5000"}, node_name="node2")],
     n2(10000, 20000, 10000, 20000), {"node1": 70, "node2": 57}),
    # node1 40, 75 -> 57; node2 40, 50 -> 45
    ("LA resources requested, pods scheduled with resources", LA, CPU_MEM, (), req_pod("p", *TWO_CONTAINERS),
     [req_pod("a", {"cpu": "3000", "memory": "0"}, node_name="node1"),
      req_pod("b", {"cpu": "3000", "memory": "5000"}, node_name="node2")],
     n2(10000, 20000, 10000, 20000), {"node1": 57, "node2": 45}),
    # node2 mem (50000-10000)/50000=80 -> (40+80)/2=60
    ("LA resources requested, pods scheduled with resources, differently sized nodes", LA, CPU_MEM, (),
     req_pod("p", *TWO_CONTAINERS),
     [req_pod("a", {"cpu": "3000", "memory": "0"}, node_name="node1"),
      req_pod("b", {"cpu": "3000", "memory": "5000"}, node_name="node2")],
     n2(10000, 20000, 10000, 50000), {"node1": 57, "node2": 60}),
    # cpu 6000 > 4000 -> 0; node1 mem 100 -> 50; node2 mem 50 -> 25
    ("LA requested resources exceed node capacity", LA, CPU_MEM, (), req_pod("p", {"cpu": "3000", "memory": "0"}),
     [req_pod("a", {"cpu": "3000", "memory": "0"}, node_name="node1"),
      req_pod("b", {"cpu": "3000", "memory": "5000"}, node_name="node2")],
     n2(4000, 10000, 4000, 10000), {"node1": 50, "node2": 25}),
    ("LA zero node resources, pods scheduled with resources", LA, CPU_MEM, (), pod(),
     [req_pod("a", {"cpu": "3000", "memory": "0"}, node_name="node1"),
      req_pod("b", {"cpu": "3000", "memory": "5000"}, node_name="node2")],
     [node("node1", {}), node("node2", {})], {"node1": 0, "node2": 0}),
    # node1 (25*1 + 50*2)/3 = 41; node2 (50 + 100)/3 = 50
    ("LA different weight on cpu and memory", LA, {"memory": 2, "cpu": 1}, (), req_pod("p", *TWO_CONTAINERS), [],
     n2(4000, 10000, 6000, 10000), {"node1": 41, "node2": 50}),
    ("LA bypass extended resource if the pod does not request", LA, EXT_SET, (), req_pod("p", *TWO_CONTAINERS), [],
     n2(6000, 10000, 6000, 10000, e2=4), {"node1": 50, "node2": 50}),
    # ext node1 (4-2)/4=50 -> 50; node2 (10-2)/10=80 -> (50+50+80)/3=60
    ("LA honor extended resource if the pod requests", LA, EXT_SET, (),
     req_pod("p", {"cpu": "3000", "memory": "5000", EXT: "2"}), [],
     n2(6000, 10000, 6000, 10000, e1=4, e2=10), {"node1": 50, "node2": 60}),
    # cpu 50, mem 60; the extended resource is not requested -> (50+60)/2 = 55 on both
    ("LA if the node doesn't have a resource", LA, {EXT: 2, "cpu": 1, "memory": 1}, (),
     req_pod("p", {"cpu": "3000", "memory": "4000"}), [], n2(6000, 10000, 6000, 10000, e2=4),
     {"node1": 55, "node2": 55}),
    # --- most_allocated_test.go ---
    ("MA nothing scheduled, nothing requested", MA, CPU_MEM, (), pod(), [], n2(4000, 10000, 4000, 10000),
     {"node1": 0, "node2": 0}),
    # node1 cpu 3000*100/4000=75, mem 50 -> 62; node2 50, 50 -> 50
    ("MA nothing scheduled, resources requested, differently sized nodes", MA, CPU_MEM, (),
     req_pod("p", *TWO_CONTAINERS), [], n2(4000, 10000, 6000, 10000), {"node1": 62, "node2": 50}),
    # node1 60, 0 -> 30; node2 60, 25 -> 42
    ("MA no resources requested, pods scheduled with resources", MA, CPU_MEM, (), pod(),
     [req_pod("a", {"cpu": "3000", "memory": "0"}, node_name="node1"),
      req_pod("b", {"cpu": "3000", "memory": "0"}, node_name="node1"),
      req_pod("c", {"cpu": "3000", "memory": "0"}, node_name="node2"),
      req_pod("d", {"cpu": "3000", "memory": "5000"}, node_name="node2")],
     n2(10000, 20000, 10000, 20000), {"node1": 30, "node2": 42}),
    # node1 60, 25 -> 42; node2 60, 50 -> 55
    ("MA resources requested, pods scheduled with resources", MA, CPU_MEM, (), req_pod("p", *TWO_CONTAINERS),
     [req_pod("a", {"cpu": "3000", "memory": "0"}, node_name="node1"),
      req_pod("b", {"cpu": "3000", "memory": "5000"}, node_name="node2")],
     n2(10000, 20000, 10000, 20000), {"node1": 42, "node2": 55}),
    # node1 5000/5000=100, 9000/10000=90 -> 95; node2 50, 9000/9000=100 -> 75
    ("MA resources requested equal node capacity", MA, CPU_MEM, (),
     req_pod("p", {"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}), [],
     n2(5000, 10000, 10000, 9000), {"node1": 95, "node2": 75}),
    # node1 (75 + 50*2)/3 = 58; node2 (50 + 100)/3 = 50
    ("MA different weight on cpu and memory", MA, {"memory": 2, "cpu": 1}, (), req_pod("p", *TWO_CONTAINERS), [],
     n2(4000, 10000, 6000, 10000), {"node1": 58, "node2": 50}),
    # non-zero defaults 100m/200Mi per container: node1 cpu 300m/250m capped 100, mem 600Mi/1000Mi 60 -> 80;
    # node2 100m/250m=40, 200Mi/1000Mi=20 -> 30
    ("MA no resources requested, pods scheduled, nonzero request for resource", MA, CPU_MEM, (),
     pod("p", container()), [pod("a", container(), node_name="node1"), pod("b", container(), node_name="node1")],
     [node("node1", {"cpu": "250m", "memory": "1000Mi"}), node("node2", {"cpu": "250m", "memory": "1000Mi"})],
     {"node1": 80, "node2": 30}),
    ("MA bypass extended resource if the pod does not request", MA, EXT_SET, (), req_pod("p", *TWO_CONTAINERS), [],
     n2(6000, 10000, 6000, 10000, e2=4), {"node1": 50, "node2": 50}),
    # ext node1 2/4=50 -> 50; node2 2/10=20 -> (50+50+20)/3 = 40
    ("MA honor extended resource if the pod request", MA, EXT_SET, (),
     req_pod("p", {"cpu": "3000", "memory": "5000", EXT: "2"}), [],
     n2(6000, 10000, 6000, 10000, e1=4, e2=10), {"node1": 50, "node2": 40}),
    # cpu 50, mem 40 -> 45
    ("MA if the node doesn't have a resource", MA, {EXT: 2, "cpu": 1, "memory": 1}, (),
     req_pod("p", {"cpu": "3000", "memory": "4000"}), [], n2(6000, 10000, 6000, 10000, e2=4),
     {"node1": 45, "node2": 45}),
    # --- requested_to_capacity_ratio_test.go, shape (0,10),(100,0) ---
    ("RTCR nothing scheduled, nothing requested", RTCR, CPU_MEM, LEAST_SHAPE, pod(),
     [pod("a", node_name="node1"), pod("b", node_name="node1")], n2(4000, 10000, 4000, 10000),
     {"node1": 100, "node2": 100}),
    # node1 util cpu 75 -> 25, mem 50 -> 50: round(37.5) = 38; node2 50, 50 -> 50
    ("RTCR nothing scheduled, resources requested, differently sized nodes", RTCR, CPU_MEM, LEAST_SHAPE,
     req_pod("p", *TWO_CONTAINERS), [pod("a", node_name="node1"), pod("b", node_name="node1")],
     n2(4000, 10000, 6000, 10000), {"node1": 38, "node2": 50}),
    ("RTCR no resources requested, pods scheduled with resources", RTCR, CPU_MEM, LEAST_SHAPE, pod(),
     [req_pod("a", {"cpu": "3000", "memory": "5000"}, node_name="node1"),
      req_pod("b", {"cpu": "3000", "memory": "5000"}, node_name="node2")],
     n2(4000, 10000, 6000, 10000), {"node1": 38, "node2": 50}),
]

FOO, BAR = "intel.com/foo", "intel.com/bar"
BINPACK_SHAPE = ((0, 0), (100, 1))
MEM = 10000 * 1024 * 1024


def foo_nodes():
    return [mk("node1", 4000, MEM, {FOO: 8}), mk("node2", 4000, MEM, {FOO: 4})]


def foobar_nodes():
    return [mk("node1", 4000, MEM, {FOO: 8, BAR: 4}), mk("node2", 4000, MEM, {FOO: 4, BAR: 8})]


FIT_ROWS += [
    # --- TestResourceBinPackingSingleExtended: resources foo:1, shape (0,0),(100,1) ---
    ("binpack single: nothing requested", RTCR, {FOO: 1}, BINPACK_SHAPE, pod(), [], foo_nodes(),
     {"node1": 0, "node2": 0}),
    # node1 2/8 -> util 25 -> 10*25/100 = 2; node2 2/4 -> 50 -> 5
    ("binpack single: requested, pods scheduled with less resources", RTCR, {FOO: 1}, BINPACK_SHAPE,
     req_pod("p", {FOO: 2}), [pod("a")], foo_nodes(), {"node1": 2, "node2": 5}),
    # node2 (2+2)/4 -> 100 -> 10
    ("binpack single: requested, on node with existing pod running", RTCR, {FOO: 1}, BINPACK_SHAPE,
     req_pod("p", {FOO: 2}), [req_pod("a", {FOO: 2}, node_name="node2")], foo_nodes(), {"node1": 2, "node2": 10}),
    ("binpack single: requested, pods scheduled with more resources", RTCR, {FOO: 1}, BINPACK_SHAPE,
     req_pod("p", {FOO: 4}), [pod("a")], foo_nodes(), {"node1": 5, "node2": 10}),
    # --- TestResourceBinPackingMultipleExtended: foo:3, bar:5 ---
    ("binpack multiple: nothing requested", RTCR, {FOO: 3, BAR: 5}, BINPACK_SHAPE, pod(), [], foobar_nodes(),
     {"node1": 0, "node2": 0}),
    # node1 foo 25 -> 2, bar 50 -> 5: round((2*3 + 5*5)/8 = 3.875) = 4; node2 (5*3 + 2*5)/8 = 3.125 -> 3
    ("binpack multiple: requested, pods scheduled with less resources", RTCR, {FOO: 3, BAR: 5}, BINPACK_SHAPE,
     req_pod("p", {FOO: 2, BAR: 2}), [pod("a")], foobar_nodes(), {"node1": 4, "node2": 3}),
    # node2 foo (4+2)/4 over -> 10, bar (2+2)/8 -> 5: (30+25)/8 = 6.875 -> 7
    ("binpack multiple: requested, on node with existing pod running", RTCR, {FOO: 3, BAR: 5}, BINPACK_SHAPE,
     req_pod("p", {FOO: 2, BAR: 2}), [req_pod("a", {FOO: 4, BAR: 2}, node_name="node2")], foobar_nodes(),
     {"node1": 4, "node2": 7}),
    # node1 foo 4/8 -> 5, bar 2/4 -> 5 -> 5; node2 foo 10, bar 2/8 -> 2: (30+10)/8 = 5
    ("binpack multiple: requested, pods scheduled with more resources", RTCR, {FOO: 3, BAR: 5}, BINPACK_SHAPE,
     req_pod("p", {FOO: 4, BAR: 2}), [pod("a")], foobar_nodes(), {"node1": 5, "node2": 5}),
]


# --- fit_test.go TestFitScore (v1.37.2); the "if PreScore is not called" twins give the same numbers here, where
# Score never depends on PreScore ---
FIT_SCORE_EXISTING = (("node1", {"cpu": "2000", "memory": "4000"}), ("node2", {"cpu": "1000", "memory": "2000"}))


def fit_score_existing():
    return [req_pod(f"e-{n}", r, node_name=n) for n, r in FIT_SCORE_EXISTING]


def with_sidecar(node_name):
    """``st.MakePod().Req({cpu 1000, memory 2000}).SidecarReq({cpu 1000, memory 2000})``."""
    return pod("s", container({"cpu": "1000", "memory": "2000"}), node_name=node_name,
               init=[container({"cpu": "1000", "memory": "2000"}, restartPolicy="Always")])


BIG = {"cpu": "3000", "memory": "5000"}
SMALL = {"cpu": "1000", "memory": "2000"}
FIT_ROWS += [
    # node1 cpu (2000+3000)/4000 -> util 100 (over) -> 0 dropped, mem 90 -> 10: 10; node2 cpu 66 -> 34, mem 70 -> 30: 32
    ("TestFitScore RequestedToCapacityRatio case1", RTCR, CPU_MEM, LEAST_SHAPE, req_pod("p", BIG),
     fit_score_existing(), n2(4000, 10000, 6000, 10000), {"node1": 10, "node2": 32}),
    ("TestFitScore RequestedToCapacityRatio case2", RTCR, CPU_MEM, ((0, 0), (100, 10)), req_pod("p", BIG),
     fit_score_existing(), n2(4000, 10000, 6000, 10000), {"node1": 95, "node2": 68}),
    ("TestFitScore MostAllocated", MA, CPU_MEM, (), req_pod("p", SMALL), fit_score_existing(),
     n2(4000, 10000, 6000, 10000), {"node1": 67, "node2": 36}),
    ("TestFitScore LeastAllocated", LA, CPU_MEM, (), req_pod("p", SMALL), fit_score_existing(),
     n2(4000, 10000, 6000, 10000), {"node1": 32, "node2": 63}),
    # the sidecar's requests count on node1 (restartable init container added to the containers' sum)
    ("TestFitScore MostAllocated with sidecar container", MA, CPU_MEM, (), req_pod("p", SMALL),
     [with_sidecar("node1"), req_pod("e", SMALL, node_name="node2")], n2(4000, 10000, 4000, 10000),
     {"node1": 67, "node2": 45}),
    ("TestFitScore LeastAllocated with sidecar container", LA, CPU_MEM, (), req_pod("p", SMALL),
     [with_sidecar("node1"), req_pod("e", SMALL, node_name="node2")], n2(4000, 10000, 4000, 10000),
     {"node1": 32, "node2": 55}),
]


@pytest.mark.parametrize("strategy,resources,shape,incoming,existing,nodes,want", [r[1:] for r in FIT_ROWS],
                         ids=[r[0] for r in FIT_ROWS])
def test_upstream_fit_scores(strategy, resources, shape, incoming, existing, nodes, want):
    plugin = NodeResourcesFit(FitArgs(strategy=strategy, resources=resources, shape=shape))
    got = {ni.name: plugin.score(incoming, ni) for ni in infos(nodes, existing)}
    assert got == want


def cpu_and_memory(node_name=""):
    """``st.MakePod().Req(cpuAndMemory("1000m", "2000")).Req(cpuAndMemory("2000m", "3000"))``."""
    return pod("cm", container({"cpu": "1000m", "memory": "2000"}), container({"cpu": "2000m", "memory": "3000"}),
               node_name=node_name)


def cpu_only(node_name=""):
    """``st.MakePod().Req(cpuOnly("1000m")).Req(cpuOnly("2000m"))`` (no memory key at all)."""
    return pod("co", container({"cpu": "1000m"}), container({"cpu": "2000m"}), node_name=node_name)


def cpu_memory_gpu(node_name=""):
    return pod("cmg", container({"cpu": "1000m", "memory": "2000"}),
               container({"cpu": "2000m", "memory": "3000", "nvidia.com/gpu": "3"}), node_name=node_name)


GPU8 = {"nvidia.com/gpu": 8}
WITH_GPU = {"cpu": 1, "memory": 1, "nvidia.com/gpu": 1}
# balanced_allocation_test.go v1.37.2: score = 50 + (50 + with_pod - without_pod) // 2, each int((1-std)*100).
# The last column says whether PreScore runs first (upstream's runPreScore).
BALANCED_ROWS = [
    # node1 cpu 0 -> 3000/4000, mem 0 -> 5000/10000: 100 -> 87 = 68; node2 .5/.5: 100 -> 100 = 75
    ("nothing scheduled, resources requested, differently sized nodes", CPU_MEM, cpu_and_memory(), [],
     [mk("node1", 4000, 10000), mk("node2", 6000, 10000)], {"node1": 68, "node2": 75}, True),
    # node1 cpu 30% -> 60%, mem 0 -> 25%: 85 -> 82 = 73; node2 30/25% -> 60/50%: 97 -> 95 = 74
    ("resources requested, pods scheduled with resources", CPU_MEM, cpu_and_memory(),
     [cpu_only("node1"), cpu_and_memory("node2")], [mk("node1", 10000, 20000), mk("node2", 10000, 20000)],
     {"node1": 73, "node2": 74}, True),
    # node2 mem 10% -> 20%: 90 -> 80 = 70
    ("resources requested, pods scheduled with resources, differently sized nodes", CPU_MEM, cpu_and_memory(),
     [cpu_only("node1"), cpu_and_memory("node2")], [mk("node1", 10000, 20000), mk("node2", 10000, 50000)],
     {"node1": 73, "node2": 70}, True),
    # node1 cpu 100%, mem 0 -> 100%: 50 -> 100 = 100; node2 cpu 0, mem 0 -> 100%: 100 -> 50 = 50
    ("resources requested, pods scheduled with resources, nodes to reach min/max score", CPU_MEM,
     req_pod("p", {"memory": "2000"}, {"memory": "3000"}), [cpu_only("node1")],
     [mk("node1", 3000, 5000), mk("node2", 3000, 5000)], {"node1": 100, "node2": 50}, True),
    # node1 cpu 50% -> 100%, mem 0: 75 -> 50 = 62; node2 cpu 50% -> 100%, mem 50%: 100 -> 75 = 62
    ("requested resources at node capacity", CPU_MEM, cpu_only(),
     [cpu_only("node1"), cpu_and_memory("node2")], [mk("node1", 6000, 10000), mk("node2", 6000, 10000)],
     {"node1": 62, "node2": 62}, True),
    # node1 cpu 3000/3500, mem 5000/40000, gpu 3 -> 4 of 8: 69 -> 70 = 75; node2 gpu 0 -> 1: 62 -> 65 = 76
    ("scalar resource is included in the score computation if pod requests the scalar resource", WITH_GPU,
     req_pod("p", {"cpu": "0", "memory": "0", "nvidia.com/gpu": "1"}),
     [cpu_memory_gpu("node1"), cpu_and_memory("node2")],
     [mk("node1", 3500, 40000, GPU8), mk("node2", 3500, 40000, GPU8)], {"node1": 75, "node2": 76}, True),
    # the GPU is not requested, so bypassed: .857 vs .125 from empty nodes: 100 -> 63 = 56 on both
    ("scalar resource is not included in the score computation if pod doesn't request the scalar resource",
     WITH_GPU, cpu_and_memory(), [], [mk("node1", 3500, 40000, GPU8), mk("node2", 3500, 40000)],
     {"node1": 56, "node2": 56}, True),
    ("resources requested, pods scheduled with resources if PreScore not called", CPU_MEM, cpu_and_memory(),
     [cpu_only("node1"), cpu_and_memory("node2")], [mk("node1", 10000, 20000), mk("node2", 10000, 20000)],
     {"node1": 73, "node2": 74}, False),
]


@pytest.mark.parametrize("resources,incoming,existing,nodes,want,run_pre_score", [r[1:] for r in BALANCED_ROWS],
                         ids=[r[0] for r in BALANCED_ROWS])
def test_upstream_balanced_scores(resources, incoming, existing, nodes, want, run_pre_score):
    plugin = NodeResourcesBalancedAllocation(BalancedArgs(resources))
    node_infos = infos(nodes, existing)
    if run_pre_score:
        assert plugin.pre_score(incoming, node_infos).is_success
    assert {ni.name: plugin.score(incoming, ni) for ni in node_infos} == want


def test_balanced_skips_best_effort_pod():
    # upstream "nothing scheduled, nothing requested, skip in PreScore" (v1.33+)
    plugin = NodeResourcesBalancedAllocation(BalancedArgs(CPU_MEM))
    assert plugin.pre_score(pod(), infos([mk("node1", 4000, 10000)])).code is Code.SKIP
