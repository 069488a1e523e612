"""Each policy on a tiny hand-made cluster, with the expected placement worked out by hand.

Cluster (all T4): n0 = 32 cores, 64 GiB, 2 GPUs; n1 = same with 4 GPUs; n2 = same as n0.
Already running on n1: a 500-milli share on GPU 0 (4 cores, 8 GiB) -> n1 GPUs [500, 1000, 1000, 1000],
CPU left 28000. Incoming: a 300-milli share with 2 cores and 4 GiB.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from sim_builders import dist, nodes, pods

from mockgpu.sched.strategies import least_allocated, most_allocated
from mockgpu.sim.cluster import ClusterState, PodShape
from mockgpu.sim.engine import run_seed
from mockgpu.sim.policies import make_policy
from mockgpu.sim.policy import as_policy, choose_node

# FGD's task distribution for this test: half 500-milli shares, half whole GPUs (1 core each).
DIST = dist((1000, 500, 1, 0.5), (1000, 1000, 1, 0.5))
INCOMING = PodShape(cpu_milli=2000, memory_mib=4096, num_gpu=1, gpu_milli=300)


def cluster() -> ClusterState:
    state = ClusterState(nodes((32000, 65536, 2, "T4"), (32000, 65536, 4, "T4"), (32000, 65536, 2, "T4")))
    state.place(PodShape(4000, 8192, 1, 500), 1, (0,))
    return state


def place(policy_name: str, seed: int = 0) -> tuple[int, tuple[int, ...]]:
    state, policy = cluster(), make_policy(policy_name, DIST)
    rng = np.random.default_rng(seed)
    feasible = state.feasible(INCOMING)
    scores = np.asarray(policy.score(state, INCOMING, feasible, rng))
    n = choose_node(scores, feasible, rng, getattr(policy, "tie_break", "name"), state.name_rank)
    return n, policy.gpus(state, INCOMING, n, rng)


CASES = [
    # best-fit raw = int(100 * (1 - (cpu_left-2000)/128000*0.5 - (gpu_left-300)/8000*0.5)):
    #   n0: 1 - 0.1171875 - 0.10625 -> 77; n1: 1 - 0.1015625 - 0.2 -> 69; n2: 77.
    #   Tie n0/n2 -> the node whose name sorts first: n0; both GPUs free -> GPU 0.
    ("best-fit", 0, (0,)),
    # dot-product = int(100 * (1 - (cpu_left/128000 * 2000/128000 + gpu_left/8000 * 300/8000) / 2)):
    #   n0: 1 - 0.00664 -> 99; n1: 1 - 0.00991 -> 99; n2: 99. All tie -> n0, GPU 0.
    ("dot-product", 0, (0,)),
    # gpu-packing: idle nodes n0/n2 score max(33 - 2, 2) = 31; n1 can use its shared GPU with
    #   500 left: 100 - (500*100/1000)/10 = 95 -> n1, the fullest GPU that fits: GPU 0.
    ("gpu-packing", 1, (0,)),
    # gpu-clustering: n1 hosts only shares -> 75 + 25*(8000-3500)/8000 = 75 + 14 = 89;
    #   idle n0 -> 25 + 25*(8000-2000)/8000 = 25 + 18 = 43 -> n1, GPU 0.
    ("gpu-clustering", 1, (0,)),
    # fgd: frag before: n0 = 0, n1 = 0.5 * 500 (the whole-GPU task cannot use GPU 0's 500) = 250.
    #   n0 after (either GPU) [700, 1000]: whole-GPU task loses 700 -> 350; delta -350 -> int(100*sigmoid(-0.35)) = 41.
    #   n1 GPU 0 -> [200, ...]: share task loses 200 (0.5*200) + whole task 200 (0.5*200) = 200; delta +50 -> 51.
    #   n1 GPU 1 -> [500, 700, ...]: whole task loses 1200 -> 600; delta -350 -> 41.  Best: n1, GPU 0.
    ("fgd", 1, (0,)),
    # MostAllocated, weights cpu 1, memory 1, gpu 5: n0: cpu 2000/32000 -> 6, mem 4096/65536 -> 6, gpu 300/2000 -> 15:
    #   (6+6+75)//7 = 12. n1: cpu 6000/32000 -> 18, mem 18, gpu 800/4000 -> 20: (18+18+100)//7 = 19 -> n1, GPU 0.
    ("k8s-most-allocated", 1, (0,)),
]


@pytest.mark.parametrize(("policy", "node", "gpus"), CASES, ids=[c[0] for c in CASES])
def test_policy_places_as_worked_out(policy, node, gpus):
    assert place(policy) == (node, gpus)


def test_least_allocated_spreads_and_ties_are_random():
    # LeastAllocated: n0 (93+93+5*85)//7 = 87, n1 (81+81+5*80)//7 = 80, n2 = 87: n0 or n2, chosen at random
    # like upstream selectHost; the share goes on GPU 0 of an idle node.
    picks = Counter(place("k8s-least-allocated", seed) for seed in range(40))
    assert set(picks) == {(0, (0,)), (2, (0,))}


def test_k8s_policy_scores_through_sched_strategies():
    state, policy = cluster(), make_policy("k8s-most-allocated", DIST)
    scores = policy.score(state, INCOMING, np.array([0, 1, 2]), np.random.default_rng(0))
    mib = 1024 * 1024
    expect_n1 = most_allocated({"cpu": 6000, "memory": 12288 * mib, "nvidia.com/gpu": 800},
                               {"cpu": 32000, "memory": 65536 * mib, "nvidia.com/gpu": 4000}, policy.weights)
    expect_n0 = least_allocated({"cpu": 2000, "memory": 4096 * mib, "nvidia.com/gpu": 300},
                                {"cpu": 32000, "memory": 65536 * mib, "nvidia.com/gpu": 2000}, policy.weights)
    assert scores.tolist() == [12, expect_n1, 12] and expect_n1 == 19 and expect_n0 == 87


def test_random_fit_uses_every_node_and_fitting_gpu():
    seen = Counter(place("random", seed) for seed in range(300))
    assert {n for n, _ in seen} == {0, 1, 2} and min(seen[(0, (0,))], seen[(0, (1,))]) > 10
    assert all(len(g) == 1 for _, g in seen)


def test_whole_gpu_pod_takes_lowest_free_gpus():
    state = cluster()
    pod = PodShape(1000, 1024, 2, 1000)
    for name in ("fgd", "best-fit", "gpu-packing", "random"):
        assert make_policy(name, DIST).gpus(state, pod, 1, np.random.default_rng(0)) == (1, 2)


def test_cpu_only_pod_gets_no_gpus_and_packing_has_no_preference():
    state, pod = cluster(), PodShape(1000, 1024)
    policy = make_policy("gpu-packing", DIST)
    assert policy.score(state, pod, np.array([0, 1, 2]), np.random.default_rng(0)).tolist() == [0, 0, 0]
    assert make_policy("fgd", DIST).gpus(state, pod, 0, np.random.default_rng(0)) == ()


def test_plain_function_policy_from_a_notebook_cell():
    def most_idle_gpu(node, pod):
        return node.idle_gpu_milli

    nodes_ = nodes((8000, 8192, 2, "T4"), (8000, 8192, 4, "T4"))
    run = run_seed(nodes_, pods((1000, 1024, 1, 1000)), as_policy(most_idle_gpu), DIST,
                   [50], seed=1)
    # every whole-GPU pod goes to the node with the most idle GPU capacity: n1 first (4000 > 2000),
    # then n1 again (3000 > 2000); at 50 % of 6 GPUs three pods arrived: n1, n1, then tie 2000/2000 -> n0
    assert [(p[1], p[2]) for p in run.state.placements] == [(1, (0,)), (1, (1,)), (0, (0,))]


def test_the_cli_names_are_the_registry():
    """``mockgpu sim`` builds its parser from ``sim.names`` (no numpy); the factories must be those names."""
    from mockgpu.sim.names import POLICY_NAMES
    from mockgpu.sim.policies import _FACTORIES

    assert tuple(_FACTORIES) == POLICY_NAMES
