"""Trace-driven GPU fragmentation simulator: the experiment of the FGD paper (USENIX ATC '23) on
Alibaba's ``cluster-trace-gpu-v2023``. Pure computation on ``mockgpu.sched``; never talks to an API
server. See ``mockgpu/sim/README.md``.

The names below load on first use (PEP 562), so importing ``mockgpu.sim.command`` or ``mockgpu.sim.names``
needs no numpy: numpy comes with the ``notebook`` extra, which the device-plugin image does not install.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "mockgpu.sim.cluster": ("ClusterState", "NodeView", "PodShape", "best_fit_gpus"),
    "mockgpu.sim.engine": ("PolicyResult", "SeedRun", "default_seeds", "replay", "run_seed", "sample_workload",
                           "simulate"),
    "mockgpu.sim.frag": ("FragModel", "TaskDistribution", "fragmentation_rate", "task_distribution"),
    "mockgpu.sim.policies": ("PAPER_POLICIES", "POLICY_NAMES", "make_policy"),
    "mockgpu.sim.policy": ("FunctionPolicy", "Policy", "as_policy"),
    "mockgpu.sim.trace": ("NodeList", "PodList", "load_nodes", "load_pods", "load_trace"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
