"""The registry of built-in policies, by the names the ``mockgpu sim`` command accepts."""

from __future__ import annotations

from collections.abc import Callable

from mockgpu.errors import MockgpuError
from mockgpu.sim.baselines import BestFit, DotProduct, GpuClustering, GpuPacking, RandomFit
from mockgpu.sim.fgd import FGD
from mockgpu.sim.frag import TaskDistribution
from mockgpu.sim.k8s import least_allocated_policy, most_allocated_policy
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

POLICY_NAMES: tuple[str, ...] = tuple(_FACTORIES)
PAPER_POLICIES: tuple[str, ...] = POLICY_NAMES[:6]  # the six the FGD paper compares, in its order


def canonical_name(name: str) -> str:
    key = name.strip().lower().replace("_", "-")
    if key not in _FACTORIES:
        raise MockgpuError(f"unknown policy {name!r}; choose one of: {', '.join(POLICY_NAMES)}, all", exit_code=2)
    return key


def make_policy(name: str, dist: TaskDistribution) -> Policy:
    """A fresh built-in policy (FGD needs the workload's task distribution)."""
    return _FACTORIES[canonical_name(name)](dist)
