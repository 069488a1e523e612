"""The FGD paper's baseline policies, as its simulator (hkust-adsl/kubernetes-scheduler-simulator)
scores them. All integer arithmetic follows the Go code (truncating division), because the
resulting ties, broken at random, shape the results.

GPU choice on the chosen node is the simulator's default "best" (tightest GPU for a share, lowest
free indices for whole GPUs), except Random-fit, which puts a share on a random GPU that fits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mockgpu.sim.cluster import ClusterState, PodShape, best_fit_gpus
from mockgpu.sim.trace import MILLI

MAX_SPEC_CPU = 128_000  # the simulator normalises CPU by a 128-core node ...
MAX_SPEC_GPU = 8_000  # ... and GPU by an 8-GPU node
MAX_SCORE = 100


def nonzero_cpu(pod: PodShape) -> int:
    """The scheduler scores a pod without a CPU request as 100m (kube's non-zero default)."""
    return pod.cpu_milli or 100


class _BestFitGpus:
    def gpus(self, state: ClusterState, pod: PodShape, n: int, rng: np.random.Generator) -> tuple[int, ...]:
        return best_fit_gpus(state, pod, n)


@dataclass
class RandomFit:
    """Random-fit: any feasible node, uniformly; a share goes to a random GPU that fits."""

    name: str = "random"

    def score(self, state: ClusterState, pod: PodShape, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        scores = np.zeros(len(nodes))
        scores[rng.integers(len(nodes))] = MAX_SCORE
        return scores

    def gpus(self, state: ClusterState, pod: PodShape, n: int, rng: np.random.Generator) -> tuple[int, ...]:
        if not pod.is_share:
            return best_fit_gpus(state, pod, n)
        fits = np.flatnonzero(state.gpu_left[n, : state.nodes.gpus[n]] >= pod.gpu_milli)
        return (int(fits[rng.integers(len(fits))]),)


@dataclass
class BestFit(_BestFitGpus):
    """Best-fit: the node with the least CPU and GPU left after placement (each weighted 0.5,
    normalised by a 128-core / 8-GPU node), then min-max normalised to 0..100."""

    name: str = "best-fit"

    def score(self, state: ClusterState, pod: PodShape, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        cpu = (state.cpu_left[nodes] - nonzero_cpu(pod)) / MAX_SPEC_CPU * 0.5
        gpu = (state.gpu_left[nodes].sum(axis=1) - pod.total_gpu_milli) / MAX_SPEC_GPU * 0.5
        raw = np.trunc((1.0 - (cpu + gpu)) * MAX_SCORE).astype(np.int64)
        lo, hi = raw.min(), raw.max()
        if hi == lo:
            return np.zeros(len(nodes), np.int64)
        return (raw - lo) * MAX_SCORE // (hi - lo)


@dataclass
class DotProduct(_BestFitGpus):
    """Dot-product (Tetris): the node whose free (CPU, GPU) vector, normalised by a 128-core /
    8-GPU node, has the smallest dot product with the pod's request vector."""

    name: str = "dot-product"

    def score(self, state: ClusterState, pod: PodShape, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        cpu = state.cpu_left[nodes] / MAX_SPEC_CPU * (nonzero_cpu(pod) / MAX_SPEC_CPU)
        gpu = state.gpu_left[nodes].sum(axis=1) / MAX_SPEC_GPU * (pod.total_gpu_milli / MAX_SPEC_GPU)
        return np.trunc(MAX_SCORE * (1.0 - (cpu + gpu) / 2)).astype(np.int64)


@dataclass
class GpuPacking(_BestFitGpus):
    """GPU Packing: prefer a partly used GPU (a share on the fullest one), then free GPUs on a
    node already in use, then an idle node (fewer GPUs better). CPU-only pods: no preference."""

    name: str = "gpu-packing"

    def score(self, state: ClusterState, pod: PodShape, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if pod.gpu_milli <= 0:
            return np.zeros(len(nodes), np.int64)
        left = state.gpu_left[nodes]
        count = state.gpu_counts[nodes]
        free = (left == MILLI).sum(axis=1)
        idle_node = np.maximum(MAX_SCORE // 3 - free, free)
        if pod.is_share:
            tightest = np.where(left >= pod.gpu_milli, left, MILLI + 1).min(axis=1)
            shared = np.maximum(MAX_SCORE - (tightest * 100 // MILLI) // 10, MAX_SCORE // 2)
            used_node = np.where(tightest == MILLI, max(MAX_SCORE // 2 - 1, MAX_SCORE // 3), shared)
        else:
            used_node = np.full(len(nodes), max(MAX_SCORE // 2 - pod.num_gpu, MAX_SCORE // 3))
        return np.where(free == count, idle_node, used_node).astype(np.int64)


@dataclass
class GpuClustering(_BestFitGpus):
    """GPU Clustering: put tasks of the same class (share, 1-GPU, 2-GPU, ...) together: a node
    hosting only that class > a node hosting it among others > an empty node > other classes;
    within a band, the node with less GPU left. CPU-only pods: no preference."""

    name: str = "gpu-clustering"

    def score(self, state: ClusterState, pod: PodShape, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if pod.affinity < 0:
            return np.zeros(len(nodes), np.int64)
        quarter = MAX_SCORE // 4
        base = quarter * (MAX_SPEC_GPU - state.gpu_left[nodes].sum(axis=1)) // MAX_SPEC_GPU
        aff = state.affinity[nodes]
        kinds = (aff > 0).sum(axis=1)
        same = aff[:, min(pod.affinity, aff.shape[1] - 1)] > 0
        band = np.where(same, np.where(kinds == 1, 3, 2), np.where(kinds == 0, 1, 0))
        return base + band * quarter
