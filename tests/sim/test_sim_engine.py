"""The replay engine: packing invariants (property test), the paper's sampling protocol, metrics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sim_builders import nodes, pods

from mockgpu.errors import MockgpuError
from mockgpu.sim.engine import run_seed, sample_workload, simulate
from mockgpu.sim.frag import task_distribution
from mockgpu.sim.policies import POLICY_NAMES, make_policy
from mockgpu.sim.trace import MILLI

node_st = st.tuples(st.integers(1000, 16000), st.integers(1024, 65536), st.integers(0, 4), st.sampled_from(["T4", "A"]))
share_st = st.tuples(st.integers(100, 8000), st.integers(128, 16384), st.just(1), st.integers(50, 999),
                     st.sampled_from(["", "", "T4"]))
whole_st = st.tuples(st.integers(100, 8000), st.integers(128, 16384), st.integers(1, 4), st.just(MILLI),
                     st.sampled_from(["", "A"]))
cpu_st = st.tuples(st.integers(100, 8000), st.integers(128, 16384), st.just(0), st.just(0), st.just(""))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(node_st, min_size=1, max_size=5).filter(lambda ns: any(n[2] for n in ns)),
       st.lists(st.one_of(share_st, whole_st, cpu_st), min_size=1, max_size=8).filter(lambda ps: any(p[2] for p in ps)),
       st.sampled_from(POLICY_NAMES), st.integers(0, 2**16))
def test_packing_never_overcommits(node_specs, pod_specs, policy_name, seed):
    cluster, workload = nodes(*node_specs), pods(*pod_specs)
    dist = task_distribution(workload)
    run = run_seed(cluster, workload, make_policy(policy_name, dist), dist, [150], seed)
    state = run.state
    assert (state.cpu_left >= 0).all() and (state.mem_left >= 0).all()
    real = np.arange(state.gpu_left.shape[1])[None, :] < cluster.gpus[:, None]
    assert ((state.gpu_left >= 0) & (state.gpu_left <= MILLI)).all() and (state.gpu_left[~real] == 0).all()
    # recount from the placements: shares on a GPU never exceed 1000 milli, CPU/memory within capacity
    used = np.zeros_like(state.gpu_left)
    cpu, mem = np.zeros(len(cluster), np.int64), np.zeros(len(cluster), np.int64)
    for pod, n, gpus in state.placements:
        cpu[n] += pod.cpu_milli
        mem[n] += pod.memory_mib
        for g in gpus:
            used[n, g] += pod.gpu_milli
        assert not pod.gpu_spec or cluster.models[n] in pod.gpu_spec.split("|")
    assert (used <= MILLI).all() and (cpu <= cluster.cpu_milli).all() and (mem <= cluster.memory_mib).all()
    assert (used == np.where(real, MILLI, 0) - state.gpu_left).all()
    assert len(state.placements) + run.unplaced_pods[-1] == run.arrived_pods[-1]


def test_sampling_stops_before_exceeding_the_target():
    workload = pods((1000, 1, 1, 500), (1000, 1, 0, 0), (1000, 1, 2, 1000))
    order = sample_workload(workload, 10 * MILLI, 80, np.random.default_rng(3))
    arrived = workload.total_gpu_milli[order].cumsum()
    assert arrived[-1] <= 8000 < arrived[-1] + 2000  # the next draw (<= 2000 milli) would have crossed 80 %
    assert len(set(order.tolist())) == 3  # with replacement: every shape shows up


def test_trace_first_sampling_uses_every_trace_pod_once_then_draws():
    workload = pods((1000, 1, 1, 500), (1000, 1, 0, 0), (1000, 1, 2, 1000), (1000, 1, 1, 1000))
    order = sample_workload(workload, 10 * MILLI, 100, np.random.default_rng(5), sampling="trace-first")
    assert sorted(order[:4].tolist()) == [0, 1, 2, 3]  # the whole trace (3500 milli) first, in random order
    assert workload.total_gpu_milli[order].sum() <= 10_000 and len(order) > 4
    low = sample_workload(workload, 10 * MILLI, 20, np.random.default_rng(5), sampling="trace-first")
    assert len(set(low.tolist())) == len(low)  # below the trace's own load: no pod twice
    with pytest.raises(MockgpuError, match="unknown sampling"):
        sample_workload(workload, 1000, 10, np.random.default_rng(0), sampling="bootstrap")


def test_no_gpu_pods_is_an_error():
    with pytest.raises(MockgpuError, match="no GPU pods"):
        sample_workload(pods((1000, 1, 0, 0)), 1000, 50, np.random.default_rng(0))


SMALL = nodes(*[(32000, 131072, 4, "T4")] * 6, *[(96000, 393216, 8, "G2")] * 3)
WORK = pods((4000, 8192, 1, 500), (2000, 4096, 1, 250), (8000, 16384, 1, 1000), (16000, 65536, 2, 1000),
            (60000, 131072, 8, 1000), (4000, 8192, 0, 0), (6000, 12288, 1, 460))
STEPS = list(range(0, 131, 10))


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_metrics_are_monotonic_in_arrived_load(policy):
    dist = task_distribution(WORK)
    result = simulate(SMALL, WORK, make_policy(policy, dist), dist, STEPS, [42, 43])
    for run in result.runs:
        assert (np.diff(run.gpu_allocation_percent) >= 0).all()
        assert (np.diff(run.unplaced_pods) >= 0).all() and (np.diff(run.arrived_pods) >= 0).all()
        assert (run.gpu_allocation_percent <= np.array(STEPS) + 1e-9).all()  # can't allocate more than arrived
        assert ((run.fragmentation_percent >= 0) & (run.fragmentation_percent <= 100)).all()
    summary = result.at(100)
    assert set(summary) >= {"gpu_allocation_percent", "gpu_allocation_percent_std", "fragmentation_percent",
                            "fragmentation_percent_std", "unplaced_pods", "unplaced_pods_std"}


def test_same_seed_run_to_a_higher_load_contains_the_lower_one():
    dist = task_distribution(WORK)
    low = run_seed(SMALL, WORK, make_policy("fgd", dist), dist, [40, 70], 7)
    high = run_seed(SMALL, WORK, make_policy("fgd", dist), dist, [40, 70, 120], 7)
    assert low.gpu_allocation_percent.tolist() == high.gpu_allocation_percent[:2].tolist()
    assert low.fragmentation_percent.tolist() == high.fragmentation_percent[:2].tolist()
    again = run_seed(SMALL, WORK, make_policy("fgd", dist), dist, [40, 70], 7)
    assert again.state.placements == low.state.placements  # deterministic per seed


def test_mean_and_std_over_seeds():
    dist = task_distribution(WORK)
    result = simulate(SMALL, WORK, make_policy("random", dist), dist, [100], [1, 2, 3])
    values = [r.gpu_allocation_percent[0] for r in result.runs]
    assert result.at(100)["gpu_allocation_percent"] == pytest.approx(np.mean(values))
    assert result.at(100)["gpu_allocation_percent_std"] == pytest.approx(np.std(values))
