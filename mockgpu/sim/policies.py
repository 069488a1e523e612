"""The registry of built-in policies, by the names the ``mockgpu sim`` command accepts."""

from __future__ import annotations

from collections.abc import Callable

from mockgpu.sim.baselines import BestFit, DotProduct, GpuClustering, GpuPacking, RandomFit
from mockgpu.sim.fgd import FGD
from mockgpu.sim.frag import TaskDistribution
from mockgpu.sim.k8s import least_allocated_policy, most_allocated_policy
from mockgpu.sim.names import POLICY_NAMES, canonical_name
from mockgpu.sim.policy import Policy

_FACTORIES: dict[str, Callable[[TaskDistribution], Policy]] = {
    "random": lambda dist: RandomFit(),
    "dot-product": lambda dist: DotProduct(),
    "gpu-clustering": lambda dist: GpuClustering(),
    "gpu-packing": lambda dist: GpuPacking(),
    "best-fit": lambda dist: BestFit(),
    "fgd": lambda dist: FGD(dist),
    "k8s-least-allocated": lambda dist: least_allocated_policy(),
    "k8s-most-allocated": lambda dist: most_allocated_policy(),
}

PAPER_POLICIES: tuple[str, ...] = POLICY_NAMES[:6]  # the six the FGD paper compares, in its order
__all__ = ["PAPER_POLICIES", "POLICY_NAMES", "canonical_name", "make_policy"]


def make_policy(name: str, dist: TaskDistribution) -> Policy:
    """A fresh built-in policy (FGD needs the workload's task distribution)."""
    return _FACTORIES[canonical_name(name)](dist)
