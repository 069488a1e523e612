"""The FGD paper's experiment: sample tasks from the pod list until their GPU requests reach a
share of the cluster's GPU capacity, submit them one by one, and measure after every load step.

Protocol (paper §6.1 and its simulator): task shapes are drawn uniformly with replacement from the
pod list; the stream stops before the first task that would take the arrived GPU request above the
target; tasks never leave; a task that fits nowhere fails and is not retried. The snapshot for load
``X %`` is the state just before the first task that takes the arrived request above ``X %``, so a
run to 130 % contains the runs to every smaller load with the same seed. One seed fixes both the
sample order and the random tie-breaks (two independent streams spawned from it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mockgpu.errors import MockgpuError
from mockgpu.sim.cluster import ClusterState, PodShape
from mockgpu.sim.frag import FragModel, TaskDistribution
from mockgpu.sim.names import SAMPLINGS
from mockgpu.sim.policy import Policy, choose_node
from mockgpu.sim.trace import MILLI, NodeList, PodList

CHUNK = 2048


@dataclass(frozen=True)
class SeedRun:
    """One seed's curve: values at each requested arrived-load step (percent of GPU capacity)."""

    seed: int
    steps: np.ndarray
    gpu_allocation_percent: np.ndarray
    fragmentation_percent: np.ndarray
    unplaced_pods: np.ndarray
    arrived_pods: np.ndarray
    state: ClusterState


def sample_workload(pods: PodList, total_gpu_milli: int, percent: float, rng: np.random.Generator,
                    sampling: str = "replacement") -> np.ndarray:
    """Pod-list indices until the next one would take the arrived GPU request above ``percent`` of
    capacity. ``"replacement"``: every task drawn uniformly with replacement (the paper's text).
    ``"trace-first"``: every trace pod once in a random order, then draws with replacement (what the
    paper's simulator does: it shuffles the pod list and "tunes" it up to the target)."""
    request = pods.total_gpu_milli
    if not request.any():
        raise MockgpuError("the pod list has no GPU pods, so no GPU load can arrive", exit_code=2)
    if sampling not in SAMPLINGS:
        raise MockgpuError(f"unknown sampling {sampling!r}; choose one of: {', '.join(SAMPLINGS)}", exit_code=2)
    target, cum, parts = percent / 100.0 * total_gpu_milli, 0, []
    if sampling == "trace-first":
        perm = rng.permutation(len(pods))
        running = np.cumsum(request[perm])
        keep = int(np.searchsorted(running, target, side="right"))
        if keep < len(perm):
            return perm[:keep]
        parts.append(perm)
        cum = int(running[-1])
    while True:
        idx = rng.integers(len(pods), size=CHUNK)
        running = cum + np.cumsum(request[idx])
        keep = int(np.searchsorted(running, target, side="right"))
        parts.append(idx[:keep])
        if keep < CHUNK:
            return np.concatenate(parts)
        cum = int(running[-1])


def _shape(pods: PodList, i: int) -> PodShape:
    return PodShape(int(pods.cpu_milli[i]), int(pods.memory_mib[i]), int(pods.num_gpu[i]), int(pods.gpu_milli[i]),
                    pods.gpu_spec[i])


