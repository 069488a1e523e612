"""The simulated cluster: per-node CPU, memory and per-GPU free capacity as numpy arrays.

A pod asks for CPU (millicores), memory (MiB) and either ``num_gpu`` whole GPUs or one share of
``gpu_milli``/1000 of a single GPU. It is packed onto specific GPUs of one node, so a GPU's shares
never add up to more than 1000 milli and no node gives out more CPU or memory than it has.
Pods arrive and stay (the FGD paper's experiment has no departures).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mockgpu.sim.trace import MILLI, NodeList


@dataclass(frozen=True)
class PodShape:
    """What one pod asks for. ``gpu_spec`` lists the GPU models it accepts (``"A|B"``; empty: any)."""

    cpu_milli: int
    memory_mib: int
    num_gpu: int = 0
    gpu_milli: int = 0
    gpu_spec: str = ""

    @property
    def total_gpu_milli(self) -> int:
        return self.num_gpu * self.gpu_milli

    @property
    def is_share(self) -> bool:
        """A GPU-sharing pod: part of one GPU."""
        return self.num_gpu == 1 and self.gpu_milli < MILLI

    @property
    def affinity(self) -> int:
        """GPU Clustering's task class: -1 CPU-only, 0 GPU share, k for k whole GPUs."""
        if self.num_gpu == 0:
            return -1
        return 0 if self.is_share else self.num_gpu


@dataclass(frozen=True)
class NodeView:
    """One node's state, handed to a policy written as a plain per-node function."""

    index: int
    name: str
    model: str
    cpu_capacity: int
    memory_capacity: int
    cpu_left: int
    memory_left: int
    gpu_left: tuple[int, ...]

    @property
    def gpu_count(self) -> int:
        return len(self.gpu_left)

    @property
    def idle_gpu_milli(self) -> int:
        return sum(self.gpu_left)

    @property
    def fully_free_gpus(self) -> int:
        return sum(1 for g in self.gpu_left if g == MILLI)


@dataclass
class ClusterState:
    """Mutable cluster state. ``gpu_left[n, g]`` is the free milli-GPU of GPU ``g`` on node ``n``
    (0 for slots beyond the node's GPU count). ``version[n]`` changes whenever node ``n`` does, so
    policies can cache per-node scores."""

    nodes: NodeList
    cpu_left: np.ndarray = field(init=False)
    mem_left: np.ndarray = field(init=False)
    gpu_left: np.ndarray = field(init=False)
    affinity: np.ndarray = field(init=False)
    version: np.ndarray = field(init=False)
    model_ids: np.ndarray = field(init=False)
    model_names: tuple[str, ...] = field(init=False)
    name_rank: np.ndarray = field(init=False)
    placements: list[tuple[PodShape, int, tuple[int, ...]]] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        n = len(self.nodes)
        width = max(1, int(self.nodes.gpus.max(initial=0)))
        self.cpu_left = self.nodes.cpu_milli.copy()
        self.mem_left = self.nodes.memory_mib.copy()
        self.gpu_left = np.where(np.arange(width)[None, :] < self.nodes.gpus[:, None], MILLI, 0).astype(np.int64)
        self.affinity = np.zeros((n, width + 1), np.int64)
        self.version = np.zeros(n, np.int64)
        self.model_names = tuple(sorted(set(self.nodes.models)))
        self.model_ids = np.array([self.model_names.index(m) for m in self.nodes.models], np.int64)
        self.name_rank = np.argsort(np.argsort(np.array(self.nodes.names), kind="stable"), kind="stable")
        self._spec_masks: dict[str, np.ndarray] = {}

    @property
    def total_gpu_milli(self) -> int:
        return self.nodes.total_gpus * MILLI

    @property
    def gpu_counts(self) -> np.ndarray:
        return self.nodes.gpus

    def model_mask(self, gpu_spec: str) -> np.ndarray:
        """Nodes whose GPU model the spec accepts (all nodes for an empty spec)."""
        mask = self._spec_masks.get(gpu_spec)
        if mask is None:
            wanted = {m for m in gpu_spec.split("|") if m}
            mask = np.ones(len(self.nodes), bool) if not wanted else np.array(
                [m in wanted for m in self.nodes.models], bool)
            self._spec_masks[gpu_spec] = mask
        return mask

    def feasible(self, pod: PodShape) -> np.ndarray:
        """Indices of nodes that can host the pod (kube NodeResourcesFit on CPU/memory plus the
        GPU-share filter: enough GPUs each with ``gpu_milli`` free, of an accepted model)."""
        ok = (self.cpu_left >= pod.cpu_milli) & (self.mem_left >= pod.memory_mib)
        if pod.num_gpu:
            fits = (self.gpu_left >= pod.gpu_milli).sum(axis=1) >= pod.num_gpu
            ok &= fits & self.model_mask(pod.gpu_spec)
        return np.flatnonzero(ok)

    def view(self, n: int) -> NodeView:
        count = int(self.nodes.gpus[n])
        return NodeView(n, self.nodes.names[n], self.nodes.models[n], int(self.nodes.cpu_milli[n]),
                        int(self.nodes.memory_mib[n]), int(self.cpu_left[n]), int(self.mem_left[n]),
                        tuple(int(x) for x in self.gpu_left[n, :count]))

    def place(self, pod: PodShape, n: int, gpus: tuple[int, ...]) -> None:
        """Bind the pod to node ``n`` and GPUs ``gpus``; refuses anything that would over-commit."""
        if len(gpus) != pod.num_gpu or len(set(gpus)) != len(gpus):
            raise ValueError(f"pod needs {pod.num_gpu} distinct GPUs, got {gpus}")
        if self.cpu_left[n] < pod.cpu_milli or self.mem_left[n] < pod.memory_mib:
            raise ValueError(f"node {self.nodes.names[n]} lacks CPU or memory for {pod}")
        for g in gpus:
            if not 0 <= g < self.nodes.gpus[n] or self.gpu_left[n, g] < pod.gpu_milli:
                raise ValueError(f"GPU {g} of node {self.nodes.names[n]} cannot take {pod.gpu_milli} milli")
        if pod.num_gpu and not self.model_mask(pod.gpu_spec)[n]:
            raise ValueError(f"node {self.nodes.names[n]} model {self.nodes.models[n]} not in {pod.gpu_spec!r}")
        self.cpu_left[n] -= pod.cpu_milli
        self.mem_left[n] -= pod.memory_mib
        for g in gpus:
            self.gpu_left[n, g] -= pod.gpu_milli
        if pod.affinity >= 0:
            self.affinity[n, min(pod.affinity, self.affinity.shape[1] - 1)] += 1
        self.version[n] += 1
        self.placements.append((pod, n, tuple(gpus)))

    def allocated_gpu_milli(self) -> int:
        return self.total_gpu_milli - int(self.gpu_left.sum())


def best_fit_gpus(state: ClusterState, pod: PodShape, n: int) -> tuple[int, ...]:
    """The simulator's default GPU choice ("best"): a share goes to the fullest GPU that still
    fits it (lowest index on ties); whole GPUs are the free ones with the lowest indices."""
    left = state.gpu_left[n, : state.nodes.gpus[n]]
    if pod.num_gpu == 0:
        return ()
    if pod.is_share:
        fits = np.flatnonzero(left >= pod.gpu_milli)
        return (int(fits[np.argmin(left[fits])]),)
    free = np.flatnonzero(left == MILLI)
    return tuple(int(g) for g in free[: pod.num_gpu])
