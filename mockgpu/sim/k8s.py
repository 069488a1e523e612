"""Kubernetes' NodeResourcesFit scoring strategies as trace policies, through ``mockgpu.sched``.

``LeastAllocated`` (kube-scheduler's default: spread) and ``MostAllocated`` (bin-pack) score the
resources ``cpu`` (millicores), ``memory`` (bytes) and ``nvidia.com/gpu``, the last in milli-GPU
so that GPU shares count. Default weights ``cpu: 1, memory: 1, nvidia.com/gpu: 5`` for both — the
upstream "Resource Bin Packing" pattern, so the two differ only in strategy. (The stock default
profile scores only cpu and memory, i.e. it does not look at GPUs at all.)

Simplifications: the node's requested cpu/memory are the real requests of its pods (kube sums
non-zero requests; every trace pod but one asks for both); the pod's own are non-zero. Kube does
not pick GPUs — the device plugin does; here a share takes the fullest GPU that fits and whole
GPUs the lowest free indices (the FGD simulator's default).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mockgpu.sched.strategies import least_allocated, most_allocated
from mockgpu.sim.cluster import ClusterState, PodShape, best_fit_gpus
from mockgpu.sim.trace import MILLI

MIB = 1024 * 1024
GPU = "nvidia.com/gpu"
DEFAULT_WEIGHTS = {"cpu": 1, "memory": 1, GPU: 5}
DEFAULT_MEMORY_REQUEST_MIB = 200  # kube's non-zero default memory request


@dataclass
class KubeStrategy:
    """One NodeResourcesFit scoring strategy; ``strategy`` is ``least_allocated`` or ``most_allocated``."""

    name: str
    strategy: object
    weights: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    tie_break: str = "random"  # upstream selectHost
    _state: ClusterState | None = field(default=None, init=False, repr=False)
    _caches: dict[tuple, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, init=False, repr=False)

    def score(self, state: ClusterState, pod: PodShape, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self._state is not state:
            self._state, self._caches = state, {}
        key = (pod.cpu_milli, pod.memory_mib, pod.total_gpu_milli)
        if key not in self._caches:
            n = len(state.nodes)
            self._caches[key] = (np.zeros(n, np.int64), np.full(n, -1))
        scores, seen = self._caches[key]
        stale = nodes[seen[nodes] != state.version[nodes]]
        for n in stale.tolist():
            scores[n] = self._node_score(state, pod, n)
        seen[stale] = state.version[stale]
        return scores[nodes]

    def _node_score(self, state: ClusterState, pod: PodShape, n: int) -> int:
        nodes = state.nodes
        cpu_cap, mem_cap, gpu_cap = int(nodes.cpu_milli[n]), int(nodes.memory_mib[n]), int(nodes.gpus[n]) * MILLI
        requested = {
            "cpu": cpu_cap - int(state.cpu_left[n]) + (pod.cpu_milli or 100),
            "memory": (mem_cap - int(state.mem_left[n]) + (pod.memory_mib or DEFAULT_MEMORY_REQUEST_MIB)) * MIB,
            GPU: gpu_cap - int(state.gpu_left[n].sum()) + pod.total_gpu_milli,
        }
        # upstream's bypass: a scalar resource the pod does not request is not scored
        allocatable = {"cpu": cpu_cap, "memory": mem_cap * MIB, GPU: gpu_cap if pod.total_gpu_milli else 0}
        return int(self.strategy(requested, allocatable, self.weights))

    def gpus(self, state: ClusterState, pod: PodShape, n: int, rng: np.random.Generator) -> tuple[int, ...]:
        return best_fit_gpus(state, pod, n)


def least_allocated_policy(weights: dict[str, int] | None = None) -> KubeStrategy:
    return KubeStrategy("k8s-least-allocated", least_allocated, dict(weights or DEFAULT_WEIGHTS))


def most_allocated_policy(weights: dict[str, int] | None = None) -> KubeStrategy:
    return KubeStrategy("k8s-most-allocated", most_allocated, dict(weights or DEFAULT_WEIGHTS))
