"""GPU fragmentation measured against the workload's task distribution, as the FGD paper defines it.

The *target workload* is the distribution of task shapes in the pod list (CPU, GPU count, GPU
share, GPU model; memory is not part of a shape). Following the paper's simulator, the most popular
shapes covering 95 % of pods are kept (CPU-only pods included) and their frequencies renormalised.

For one node and one task shape ``t``, the node's idle GPU capacity counts as *fragmented* unless
the task could run there: then only the GPUs whose free share is smaller than the task's per-GPU
request are fragmented. CPU-only tasks, tasks the node's model does not serve, and tasks the node
lacks CPU or GPUs for see *all* its idle GPU capacity as fragmented. The node's fragmentation is the
frequency-weighted sum over shapes; the cluster's fragmentation rate is the sum over nodes divided
by the cluster's idle GPU capacity.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from mockgpu.sim.trace import PodList

POPULARITY_THRESHOLD = 0.95  # the paper's runs: podPopularityThreshold 95, podIncreaseStep 1
DEFAULT_MILLI_CPU_REQUEST = 100  # kube's non-zero default for a pod without a CPU request


@dataclass(frozen=True)
class TaskDistribution:
    """Typical task shapes and their probabilities (arrays of length T)."""

    cpu_milli: np.ndarray
    gpu_milli: np.ndarray
    num_gpu: np.ndarray
    gpu_spec: tuple[str, ...]
    prob: np.ndarray

    def __len__(self) -> int:
        return len(self.prob)

    def access(self, model_names: tuple[str, ...]) -> np.ndarray:
        """``[model, t]``: may task shape ``t`` run on a GPU of this model?"""
        out = np.ones((max(1, len(model_names)), len(self)), bool)
        for t, spec in enumerate(self.gpu_spec):
            wanted = {m for m in spec.split("|") if m}
            if wanted:
                out[:, t] = [m in wanted for m in model_names] if model_names else False
        return out


def task_distribution(pods: PodList, threshold: float = POPULARITY_THRESHOLD) -> TaskDistribution:
    """The most popular shapes (by pod count) that together cover ``threshold`` of the pods."""
    cpu = np.where(pods.cpu_milli == 0, DEFAULT_MILLI_CPU_REQUEST, pods.cpu_milli)
    counts = Counter(zip(cpu.tolist(), pods.gpu_milli.tolist(), pods.num_gpu.tolist(), pods.gpu_spec, strict=True))
    # most popular first; equal counts: larger shape first (the simulator sorts in reverse)
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    total, kept, cum = len(pods), [], 0
    for shape, count in ranked:
        if cum >= threshold * total:
            break
        kept.append((shape, count))
        cum += count
    prob = np.array([c for _, c in kept], float) / cum
    return TaskDistribution(np.array([s[0] for s, _ in kept], np.int64), np.array([s[1] for s, _ in kept], np.int64),
                            np.array([s[2] for s, _ in kept], np.int64), tuple(s[3] for s, _ in kept), prob)


@dataclass
class FragModel:
    """Evaluates fragmentation for batches of node states; precomputes what the tasks need."""

    dist: TaskDistribution
    access: np.ndarray  # [model, t]

    @classmethod
    def for_models(cls, dist: TaskDistribution, model_names: tuple[str, ...]) -> FragModel:
        return cls(dist, dist.access(model_names))

    def per_task(self, cpu_left: np.ndarray, gpu_left: np.ndarray, model_ids: np.ndarray) -> np.ndarray:
        """``[b, t]`` fragmented milli-GPU of state ``b`` as seen by task shape ``t``."""
        d = self.dist
        idle = gpu_left.sum(axis=1)
        ge = gpu_left[:, None, :] >= d.gpu_milli[None, :, None]
        enough = ge.sum(axis=2) >= d.num_gpu[None, :]
        below = idle[:, None] - (gpu_left[:, None, :] * ge).sum(axis=2)
        runs = enough & (cpu_left[:, None] >= d.cpu_milli[None, :]) & (d.gpu_milli[None, :] > 0)
        runs &= self.access[model_ids]
        return np.where(runs, below, idle[:, None])

    def node_frag(self, cpu_left: np.ndarray, gpu_left: np.ndarray, model_ids: np.ndarray) -> np.ndarray:
        """Expected fragmented milli-GPU of each state (frequency-weighted over task shapes)."""
        if len(cpu_left) == 0:
            return np.zeros(0)
        return self.per_task(cpu_left, gpu_left, model_ids) @ self.dist.prob


def fragmentation_rate(frag: np.ndarray, gpu_left: np.ndarray) -> float:
    """Fragmented share of the cluster's idle GPU capacity, in percent (0 when nothing is idle)."""
    idle = float(gpu_left.sum())
    return 100.0 * float(frag.sum()) / idle if idle > 0 else 0.0
