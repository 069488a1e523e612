"""Many pods at once: the scheduler's assumptions keep nodes from being overcommitted; priority order."""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from kubernetes import client

from .conftest import Env, gpu_pod, wait_for


def test_concurrent_one_gpu_pods_never_exceed_two_per_node(seed: Env):
    s = seed.scheduler()
    names = [f"burst-{i}" for i in range(20)]

    def create(name: str) -> None:
        client.CoreV1Api(seed.cluster.api_client()).create_namespaced_pod("default", gpu_pod(name, 1))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(create, names))
    wait_for(lambda: sum(1 for p in seed.api.list_namespaced_pod("default").items if p.spec.node_name) >= 8,
             what="8 pods bound")
    wait_for(lambda: s.queue.counts().get("unschedulable") == 12, what="12 pods unschedulable")
    pods = seed.api.list_namespaced_pod("default").items
    per_node = Counter(p.spec.node_name for p in pods if p.spec.node_name)
    assert per_node == {"gpu-0": 2, "gpu-1": 2, "gpu-2": 2, "gpu-3": 2}
    assert s.scheduled == 8


def test_higher_priority_pod_is_scheduled_first(seed: Env):
    for i in range(3):  # leave room for exactly one 2-GPU pod
        seed.create(gpu_pod(f"fill-{i}", 2) | {"spec": {**gpu_pod("x", 2)["spec"], "nodeName": f"gpu-{i}"}})
    seed.create(gpu_pod("low", 2, priority=0))
    time.sleep(1.1)  # a later creationTimestamp for the high-priority pod
    seed.create(gpu_pod("high", 2, priority=100))
    seed.scheduler()  # both wait in the queue when the scheduler starts
    assert seed.wait_bound("high").spec.node_name == "gpu-3"
    seed.wait_unschedulable("low")


def test_same_priority_is_first_in_first_out(seed: Env):
    for i in range(3):
        seed.create(gpu_pod(f"fill-{i}", 2) | {"spec": {**gpu_pod("x", 2)["spec"], "nodeName": f"gpu-{i}"}})
    seed.create(gpu_pod("older", 2))
    time.sleep(1.1)
    seed.create(gpu_pod("newer", 2))
    seed.scheduler()
    seed.wait_bound("older")
    seed.wait_unschedulable("newer")
