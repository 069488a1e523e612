"""The scheduling queue and the cache as pure objects (a fake clock, no API server)."""

from __future__ import annotations

import pytest

from mockgpu.control.scheduler.cache import Cache
from mockgpu.control.scheduler.queue import SchedulingQueue
from mockgpu.sched.snapshot import pod_key


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, *, prio: int = 0, created: str = "2026-01-01T00:00:00Z", gpus: int = 1,
        node: str | None = None) -> dict:
    spec: dict = {"priority": prio, "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": gpus}}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "creationTimestamp": created}, "spec": spec}


def node(name: str, gpus: int = 2, **extra: object) -> dict:
    return {"metadata": {"name": name, "labels": {}}, "spec": dict(extra),
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}}}


def drain(q: SchedulingQueue) -> list[str]:
    out = []
    while (item := q.pop()) is not None:
        out.append(item.pod["metadata"]["name"])
        q.done(item.key)
    return out


def test_priority_then_creation_then_arrival_order():
    q = SchedulingQueue(clock=Clock())
    q.add(pod("late", created="2026-01-01T00:00:05Z"))
    q.add(pod("early-b", created="2026-01-01T00:00:01Z"))
    q.add(pod("early-a", created="2026-01-01T00:00:01Z"))  # same second: the order seen
    q.add(pod("important", prio=10, created="2026-01-01T00:00:09Z"))
    assert drain(q) == ["important", "early-b", "early-a", "late"]


@pytest.mark.parametrize(("attempts", "expected"), [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (9, 10)],
                         ids=lambda v: str(v))
def test_backoff_doubles_up_to_the_maximum(attempts, expected):
    assert SchedulingQueue(initial_backoff=1, max_backoff=10).backoff_duration(attempts) == expected


def test_unschedulable_pod_waits_for_an_event_then_its_backoff():
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add(pod("p"))
    item = q.pop()
    q.failed(item, unschedulable=True)
    clock.now += 50
    assert q.pop() is None and q.where("default/p") == "unschedulable"
    q.move_all()  # backoff (1 s after the failure) is over: straight to activeQ
    assert q.pop().attempts == 2
    q.failed(q.get("default/p"), unschedulable=True)
    q.move_all()  # second failure: 2 s backoff from now
    assert q.where("default/p") == "backoff" and q.pop() is None
    assert q.next_wakeup() == pytest.approx(2.0)
    clock.now += 2
    assert q.pop().attempts == 3


def test_errors_go_to_backoff_without_an_event():
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    q.add(pod("p"))
    q.failed(q.pop(), unschedulable=False)
    assert q.where("default/p") == "backoff"
    clock.now += 1
    assert q.pop() is not None


def test_periodic_flush_of_long_unschedulable_pods():
    clock = Clock()
    q = SchedulingQueue(clock=clock, unschedulable_timeout=60)
    q.add(pod("p"))
    q.failed(q.pop(), unschedulable=True)
    clock.now += 59
    assert q.pop() is None
    clock.now += 31  # checked every min(30 s, timeout/2), as upstream's flush goroutine every 30 s
    assert q.pop() is not None


def test_gated_pods_wait_and_updates_of_the_spec_requeue():
    q = SchedulingQueue(clock=Clock())
    gated = pod("g")
    gated["spec"]["schedulingGates"] = [{"name": "x"}]
    q.add(gated)
    assert q.pop() is None and q.where("default/g") == "gated"
    q.update(pod("g"), spec_changed=True)
    assert drain(q) == ["g"]


def test_deleted_pods_leave_the_queue():
    q = SchedulingQueue(clock=Clock())
    q.add(pod("a"))
    q.add(pod("b"))
    q.delete("default/a")
    assert drain(q) == ["b"]


def test_cache_counts_assumed_and_bound_pods_until_they_go():
    c = Cache()
    assert c.set_node(node("n1")) is True
    c.assume(pod("a"), "n1")
    assert c.info("n1").requested["nvidia.com/gpu"] == 1
    c.add_pod(pod("a", node="n1"))  # the watch confirms the assumption: still counted once
    assert c.info("n1").requested["nvidia.com/gpu"] == 1 and not c.is_assumed("default/a")
    c.assume(pod("b"), "n1")
    c.forget("default/b")  # binding failed
    assert c.info("n1").requested["nvidia.com/gpu"] == 1
    c.remove_pod("default/a")
    assert c.info("n1").requested.get("nvidia.com/gpu", 0) == 0


def test_cache_keeps_pods_of_a_node_it_has_not_seen_yet():
    c = Cache()
    c.add_pod(pod("early", node="n2"))
    assert c.nodes() == []
    c.set_node(node("n2"))
    assert c.info("n2").requested["nvidia.com/gpu"] == 1


@pytest.mark.parametrize(("change", "relevant"), [
    ({}, False),
    ({"heartbeat": True}, False),
    ({"gpus": 4}, True),
    ({"taint": True}, True),
    ({"unschedulable": True}, True),
], ids=["same", "heartbeat-only", "allocatable", "taints", "cordoned"])
def test_node_updates_that_can_help_pending_pods(change, relevant):
    c = Cache()
    c.set_node(node("n"))
    updated = node("n", change.get("gpus", 2))
    if change.get("heartbeat"):
        updated["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "later"}]
    if change.get("taint"):
        updated["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    if change.get("unschedulable"):
        updated["spec"]["unschedulable"] = True
    assert c.set_node(updated) is relevant


def test_nominated_pods_are_listed_per_node_and_leave_the_cache_untouched():
    c = Cache()
    c.set_node(node("n"))
    vip = pod("vip", prio=100, gpus=2)
    c.nominate(vip, "n")
    assert c.nominated_pods() == {"n": [vip]}
    assert c.info("n").requested.get("nvidia.com/gpu", 0) == 0  # the cache itself is untouched
    c.unnominate(pod_key(vip))
    assert c.nominated_pods() == {}
