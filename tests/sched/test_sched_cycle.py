"""One scheduling cycle end to end: filters, scores, selection, FailedScheduling, preemption, annotations."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from sched_builders import container, node, pod

from mockgpu.sched.config import default_config, load_config
from mockgpu.sched.cycle import annotations, num_feasible_nodes_to_find, schedule_one
from mockgpu.sched.select import heap_order, select_host
from mockgpu.sched.snapshot import NodeInfo

CLUSTERS = Path(__file__).resolve().parents[2] / "clusters" / "scheduler"
GPU_NODE = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": 2}
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def gpu_pod(name, gpus, *, node_name="", cpu="1", memory="1Gi", **spec):
    return pod(name, container({"cpu": cpu, "memory": memory, "nvidia.com/gpu": gpus}), node_name=node_name, **spec)


def seed_cluster(placed):
    """4 nodes × 2 GPUs (clusters/seed-4x2.yaml) with ``placed`` pods (``spec.nodeName`` set)."""
    nodes = [node(f"gpu-{i}", GPU_NODE, pods="110") for i in range(1, 5)]
    return [NodeInfo.from_node(n, [p for p in placed if p["spec"]["nodeName"] == n["metadata"]["name"]])
            for n in nodes]


def default_profile():
    return default_config().profiles["default-scheduler"]


UNSCHEDULABLE_ROWS = [
    # the seed article: two 1-GPU pods on different nodes, a 4-GPU pod. 4 > 2 allocatable on every node, so
    # (v1.34+) the shortfall is unresolvable and preemption is "not helpful".
    ("seed: 4-GPU pod on 4x2 with two 1-GPU pods", [gpu_pod("a", 1, node_name="gpu-1"),
                                                    gpu_pod("b", 1, node_name="gpu-2")], gpu_pod("big", 4),
     "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: "
     "4 Preemption is not helpful for scheduling."),
    # every GPU in use by priority-0 pods: a 1-GPU pod could fit an empty node, but there are no victims
    ("all GPUs in use, equal priority", [gpu_pod(f"p{i}", 1, node_name=f"gpu-{i % 4 + 1}") for i in range(8)],
     gpu_pod("one", 1),
     "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: "
     "4 No preemption victims found for incoming pod."),
    ("preemptionPolicy Never", [gpu_pod(f"p{i}", 1, node_name=f"gpu-{i % 4 + 1}") for i in range(8)],
     gpu_pod("one", 1, preemptionPolicy="Never"),
     "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: not eligible due to "
     "preemptionPolicy=Never."),
    # removing the lower-priority pod frees 1 GPU but 2 are needed on that node: the filter reason is reported
    ("victims not enough", [gpu_pod("hi", 1, node_name="gpu-1", priority=100),
                            gpu_pod("lo", 1, node_name="gpu-1", priority=0)]
     + [gpu_pod(f"p{i}", 2, node_name=f"gpu-{i}", priority=100) for i in (2, 3, 4)],
     gpu_pod("two", 2, priority=50),
     "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: "
     "1 Insufficient nvidia.com/gpu, 3 No preemption victims found for incoming pod."),
]


@pytest.mark.parametrize("placed,incoming,want", [r[1:] for r in UNSCHEDULABLE_ROWS],
                         ids=[r[0] for r in UNSCHEDULABLE_ROWS])
def test_failed_scheduling_message(placed, incoming, want):
    res = schedule_one(incoming, seed_cluster(placed), default_profile(), random.Random(1))
    assert not res.scheduled
    assert res.message == want


def test_mixed_cluster_message():
    """The reference's 6-node example: control plane, a CPU node, four full GPU nodes."""
    cp = NodeInfo.from_node(node("cp", {"cpu": "4"}, taints=[CONTROL_PLANE_TAINT]))
    cpu_node = NodeInfo.from_node(node("cpu-1", {"cpu": "16", "memory": "64Gi"}))
    gpus = [NodeInfo.from_node(node(f"g{i}", GPU_NODE, labels={"gpu": "true"}),
                               [gpu_pod(f"x{i}", 2, node_name=f"g{i}")]) for i in range(4)]
    res = schedule_one(gpu_pod("job", 1, nodeSelector={"gpu": "true"}), [cp, cpu_node, *gpus], default_profile(),
                       random.Random(0))
    assert res.message == (
        "0/6 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated "
        "taint(s), 4 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are "
        "available: 2 Preemption is not helpful for scheduling, 4 No preemption victims found for incoming pod.")
    # the first failing filter decides: the tainted node never reaches NodeResourcesFit
    assert res.filter_results["cp"] == {"NodeName": "passed", "NodeUnschedulable": "passed",
                                        "TaintToleration": "node(s) had untolerated taint(s)"}


