"""The fragmentation measure on hand-computed examples, and the task distribution cut."""

from __future__ import annotations

import numpy as np
import pytest
from sim_builders import dist, pods

from mockgpu.sim.frag import FragModel, fragmentation_rate, task_distribution

# Typical tasks: a 500-milli share (p 0.5), one whole GPU (p 0.25), a CPU-only task (p 0.25); 1 core each.
DIST = dist((1000, 500, 1, 0.5), (1000, 1000, 1, 0.25), (1000, 0, 0, 0.25))

EXAMPLES = [
    # idle node: share and whole GPU fit (nothing fragmented for them); the CPU task sees all 2000 idle
    # milli-GPU as fragmented: 0.25 * 2000 = 500
    ("idle-node", 32000, [1000, 1000], 500.0),
    # no CPU left for anyone: every task sees all 1300 idle milli-GPU as fragmented
    ("lacks-cpu", 500, [300, 1000], 1300.0),
    # share fits on the 600 GPU but the 300 one is too small for it: 0.5 * 300;
    # no free GPU for the whole-GPU task: 0.25 * 900; CPU task: 0.25 * 900  => 150 + 225 + 225
    ("partly-used", 32000, [300, 600], 600.0),
    # everything allocated: nothing idle, nothing fragmented
    ("full", 32000, [0, 0], 0.0),
]


@pytest.mark.parametrize(("cpu", "gpus", "expected"), [e[1:] for e in EXAMPLES], ids=[e[0] for e in EXAMPLES])
def test_node_fragmentation_by_hand(cpu, gpus, expected):
    model = FragModel.for_models(DIST, ("T4",))
    got = model.node_frag(np.array([cpu]), np.array([gpus]), np.array([0]))
    assert got[0] == pytest.approx(expected)


def test_cluster_rate_is_fragmented_over_idle():
    model = FragModel.for_models(DIST, ("T4",))
    left = np.array([[1000, 1000], [300, 600]])
    frag = model.node_frag(np.array([32000, 32000]), left, np.array([0, 0]))
    assert fragmentation_rate(frag, left) == pytest.approx(100 * (500 + 600) / (2000 + 900))
    assert fragmentation_rate(np.zeros(1), np.zeros((1, 2))) == 0.0


def test_model_constraint_makes_idle_gpus_fragmented_for_that_task():
    # a task that needs an A100 sees a T4 node's idle GPUs as fragmented
    d = dist((1000, 1000, 1, 1.0), specs=("A100",))
    model = FragModel.for_models(d, ("A100", "T4"))
    frag = model.node_frag(np.array([8000, 8000]), np.array([[1000], [1000]]), np.array([0, 1]))
    assert frag.tolist() == [0.0, 1000.0]


def test_task_distribution_keeps_popular_shapes_to_95_percent():
    # 20 pods: 10 of shape A, 6 of B, 3 of C, 1 of D. Cumulative 50 %, 80 %, 95 % -> A, B, C kept, D dropped.
    shapes = [(4000, 8192, 1, 500)] * 10 + [(8000, 1, 1, 1000)] * 6 + [(0, 1, 0, 0)] * 3 + [(1000, 1, 8, 1000)]
    d = task_distribution(pods(*shapes))
    assert d.gpu_milli.tolist() == [500, 1000, 0]
    assert d.cpu_milli.tolist() == [4000, 8000, 100]  # a pod without CPU request counts as 100m
    assert d.prob.tolist() == pytest.approx([10 / 19, 6 / 19, 3 / 19])
