"""The policy interface: score the feasible nodes for a pod, then pick GPUs on the chosen node.

The engine does what kube-scheduler's framework does around a score plugin: it filters (CPU,
memory, GPU fit, GPU model), skips scoring when only one node fits, takes the highest score and
breaks ties uniformly at random (``selectHost`` up to v1.35; v1.37.2 takes the first in node order, which is
arbitrary on a trace). A policy only ranks and places on GPUs.

A learner can write a policy as a plain function of one node and the pod (see ``as_policy``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from mockgpu.sim.cluster import ClusterState, NodeView, PodShape, best_fit_gpus


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy. ``score`` returns one number per entry of ``nodes`` (indices of the
    feasible nodes), higher is better; ``gpus`` returns the GPU indices to use on node ``n``
    (``()`` for a CPU-only pod; exactly ``pod.num_gpu`` GPUs otherwise). An optional attribute
    ``tie_break`` (``"name"``, the default, or ``"random"``) says how equal scores are decided."""

    name: str

    def score(self, state: ClusterState, pod: PodShape, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        ...

    def gpus(self, state: ClusterState, pod: PodShape, n: int, rng: np.random.Generator) -> tuple[int, ...]:
        ...


NodeScore = Callable[[NodeView, PodShape], float]
GpuChoice = Callable[[NodeView, PodShape], tuple[int, ...]]


@dataclass
class FunctionPolicy:
    """Adapts ``score(node: NodeView, pod: PodShape) -> float`` (and optionally a GPU chooser with
    the same arguments) to the ``Policy`` protocol. The function must depend only on the node and the
    pod: its results are cached per pod shape and recomputed only for nodes that changed since."""

    score_node: NodeScore
    name: str
    choose_gpus: GpuChoice | None = None
    tie_break: str = "name"
    _state: ClusterState | None = field(default=None, init=False, repr=False)
    _caches: dict[PodShape, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, init=False, repr=False)

    def score(self, state: ClusterState, pod: PodShape, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self._state is not state:
            self._state, self._caches = state, {}
        if pod not in self._caches:
            self._caches[pod] = (np.zeros(len(state.nodes)), np.full(len(state.nodes), -1))
        scores, seen = self._caches[pod]
        stale = nodes[seen[nodes] != state.version[nodes]]
        for n in stale.tolist():
            scores[n] = float(self.score_node(state.view(n), pod))
        seen[stale] = state.version[stale]
        return scores[nodes]

    def gpus(self, state: ClusterState, pod: PodShape, n: int, rng: np.random.Generator) -> tuple[int, ...]:
        if self.choose_gpus is None:
            return best_fit_gpus(state, pod, n)
        return tuple(int(g) for g in self.choose_gpus(state.view(n), pod))


def as_policy(score: NodeScore, name: str | None = None, gpus: GpuChoice | None = None) -> FunctionPolicy:
    """Turn a plain per-node scoring function into a policy (GPU choice defaults to best fit)."""
    return FunctionPolicy(score, name or getattr(score, "__name__", "custom"), gpus)


TIE_BREAKS = ("name", "random")


def choose_node(scores: np.ndarray, nodes: np.ndarray, rng: np.random.Generator, tie_break: str = "name",
                name_rank: np.ndarray | None = None) -> int:
    """Highest score wins. Ties: ``"name"`` takes the node whose name sorts first, as the FGD
    paper's simulator does (its kube-scheduler fork changed selectHost "for reproducibility");
    ``"random"`` picks uniformly, as upstream kube-scheduler's selectHost does."""
    best = np.flatnonzero(scores == scores.max())
    if len(best) == 1:
        return int(nodes[best[0]])
    if tie_break == "random":
        return int(nodes[best[rng.integers(len(best))]])
    tied = nodes[best]
    return int(tied[np.argmin(name_rank[tied])]) if name_rank is not None else int(tied.min())
