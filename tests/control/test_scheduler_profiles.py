"""Profiles chosen by spec.schedulerName on clusters/seed-4x2-profiles.yaml (4 nodes x 2 GPUs).

Expected NodeResourcesFit scores, from upstream's formulas (node: 32 cpu, 256Gi, 2 GPUs; each pod asks for
one GPU and nothing else, so cpu/memory count the non-zero defaults 100m/200Mi and round to 0 or 99):
  bin-packing  MostAllocated  (cpu 0·1 + mem 0·1 + gpu·5) / 7: empty node gpu 50 → 35, one GPU used 100 → 71
  spreading    LeastAllocated (cpu 99·1 + mem 99·1 + gpu·5) / 7: empty node gpu 50 → 64, one GPU used 0 → 28
  default      LeastAllocated over cpu and memory only: 99 on every node whatever its GPUs hold
"""

from __future__ import annotations

import json

import pytest

from .conftest import Env, gpu_pod

CASES = {
    # profile: (nodes used by four pods, Fit score of an empty node, of a node with one GPU used)
    "bin-packing": (2, 35, 71),
    "spreading": (4, 64, 28),
}


def _scores(pod) -> dict[str, int]:
    table = json.loads(pod.metadata.annotations["mockgpu.io/score-result"])
    return {node: int(row["NodeResourcesFit"]) for node, row in table.items()}


@pytest.mark.parametrize("profile", list(CASES), ids=list(CASES))
def test_four_one_gpu_pods(profiles: Env, profile: str):
    nodes_used, empty_score, half_score = CASES[profile]
    profiles.scheduler()
    names = [f"p{i}" for i in range(4)]
    for name in names:
        profiles.create(gpu_pod(name, 1, scheduler=profile))
    pods = [profiles.wait_bound(n) for n in names]
    placed = [p.spec.node_name for p in pods]
    assert len(set(placed)) == nodes_used
    held: dict[str, int] = {}  # GPUs in use per node before each pod, replayed in scheduling (FIFO) order
    for pod, node in zip(pods, placed, strict=True):
        scores = _scores(pod)
        expected = {n: half_score if held.get(n) == 1 else empty_score for n in scores}
        assert scores == expected, pod.metadata.name
        assert all(held.get(n, 0) < 2 for n in scores)  # full nodes were filtered out, not scored
        assert scores[node] == max(scores.values())
        held[node] = held.get(node, 0) + 1
    events = profiles.events("p0")
    assert [(e.reason, e.source.component) for e in events] == [("Scheduled", profile)]


def test_default_profile_does_not_score_gpus(profiles: Env):
    profiles.scheduler()
    profiles.create(gpu_pod("first", 1))
    first = profiles.wait_bound("first")
    profiles.create(gpu_pod("second", 1))
    second = profiles.wait_bound("second")
    scores = _scores(second)
    assert first.spec.node_name in scores
    assert set(scores.values()) == {99}  # the node holding a GPU pod scores the same as the empty ones