def test_node_name_filter_runs_before_node_unschedulable():
    # v1.37.2's default order: a pod bound by name to another node is rejected by NodeName on a cordoned node
    cordoned = NodeInfo.from_node(node("gpu-9", GPU_NODE, unschedulable=True))
    res = schedule_one(gpu_pod("pinned", 1, nodeName="gpu-1"), [cordoned], default_profile(), random.Random(0))
    assert res.filter_results["gpu-9"] == {"NodeName": "node(s) didn't match the requested node name"}


def test_preemption_nominates_node_and_victims():
    placed = [gpu_pod(f"p{i}", 2, node_name=f"gpu-{i}", priority=10) for i in (1, 2, 3)]
    placed += [gpu_pod("lo", 1, node_name="gpu-4", priority=0), gpu_pod("hi", 1, node_name="gpu-4", priority=100)]
    res = schedule_one(gpu_pod("urgent", 1, priority=50), seed_cluster(placed), default_profile(), random.Random(0))
    # gpu-4 only: victims with priority 0 (< 50); the 10-priority pods on gpu-1..3 are also lower, but
    # upstream prefers the candidate whose most important victim has the lowest priority (0 < 10)
    assert (res.nominated_node, res.victims) == ("gpu-4", ["default/lo"])
    # v1.37.2: the successful preemption's post-filter message ends the FailedScheduling text
    assert res.message == ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: found a potential "
                           "placement for pod on node gpu-4, preempting 1 victims")


def test_one_feasible_node_is_chosen_without_scoring():
    placed = [gpu_pod(f"p{i}", 2, node_name=f"gpu-{i}") for i in (1, 2, 3)]
    res = schedule_one(gpu_pod("x", 1), seed_cluster(placed), default_profile(), random.Random(0))
    assert res.selected_node == "gpu-4" and res.raw_scores == {} and res.feasible == ["gpu-4"]


def place_sequentially(profile, count, seed):
    nodes = seed_cluster([])
    rng = random.Random(seed)
    for i in range(count):
        p = gpu_pod(f"w{i}", 1)
        res = schedule_one(p, nodes, profile, rng)
        target = next(n for n in nodes if n.name == res.selected_node)
        target.add_pod({**p, "spec": {**p["spec"], "nodeName": target.name}})
    return sorted(n.pod_count for n in nodes if n.pod_count)


PLACEMENT_ROWS = [
    ("binpack packs four 1-GPU pods onto two nodes", "binpack.yaml", "bin-packing", [2, 2]),
    ("spread puts four 1-GPU pods on four nodes", "spread.yaml", "spreading", [1, 1, 1, 1]),
    ("default spreads too (cpu/memory LeastAllocated)", "default.yaml", "default-scheduler", [1, 1, 1, 1]),
    ("workshop bin-packing profile packs", "workshop.yaml", "bin-packing", [2, 2]),
]


@pytest.mark.parametrize("config,profile,want", [r[1:] for r in PLACEMENT_ROWS], ids=[r[0] for r in PLACEMENT_ROWS])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sequential_placement(config, profile, want, seed):
    prof = load_config(CLUSTERS / config).profiles[profile]
    assert place_sequentially(prof, 4, seed) == want


