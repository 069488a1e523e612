"""Scheduling, side by side: the embedded scheduler against the real kube-scheduler on the same scenarios.

Sections: upstream's NodeResourcesFit unit tables as live clusters ("tables"), the product's own stories
("stories": the seed 4x2 story, the workshop spec with MIG and time-sliced resources, the labs' pods,
taints, tolerations, node affinity), and 200 random clusters and pod sequences drawn by hypothesis with a
fixed seed ("random"). Every difference must be fixed or listed in known_differences.py with its reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conformance_harness import Scenario, make_node, make_pod, run_scenario
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mockgpu.config import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.control.kubelet.nodestatus import node_labels
from mockgpu.deviceplugin.resources import resource_managers

ROOT = Path(__file__).resolve().parents[2]
GPU = "nvidia.com/gpu"
AAA, FOO, BAR = "example.com/aaa", "intel.com/foo", "intel.com/bar"
MEM = 10000 * 1024 * 1024


def _check(report, section, sides, sc: Scenario) -> list[str]:
    emb, up = sides
    open_ = []
    for r in run_scenario(emb, up, sc):
        case = f"{sc.name} / {r.pod}"
        for kind, detail in report.add(section, case, [(d.kind, d.detail) for d in r.differences]):
            open_.append(f"{case}: {kind}: {detail}")
    return open_


# -- upstream's tables, live ------------------------------------------------------------------------
def two(prefix, a1, a2):
    return [make_node(f"{prefix}-node1", a1), make_node(f"{prefix}-node2", a2)]


TWO_CONTAINERS = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
CPU_ONLY = ({"cpu": "1000", "memory": "0"}, {"cpu": "2000", "memory": "0"})


def table_rows() -> list[Scenario]:
    """(name, profile, nodes, existing [(node suffix, containers)], incoming containers), from
    least_allocated_test.go, most_allocated_test.go and requested_to_capacity_ratio_test.go (v1.37.2)."""
    rows = [
        ("LA differently sized nodes", "default-scheduler", ({"cpu": 4000, "memory": 10000},
                                                             {"cpu": 6000, "memory": 10000}), [], TWO_CONTAINERS),
        ("LA no requests, pods scheduled with resources", "default-scheduler",
         ({"cpu": 10000, "memory": 20000}, {"cpu": 10000, "memory": 20000}),
         [("node1", CPU_ONLY), ("node2", TWO_CONTAINERS)], (None,)),
        ("LA requested, pods scheduled with resources", "default-scheduler",
         ({"cpu": 10000, "memory": 20000}, {"cpu": 10000, "memory": 50000}),
         [("node1", CPU_ONLY), ("node2", TWO_CONTAINERS)], TWO_CONTAINERS),
        ("LA extended resource weight 2", "least-allocated-ext",
         ({"cpu": 6000, "memory": 10000}, {"cpu": 6000, "memory": 10000, AAA: 4}), [],
         ({"cpu": "3000", "memory": "4000", AAA: "2"},)),
        ("MA differently sized nodes", "most-allocated", ({"cpu": 4000, "memory": 10000},
                                                          {"cpu": 6000, "memory": 10000}), [], TWO_CONTAINERS),
        ("MA pods scheduled with resources", "most-allocated",
         ({"cpu": 10000, "memory": 20000}, {"cpu": 10000, "memory": 20000}),
         [("node1", CPU_ONLY), ("node2", TWO_CONTAINERS)], TWO_CONTAINERS),
        ("MA node without the extended resource", "most-allocated-ext",
         ({"cpu": 6000, "memory": 10000}, {"cpu": 6000, "memory": 10000, AAA: 4}), [],
         ({"cpu": "3000", "memory": "4000"},)),
        ("RTCR (0,10),(100,0) two containers, differently sized nodes", "rtcr-least",
         ({"cpu": 4000, "memory": 10000}, {"cpu": 6000, "memory": 10000}), [], TWO_CONTAINERS),
        ("RTCR (0,10),(100,0) no requests, pods scheduled with resources", "rtcr-least",
         ({"cpu": 4000, "memory": 10000}, {"cpu": 6000, "memory": 10000}),
         [("node1", ({"cpu": "3000", "memory": "5000"},)), ("node2", ({"cpu": "3000", "memory": "5000"},))],
         (None,)),
        ("RTCR binpack foo, requested", "rtcr-binpack-foo",
         ({"cpu": "4000m", "memory": MEM, FOO: 8}, {"cpu": "4000m", "memory": MEM, FOO: 4}), [], ({FOO: "2"},)),
        ("RTCR binpack foo, existing pod on node2", "rtcr-binpack-foo",
         ({"cpu": "4000m", "memory": MEM, FOO: 8}, {"cpu": "4000m", "memory": MEM, FOO: 4}),
         [("node2", ({FOO: "2"},))], ({FOO: "2"},)),
        ("RTCR binpack foo, more resources", "rtcr-binpack-foo",
         ({"cpu": "4000m", "memory": MEM, FOO: 8}, {"cpu": "4000m", "memory": MEM, FOO: 4}), [], ({FOO: "4"},)),
        ("RTCR binpack foo+bar", "rtcr-binpack-foobar",
         ({"cpu": "4000m", "memory": MEM, FOO: 8, BAR: 4}, {"cpu": "4000m", "memory": MEM, FOO: 4, BAR: 8}), [],
         ({FOO: "2", BAR: "2"},)),
        ("RTCR binpack foo+bar, more resources", "rtcr-binpack-foobar",
         ({"cpu": "4000m", "memory": MEM, FOO: 8, BAR: 4}, {"cpu": "4000m", "memory": MEM, FOO: 4, BAR: 8}), [],
         ({FOO: "4", BAR: "2"},)),
        ("RTCR three-point shape, GPUs", "rtcr-gpu-binpack",
         ({"cpu": 32, "memory": "256Gi", GPU: 8}, {"cpu": 32, "memory": "256Gi", GPU: 4}),
         [("node1", ({GPU: "3", "cpu": "4"},))], ({GPU: "2", "cpu": "2", "memory": "8Gi"},)),
    ]
    out = []
    for i, (name, profile, (a1, a2), existing, incoming) in enumerate(rows):
        p = f"t{i:02d}"
        pods = [make_pod(f"{p}-e{j}", *cs, node_name=f"{p}-{n}") for j, (n, cs) in enumerate(existing)]
        pods.append(make_pod(f"{p}-in", *incoming, scheduler=profile))
        out.append(Scenario(f"{p} {name}", two(p, a1, a2), pods, "tables"))
    return out


@pytest.mark.parametrize("scenario", table_rows(), ids=lambda s: s.name)
def test_upstream_tables_live(report, sides, scenario):
    open_ = _check(report, "tables", sides, scenario)
    assert not open_, "\n".join(open_)


# -- the product's stories ---------------------------------------------------------------------------
def spec_nodes(spec_file: str, prefix: str) -> list[dict]:
    """A spec's nodes as the device plugin advertises them (whole, MIG and time-sliced resources)."""
    spec = load_spec(ROOT / spec_file)
    out = []
    for node in spec.nodes():
        alloc = {"cpu": node.cpu, "memory": node.memory}
        if node.gpu is not None and node.gpu.count:
            for rm in resource_managers(node_inventory(spec, node.name), node.gpu.devicePluginConfig):
                alloc[rm.resource] = len(rm.devices())
        taints = [{k: v for k, v in t.model_dump().items() if v != ""} for t in node.taints]
        out.append(make_node(f"{prefix}-{node.name}", alloc, labels=node_labels(spec, node), taints=taints))
    return out


