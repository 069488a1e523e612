"""Trace-driven GPU fragmentation simulator: the experiment of the FGD paper (USENIX ATC '23) on
Alibaba's ``cluster-trace-gpu-v2023``. Pure computation on ``mockgpu.sched``; never talks to an API
server. See ``mockgpu/sim/README.md``."""

from mockgpu.sim.cluster import ClusterState, NodeView, PodShape, best_fit_gpus
from mockgpu.sim.engine import PolicyResult, SeedRun, default_seeds, replay, run_seed, sample_workload, simulate
from mockgpu.sim.frag import FragModel, TaskDistribution, fragmentation_rate, task_distribution
from mockgpu.sim.policies import PAPER_POLICIES, POLICY_NAMES, make_policy
from mockgpu.sim.policy import FunctionPolicy, Policy, as_policy
from mockgpu.sim.trace import NodeList, PodList, load_nodes, load_pods, load_trace

__all__ = [
    "PAPER_POLICIES", "POLICY_NAMES", "ClusterState", "FragModel", "FunctionPolicy", "NodeList", "NodeView",
    "PodList", "PodShape", "Policy", "PolicyResult", "SeedRun", "TaskDistribution", "as_policy", "best_fit_gpus",
    "default_seeds", "fragmentation_rate", "load_nodes", "load_pods", "load_trace", "make_policy", "replay", "run_seed",
    "sample_workload", "simulate", "task_distribution",
]