def test_scores_and_annotations():
    placed = [gpu_pod("a", 1, node_name="gpu-1")]
    prof = load_config(CLUSTERS / "binpack.yaml").profiles["bin-packing"]
    res = schedule_one(gpu_pod("x", 1), seed_cluster(placed), prof, random.Random(0))
    assert res.selected_node == "gpu-1"
    # gpu-1: cpu 2000/32000 -> 6, memory 2Gi/256Gi -> 0, gpu 2/2 -> 100: (6 + 0 + 5*100) // 7 = 72
    assert res.raw_scores["gpu-1"]["NodeResourcesFit"] == 72
    # gpu-2: cpu 3, memory 0, gpu 1/2 -> 50: (3 + 0 + 250) // 7 = 36
    assert res.raw_scores["gpu-2"]["NodeResourcesFit"] == 36
    # TaintToleration: no taints anywhere -> reversed normalize gives 100 each, weight 3
    assert res.final_scores["gpu-2"]["TaintToleration"] == 300
    ann = annotations(res)
    assert json.loads(ann["mockgpu.io/filter-result"])["gpu-3"]["NodeResourcesFit"] == "passed"
    assert json.loads(ann["mockgpu.io/score-result"])["gpu-1"]["NodeResourcesFit"] == "72"
    final = json.loads(ann["mockgpu.io/finalscore-result"])
    assert sum(int(v) for v in final["gpu-1"].values()) == res.totals["gpu-1"]
    assert ann["mockgpu.io/selected-node"] == "gpu-1"


def test_unschedulable_annotation_lists_reasons():
    placed = [gpu_pod(f"p{i}", 2, node_name=f"gpu-{i}") for i in (1, 2, 3, 4)]
    res = schedule_one(gpu_pod("x", 1), seed_cluster(placed), default_profile(), random.Random(0))
    table = json.loads(annotations(res)["mockgpu.io/filter-result"])
    assert table["gpu-1"]["NodeResourcesFit"] == "Insufficient nvidia.com/gpu"
    assert "mockgpu.io/selected-node" not in annotations(res)


SELECT_ROWS = [
    # schedule_one_test.go Test_SelectHost / sorted_nodes_test.go v1.37.2, with every Randomizer 0 (no extenders)
    ("unique properly ordered scores", [("node1", 1), ("node2", 2)], "node2"),
    ("descending by TotalScore", [("node1", 1), ("node3", 3), ("node2", 2)], "node3"),
    # ties: heap.Init leaves the first of the tied maxima at the root when nothing outranks it
    ("equal scores", [("a", 10), ("b", 10), ("c", 10), ("d", 5)], "a"),
    # [d5, b9, c7, a9] -> heap.Init sifts b9 up over d5: the root is b
    ("tie decided by heap layout", [("d", 5), ("b", 9), ("c", 7), ("a", 9)], "b"),
]


@pytest.mark.parametrize("scores,want", [r[1:] for r in SELECT_ROWS], ids=[r[0] for r in SELECT_ROWS])
def test_select_host_is_the_first_heap_pop(scores, want):
    assert select_host(scores) == want
    # no random draw decides a tie in v1.37.2: every seed gives the same node
    assert {select_host(scores, random.Random(seed)) for seed in range(50)} == {want}


def test_heap_order_matches_go_container_heap():
    # heap.Init on [a5, b9, c7, d9] (max-heap): [b9, a5, c7, d9] -> sift: [b9, d9, c7, a5]; pops: b, d, c, a
    assert [n for n, _ in heap_order([("a", 5), ("b", 9), ("c", 7), ("d", 9)])] == ["b", "d", "c", "a"]


FEASIBLE_ROWS = [("50 nodes: all", 50, None, 50), ("100 nodes adaptive 49% -> at least 100", 100, None, 100),
                 ("1000 nodes adaptive 42%", 1000, None, 420), ("5000 nodes adaptive 10%", 5000, None, 500),
                 ("10000 nodes adaptive floor 5%", 10000, None, 500), ("1000 nodes at 100%", 1000, 100, 1000),
                 ("1000 nodes at 5% -> at least 100", 1000, 5, 100)]


