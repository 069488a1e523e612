"""Fragmentation Gradient Descent (FGD): place each task where it increases the expected GPU
fragmentation (``mockgpu.sim.frag``) the least.

Score of a node = ``int(sigmoid(Δ/1000) × 100)`` with ``Δ = frag(before) − frag(after)`` in
milli-GPU, as the paper's simulator computes it (the truncation to an integer makes ties, broken at
random). A GPU share tries every GPU that fits and keeps the best (lowest index on ties); whole
GPUs take the lowest free indices.

Speed: a node's score for a task shape depends only on that node's state, so scores are cached per
(shape, node) and recomputed, vectorised, only for nodes that changed since (``ClusterState.version``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mockgpu.sim.baselines import nonzero_cpu
from mockgpu.sim.cluster import ClusterState, PodShape
from mockgpu.sim.frag import FragModel, TaskDistribution
from mockgpu.sim.trace import MILLI

MAX_SCORE = 100


def fgd_score(delta_milli: np.ndarray) -> np.ndarray:
    """``int(sigmoid(Δ/1000) × 100)``: 50 when fragmentation does not change."""
    return np.trunc(MAX_SCORE / (1.0 + np.exp(-delta_milli / 1000.0))).astype(np.int64)


@dataclass
class _Cache:
    score: np.ndarray
    gpu: np.ndarray
    seen: np.ndarray  # the node version the entry was computed at (-1: never)


@dataclass
class FGD:
    """FGD against a task distribution (normally the pod list's, see ``frag.task_distribution``)."""

    dist: TaskDistribution
    name: str = "fgd"
    _state: ClusterState | None = field(default=None, init=False, repr=False)
    _model: FragModel | None = field(default=None, init=False, repr=False)
    _caches: dict[tuple, _Cache] = field(default_factory=dict, init=False, repr=False)

    def _bind(self, state: ClusterState) -> FragModel:
        if self._state is not state:
            self._state, self._caches = state, {}
            self._model = FragModel.for_models(self.dist, state.model_names)
        assert self._model is not None
        return self._model

    def score(self, state: ClusterState, pod: PodShape, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        model = self._bind(state)
        key = (nonzero_cpu(pod), pod.num_gpu, pod.gpu_milli)
        cache = self._caches.get(key)
        if cache is None:
            n = len(state.nodes)
            cache = self._caches[key] = _Cache(np.zeros(n), np.zeros(n, np.int64), np.full(n, -1))
        stale = nodes[cache.seen[nodes] != state.version[nodes]]
        if len(stale):
            cache.score[stale], cache.gpu[stale] = self._compute(model, state, pod, stale)
            cache.seen[stale] = state.version[stale]
        return cache.score[nodes]

    def gpus(self, state: ClusterState, pod: PodShape, n: int, rng: np.random.Generator) -> tuple[int, ...]:
        if pod.num_gpu == 0:
            return ()
        if pod.is_share:
            self.score(state, pod, np.array([n]), rng)
            return (int(self._caches[(nonzero_cpu(pod), pod.num_gpu, pod.gpu_milli)].gpu[n]),)
        free = np.flatnonzero(state.gpu_left[n, : state.nodes.gpus[n]] == MILLI)
        return tuple(int(g) for g in free[: pod.num_gpu])

    def _compute(self, model: FragModel, state: ClusterState, pod: PodShape,
                 nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cpu, left, models = state.cpu_left[nodes], state.gpu_left[nodes], state.model_ids[nodes]
        before = model.node_frag(cpu, left, models)
        cpu_after = cpu - nonzero_cpu(pod)
        if not pod.is_share:
            if pod.num_gpu:
                free = left == MILLI
                take = free & (np.cumsum(free, axis=1) <= pod.num_gpu)
                left = left - take * MILLI
            after = model.node_frag(cpu_after, left, models)
            return fgd_score(before - after), np.zeros(len(nodes), np.int64)
        width = left.shape[1]
        fits = left >= pod.gpu_milli  # [node, gpu] candidate GPUs
        rows, gpus = np.nonzero(fits)
        cand = left[rows].copy()
        cand[np.arange(len(rows)), gpus] -= pod.gpu_milli
        after = model.node_frag(cpu_after[rows], cand, models[rows])
        table = np.full((len(nodes), width), -np.inf)
        table[rows, gpus] = fgd_score(before[rows] - after)
        return table.max(axis=1), table.argmax(axis=1)