def run_seed(nodes: NodeList, pods: PodList, policy: Policy, dist: TaskDistribution, steps: Sequence[float],
             seed: int, on_pod: Callable[[], None] | None = None, sampling: str = "replacement") -> SeedRun:
    """Replay one sampled workload under ``policy``; ``steps`` are arrived loads in percent."""
    steps_arr = np.array(sorted(set(float(s) for s in steps)))
    if len(steps_arr) == 0 or steps_arr[0] < 0:
        raise MockgpuError("arrived load steps must be >= 0 percent", exit_code=2)
    sample_rng, tie_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    state = ClusterState(nodes)
    total = state.total_gpu_milli
    order = sample_workload(pods, total, float(steps_arr[-1]), sample_rng, sampling)
    arrived = np.cumsum(pods.total_gpu_milli[order])
    cut = np.searchsorted(arrived, steps_arr / 100.0 * total, side="right")  # pods in each snapshot
    model = FragModel.for_models(dist, state.model_names)
    frag = model.node_frag(state.cpu_left, state.gpu_left, state.model_ids)
    shapes: dict[int, PodShape] = {}
    tie_break = getattr(policy, "tie_break", "name")
    alloc, frag_pct, failed_at = (np.zeros(len(steps_arr)) for _ in range(3))
    failed, step = 0, 0
    for i, p in enumerate(order.tolist() + [-1]):
        while step < len(steps_arr) and cut[step] == i:
            alloc[step] = 100.0 * state.allocated_gpu_milli() / total
            idle = float(state.gpu_left.sum())
            frag_pct[step] = 100.0 * float(frag.sum()) / idle if idle else 0.0
            failed_at[step] = failed
            step += 1
        if p < 0:
            break
        pod = shapes.get(p) or shapes.setdefault(p, _shape(pods, p))
        feasible = state.feasible(pod)
        if len(feasible) == 0:
            failed += 1
        else:
            n = int(feasible[0]) if len(feasible) == 1 else choose_node(
                np.asarray(policy.score(state, pod, feasible, tie_rng)), feasible, tie_rng, tie_break, state.name_rank)
            state.place(pod, n, policy.gpus(state, pod, n, tie_rng))
            one = slice(n, n + 1)
            frag[n] = model.node_frag(state.cpu_left[one], state.gpu_left[one], state.model_ids[one])[0]
        if on_pod is not None:
            on_pod()
    return SeedRun(seed, steps_arr, alloc, frag_pct, failed_at, cut.astype(np.int64), state)


def replay(nodes: NodeList, shapes: Sequence[PodShape], policy: Policy,
           seed: int = 0) -> tuple[ClusterState, list[int]]:
    """Place a fixed list of pods in order (no sampling); returns the state and the indices of the
    pods that fit nowhere. For small hand-made examples."""
    rng, state, failed = np.random.default_rng(seed), ClusterState(nodes), []
    tie_break = getattr(policy, "tie_break", "name")
    for i, pod in enumerate(shapes):
        feasible = state.feasible(pod)
        if len(feasible) == 0:
            failed.append(i)
            continue
        n = int(feasible[0]) if len(feasible) == 1 else choose_node(
            np.asarray(policy.score(state, pod, feasible, rng)), feasible, rng, tie_break, state.name_rank)
        state.place(pod, n, policy.gpus(state, pod, n, rng))
    return state, failed


@dataclass(frozen=True)
class PolicyResult:
    """Mean and population standard deviation over seeds, per arrived-load step."""

    policy: str
    steps: np.ndarray
    runs: tuple[SeedRun, ...]

    def _stat(self, field: str) -> tuple[np.ndarray, np.ndarray]:
        data = np.array([getattr(r, field) for r in self.runs], float)
        return data.mean(axis=0), data.std(axis=0)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(r.seed for r in self.runs)

    def at(self, step: float) -> dict[str, float]:
        """The summary at one load step (must be one of ``steps``)."""
        i = int(np.flatnonzero(np.isclose(self.steps, step))[0])
        out: dict[str, float] = {}
        for field in ("gpu_allocation_percent", "fragmentation_percent", "unplaced_pods", "arrived_pods"):
            mean, std = self._stat(field)
            out[field], out[field + "_std"] = float(mean[i]), float(std[i])
        return out

    def curve(self, field: str) -> tuple[np.ndarray, np.ndarray]:
        return self._stat(field)


def default_seeds(n: int) -> list[int]:
    """The paper's runs use seeds 42, 43, ...; so does ``mockgpu sim``."""
    return list(range(42, 42 + n))


def simulate(nodes: NodeList, pods: PodList, policy: Policy, dist: TaskDistribution, steps: Sequence[float],
             seeds: Sequence[int], on_pod: Callable[[], None] | None = None,
             sampling: str = "replacement") -> PolicyResult:
    """Run ``policy`` for every seed; results per step in ``steps`` (percent of GPU capacity)."""
    if not seeds:
        raise MockgpuError("need at least one seed", exit_code=2)
    runs = tuple(run_seed(nodes, pods, policy, dist, steps, s, on_pod, sampling) for s in seeds)
    return PolicyResult(getattr(policy, "name", "custom"), runs[0].steps, runs)


__all__ = ["MILLI", "SAMPLINGS", "PolicyResult", "SeedRun", "default_seeds", "replay", "run_seed", "sample_workload",
           "simulate"]