@pytest.mark.parametrize("n,pct,want", [r[1:] for r in FEASIBLE_ROWS], ids=[r[0] for r in FEASIBLE_ROWS])
def test_num_feasible_nodes_to_find(n, pct, want):
    assert num_feasible_nodes_to_find(n, pct) == want


def test_no_nodes_at_all():
    res = schedule_one(gpu_pod("x", 1), [], default_profile(), random.Random(0))
    assert (res.scheduled, res.message) == (False, "no nodes available to schedule pods")


def test_too_many_pods_end_to_end():
    full = NodeInfo.from_node(node("n1", {"cpu": "4"}, pods="1"), [pod("old", node_name="n1")])
    res = schedule_one(pod("new"), [full], default_profile(), random.Random(0))
    assert res.message == ("0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: "
                           "1 No preemption victims found for incoming pod.")


def test_round_robin_start_index_and_single_feasible_search_without_scorers():
    nodes = seed_cluster([])
    prof = default_profile()
    res = schedule_one(gpu_pod("x", 1), nodes, prof, random.Random(0), start_index=2)
    assert list(res.filter_results) == ["gpu-3", "gpu-4", "gpu-1", "gpu-2"] and res.next_start_index == 2
    # a profile without score plugins stops at the first feasible node (upstream numFeasibleNodesToFind = 1)
    no_score = type(prof)(scheduler_name="f", filters=prof.filters, scorers=[])
    res = schedule_one(gpu_pod("x", 1), nodes, no_score, random.Random(0), start_index=1)
    assert (res.feasible, res.selected_node, res.next_start_index) == (["gpu-2"], "gpu-2", 2)


def test_skipped_score_plugins_are_absent_from_the_scores():
    # NodeAffinity (no preferred terms) and BalancedAllocation (best-effort pod) return Skip from PreScore
    res = schedule_one(pod("be", container()), seed_cluster([]), default_profile(), random.Random(0))
    assert all(set(s) == {"TaintToleration", "NodeResourcesFit"} for s in res.raw_scores.values()), res.raw_scores


NOMINATED_ROWS = [
    # gpu-1 holds one 1-GPU pod; a 1-GPU pod of priority 100 is nominated there (not bound yet). The incoming
    # 1-GPU pod fits gpu-1 only if the nominated pod is not counted.
    ("lower priority pod: the nominated pod counts in Filter", 0, False),
    ("equal priority pod: counts too", 100, False),
    ("higher priority pod: the nominated pod is ignored", 1000, True),
]


@pytest.mark.parametrize("priority,fits_gpu1", [r[1:] for r in NOMINATED_ROWS], ids=[r[0] for r in NOMINATED_ROWS])
def test_nominated_pods_count_in_filter(priority, fits_gpu1):
    nodes = seed_cluster([gpu_pod("a", 1, node_name="gpu-1")])
    nominated = {"gpu-1": [gpu_pod("vip", 1, priority=100)]}
    res = schedule_one(gpu_pod("x", 1, priority=priority), nodes, default_profile(), random.Random(0),
                       nominated=nominated)
    assert ("gpu-1" in res.feasible) is fits_gpu1
    if not fits_gpu1:
        assert res.filter_results["gpu-1"]["NodeResourcesFit"] == "Insufficient nvidia.com/gpu"


def test_nominated_pod_does_not_change_scores():
    nodes = seed_cluster([gpu_pod("a", 1, node_name="gpu-1")])
    big = {"gpu-2": [pod("vip", container({"cpu": "16", "memory": "128Gi"}), priority=100)]}
    plain = schedule_one(gpu_pod("x", 1), nodes, default_profile(), random.Random(0))
    with_nominated = schedule_one(gpu_pod("x", 1), nodes, default_profile(), random.Random(0), nominated=big)
    assert with_nominated.feasible == plain.feasible and with_nominated.raw_scores == plain.raw_scores
