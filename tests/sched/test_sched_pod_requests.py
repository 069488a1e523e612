"""Pod request computation (PodRequests) and NodeInfo sums."""

from __future__ import annotations

import pytest
from sched_builders import container, node, pod

from mockgpu.sched.snapshot import NodeInfo, node_non_zero_requests, pod_requests

G = 10**9
REQUEST_ROWS = [
    # upstream's comment example: IC1 {2,1G}, IC2 {2,3G}; C1 {2,1G}, C2 {1,1G} -> {3 cpu, 3G}
    ("init containers max, containers sum", pod("p", container({"cpu": "2", "memory": "1G"}),
                                                container({"cpu": "1", "memory": "1G"}),
                                                init=[container({"cpu": "2", "memory": "1G"}),
                                                      container({"cpu": "2", "memory": "3G"})]),
     False, {"cpu": 3000, "memory": 3 * G}),
    # sidecar {1 cpu} added to the sum (2+1 = 3); a later init container needs its own 2 + sidecar 1 = 3
    ("restartable init container (sidecar) added", pod("p", container({"cpu": "2"}),
                                                      init=[container({"cpu": "1"}, restartPolicy="Always"),
                                                            container({"cpu": "2"})]),
     False, {"cpu": 3000}),
    # init need 4 + sidecar 1 = 5 exceeds containers + sidecar = 3
    ("init container after sidecar needs both", pod("p", container({"cpu": "2"}),
                                                   init=[container({"cpu": "1"}, restartPolicy="Always"),
                                                         container({"cpu": "4"})]),
     False, {"cpu": 5000}),
    ("overhead added", pod("p", container({"cpu": "1m", "memory": "1"}), overhead={"cpu": "3m", "memory": "13"}),
     False, {"cpu": 4, "memory": 14}),
    ("pod-level requests replace cpu/memory", pod("p", container({"cpu": "1", "nvidia.com/gpu": "1"}),
                                                 resources={"requests": {"cpu": "4"}}),
     False, {"cpu": 4000, "nvidia.com/gpu": 1}),
    ("non-zero defaults per container without request", pod("p", container(), container({"memory": "1Gi"})),
     True, {"cpu": 200, "memory": 200 * 2**20 + 2**30}),
    ("explicit zero is not defaulted", pod("p", container({"cpu": "0", "memory": "0"})), True, {"cpu": 0, "memory": 0}),
    ("no containers, no defaults", pod("p"), True, {}),
    ("filter request has no defaults", pod("p", container()), False, {}),
]


@pytest.mark.parametrize("p,non_zero,want", [r[1:] for r in REQUEST_ROWS], ids=[r[0] for r in REQUEST_ROWS])
def test_pod_requests(p, non_zero, want):
    assert pod_requests(p, non_zero=non_zero) == want


def test_node_info_sums_and_copies():
    n = node("n1", {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 2})
    p1 = pod("a", container({"nvidia.com/gpu": "1"}))
    info = NodeInfo.from_node(n, [p1])
    assert info.allocatable == {"pods": 32, "cpu": 4000, "memory": 8 * 2**30, "nvidia.com/gpu": 2}
    assert info.requested == {"nvidia.com/gpu": 1}
    assert info.non_zero_requested == {"cpu": 100, "memory": 200 * 2**20}
    bigger = info.with_pod(pod("b", container({"cpu": "1", "nvidia.com/gpu": "1"})))
    assert (bigger.pod_count, info.pod_count) == (2, 1)
    assert bigger.requested == {"nvidia.com/gpu": 2, "cpu": 1000}
    bigger.remove_pod("default/a")
    assert bigger.requested == {"cpu": 1000, "nvidia.com/gpu": 1}


MI = 2**20
NODE_NON_ZERO_ROWS = [
    # framework/types.go PodInfo.CalculateResource (v1.37.2) with getNonMissingContainerRequests
    ("no pod-level requests: every container missing cpu/memory counts 100m/200Mi",
     pod("p", container(), container({"memory": "1Gi"})), {"cpu": 200, "memory": 200 * MI + 2**30}),
    ("pod-level cpu, one container sets memory: memory is present, so no 200Mi for the other container",
     pod("p", container(), container({"memory": "1Gi"}), resources={"requests": {"cpu": "2"}}),
     {"cpu": 2000, "memory": 2**30}),
    ("pod-level cpu, no container memory: 200Mi per container",
     pod("p", container(), container(), resources={"requests": {"cpu": "2"}}), {"cpu": 2000, "memory": 400 * MI}),
    ("pod-level cpu and memory: no defaults at all",
     pod("p", container(), resources={"requests": {"cpu": "500m", "memory": "1Gi"}}), {"cpu": 500, "memory": 2**30}),
    ("pod-level requests of an unsupported resource only do not count as pod-level",
     pod("p", container(), resources={"requests": {"nvidia.com/gpu": "1"}}), {"cpu": 100, "memory": 200 * MI}),
]


@pytest.mark.parametrize("p,want", [r[1:] for r in NODE_NON_ZERO_ROWS], ids=[r[0] for r in NODE_NON_ZERO_ROWS])
def test_node_non_zero_requests(p, want):
    assert node_non_zero_requests(p) == want
    assert NodeInfo.from_node(node("n", {"cpu": "8"}), [p]).non_zero_requested == want