def gpu_pod(name, gpus, scheduler="default-scheduler", resource=GPU, **spec):
    return make_pod(name, {resource: str(gpus)}, scheduler=scheduler, limits=True, **spec)


def stories() -> list[Scenario]:
    seed = lambda p: spec_nodes("clusters/seed-4x2.yaml", p)  # noqa: E731
    out = [
        Scenario("s01 seed story: four 1-GPU workers spread, then a 4-GPU trainer", seed("s01"),
                 [*(gpu_pod(f"s01-w{i}", 1) for i in range(4)), gpu_pod("s01-trainer", 4)]),
        Scenario("s02 seed story: 3 workers, a 2-GPU pod, then a 4-GPU trainer (No preemption victims)",
                 seed("s02"), [*(gpu_pod(f"s02-w{i}", 1) for i in range(3)), gpu_pod("s02-pair", 2),
                               gpu_pod("s02-trainer", 4)]),
        Scenario("s03 lab 03: bin-packing four 1-GPU pods", seed("s03"),
                 [gpu_pod(f"s03-b{i}", 1, "bin-packing") for i in range(4)]),
        Scenario("s04 lab 03: spreading four 1-GPU pods", seed("s04"),
                 [gpu_pod(f"s04-s{i}", 1, "spreading") for i in range(4)]),
        Scenario("s05 lab 03: bin-packing leaves a whole node for a 2-GPU job", seed("s05"),
                 [*(gpu_pod(f"s05-b{i}", 1, "bin-packing") for i in range(6)), gpu_pod("s05-job", 2, "bin-packing")]),
        Scenario("s06 workshop: whole, MIG and time-sliced resources", spec_nodes("clusters/workshop.yaml", "s06"),
                 [gpu_pod("s06-whole", 2), gpu_pod("s06-mig1", 1, resource="nvidia.com/mig-1g.10gb"),
                  gpu_pod("s06-mig3", 1, resource="nvidia.com/mig-3g.40gb"),
                  gpu_pod("s06-mig3b", 1, resource="nvidia.com/mig-3g.40gb"),
                  *(gpu_pod(f"s06-ts{i}", 1) for i in range(8)), gpu_pod("s06-too-many", 3)]),
        Scenario("s07 lab 07: time-sliced replicas fill, the next pod waits",
                 spec_nodes("clusters/workshop.yaml", "s07"),
                 [gpu_pod(f"s07-p{i}", 2) for i in range(7)]),
        Scenario("s08 taint without toleration", [
            make_node("s08-a", {"cpu": 8, "memory": "32Gi", GPU: 2},
                      taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]),
            make_node("s08-b", {"cpu": 8, "memory": "32Gi"})], [gpu_pod("s08-p", 1)]),
        Scenario("s09 taint with toleration", [
            make_node("s09-a", {"cpu": 8, "memory": "32Gi", GPU: 2},
                      taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]),
            make_node("s09-b", {"cpu": 8, "memory": "32Gi", GPU: 2})],
            [gpu_pod("s09-p", 1, tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists",
                                               "effect": "NoSchedule"}])]),
        Scenario("s10 PreferNoSchedule taints score", [
            make_node("s10-a", {"cpu": 8, "memory": "32Gi", GPU: 2},
                      taints=[{"key": "dedicated", "value": "x", "effect": "PreferNoSchedule"}]),
            make_node("s10-b", {"cpu": 8, "memory": "32Gi", GPU: 2}),
            make_node("s10-c", {"cpu": 8, "memory": "32Gi", GPU: 2},
                      taints=[{"key": "dedicated", "value": "x", "effect": "PreferNoSchedule"},
                              {"key": "other", "value": "y", "effect": "PreferNoSchedule"}])],
            [gpu_pod("s10-p", 1), gpu_pod("s10-q", 1)]),
        Scenario("s11 nodeSelector matches no node", [
            make_node("s11-a", {"cpu": 8, "memory": "32Gi", GPU: 2}, labels={"gpu": "a100"}),
            make_node("s11-b", {"cpu": 8, "memory": "32Gi", GPU: 2}, labels={"gpu": "h100"})],
            [gpu_pod("s11-p", 1, nodeSelector={"gpu": "l4"}), gpu_pod("s11-q", 1, nodeSelector={"gpu": "h100"})]),
        Scenario("s12 preferred node affinity scores", [
            make_node(f"s12-{c}", {"cpu": 8, "memory": "32Gi", GPU: 2}, labels={"zone": c}) for c in "abc"],
            [gpu_pod("s12-p", 1, affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 80, "preference": {"matchExpressions": [{"key": "zone", "operator": "In",
                                                                    "values": ["b"]}]}},
                {"weight": 20, "preference": {"matchExpressions": [{"key": "zone", "operator": "In",
                                                                    "values": ["c"]}]}}]}})]),
        Scenario("s13 cordoned node and too-small nodes", [
            make_node("s13-a", {"cpu": 8, "memory": "32Gi", GPU: 8}, unschedulable=True),
            make_node("s13-b", {"cpu": 2, "memory": "32Gi", GPU: 8}),
            make_node("s13-c", {"cpu": 8, "memory": "32Gi", GPU: 1})],
            [make_pod("s13-p", {GPU: "2", "cpu": "4"}, limits=True)]),
        Scenario("s14 required affinity, taint and resources together", [
            make_node("s14-a", {"cpu": 8, "memory": "32Gi", GPU: 2}, labels={"pool": "train"},
                      taints=[{"key": "team", "value": "x", "effect": "NoSchedule"}]),
            make_node("s14-b", {"cpu": 8, "memory": "32Gi", GPU: 2}, labels={"pool": "infer"}),
            make_node("s14-c", {"cpu": 8, "memory": "32Gi", GPU: 1}, labels={"pool": "train"})],
            [gpu_pod("s14-p", 2, affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In",
                                                              "values": ["train"]}]}]}}})]),
    ]
    for s in out:
        s.section = "stories"
    return out


