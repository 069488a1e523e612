"""The per-cycle memo of pod requests (upstream's PreFilter state) never serves a stale or foreign answer."""

from __future__ import annotations

from mockgpu.sched.snapshot import cycle_cache, pod_requests


def _pod(gpus: str) -> dict:
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": gpus, "cpu": "1"}}}]}}


def test_inside_a_cycle_each_pod_object_is_computed_once_and_results_are_copies() -> None:
    a, b = _pod("1"), _pod("2")
    with cycle_cache():
        first = pod_requests(a)
        first["nvidia.com/gpu"] = 99  # a caller mutating its copy must not poison the cache
        assert pod_requests(a) == {"nvidia.com/gpu": 1, "cpu": 1000}
        assert pod_requests(b) == {"nvidia.com/gpu": 2, "cpu": 1000}
        assert pod_requests(a, non_zero=True) == {"nvidia.com/gpu": 1, "cpu": 1000, "memory": 200 * 1024 * 1024}


def test_a_changed_pod_is_recomputed_in_the_next_cycle() -> None:
    p = _pod("1")
    with cycle_cache():
        assert pod_requests(p)["nvidia.com/gpu"] == 1
    p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "3"
    with cycle_cache():
        assert pod_requests(p)["nvidia.com/gpu"] == 3
    assert pod_requests(p)["nvidia.com/gpu"] == 3  # outside a cycle: no memo at all