@pytest.mark.parametrize("scenario", stories(), ids=lambda s: s.name.split(" ")[0])
def test_stories(report, sides, scenario):
    open_ = _check(report, "stories", sides, scenario)
    assert not open_, "\n".join(open_)


# -- random clusters ---------------------------------------------------------------------------------
PROFILES = ("default-scheduler", "bin-packing", "spreading", "most-allocated", "rtcr-least", "rtcr-gpu-binpack")
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@st.composite
def random_scenario(draw) -> tuple[list, list]:
    n_nodes = draw(st.integers(2, 6))
    nodes = []
    for _ in range(n_nodes):
        gpus = draw(st.sampled_from([0, 1, 2, 4, 8]))
        alloc = {"cpu": draw(st.sampled_from([4, 8, 16, 32, 64])),
                 "memory": f"{draw(st.sampled_from([16, 64, 256, 512]))}Gi"}
        if gpus:
            alloc[GPU] = gpus
        labels = {"zone": draw(st.sampled_from(["a", "b"]))}
        taints = [TAINT] if gpus and draw(st.booleans()) else None
        nodes.append((alloc, labels, taints))
    pods = []
    for _ in range(draw(st.integers(1, 7))):
        req: dict[str, str] = {}
        gpus = draw(st.sampled_from([0, 1, 1, 2, 4, 8]))
        if gpus:
            req[GPU] = str(gpus)
        if draw(st.booleans()):
            req["cpu"] = draw(st.sampled_from(["500m", "1", "2", "8", "30"]))
        if draw(st.booleans()):
            req["memory"] = draw(st.sampled_from(["1Gi", "8Gi", "64Gi", "300Gi"]))
        spec: dict = {}
        if draw(st.booleans()):
            spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        if draw(st.integers(0, 4)) == 0:
            spec["nodeSelector"] = {"zone": draw(st.sampled_from(["a", "b"]))}
        pods.append((req, draw(st.sampled_from(PROFILES)), spec))
    return nodes, pods


def build_random(i: int, drawn) -> Scenario:
    nodes, pods = drawn
    p = f"r{i:03d}"
    return Scenario(f"{p} random", [make_node(f"{p}-n{j}", a, labels=lb, taints=t) for j, (a, lb, t) in
                                     enumerate(nodes)],
                    [make_pod(f"{p}-p{k}", req or None, scheduler=prof, limits=GPU in req, **spec)
                     for k, (req, prof, spec) in enumerate(pods)], "random")


RANDOM_EXAMPLES = int(os.environ.get("MOCKGPU_CONFORMANCE_RANDOM", "200"))  # fewer only for a quick local look


def test_random_clusters(report, sides):
    open_: list[str] = []
    count = [0]

    @settings(max_examples=RANDOM_EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(random_scenario())
    def run(drawn):
        sc = build_random(count[0], drawn)
        count[0] += 1
        open_.extend(_check(report, "random", sides, sc))

    run()
    assert count[0] >= RANDOM_EXAMPLES, f"hypothesis generated only {count[0]} scenarios"
    assert not open_, f"{len(open_)} unexplained differences:\n" + "\n".join(open_[:40])
