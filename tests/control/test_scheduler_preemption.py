"""Preemption: a high-priority pod on a full cluster evicts a lower-priority pod and is nominated."""

from __future__ import annotations

from .conftest import Env, gpu_pod, wait_for


def test_preemption_nominates_and_deletes_a_victim(seed: Env):
    seed.scheduler()
    for i in range(4):
        seed.create(gpu_pod(f"low-{i}", 2, priority=0))
    for i in range(4):
        seed.wait_bound(f"low-{i}")
    seed.create(gpu_pod("urgent", 2, priority=1000))
    pod = wait_for(lambda: (p := seed.pod("urgent")).status.nominated_node_name and p, what="nomination")
    node = pod.status.nominated_node_name
    victims = [p for p in seed.api.list_namespaced_pod("default").items
               if p.metadata.deletion_timestamp is not None]
    assert [v.spec.node_name for v in victims] == [node]
    victim = victims[0]
    target = next(c for c in victim.status.conditions if c.type == "DisruptionTarget")
    assert (target.status, target.reason) == ("True", "PreemptionByScheduler")
    preempted = wait_for(lambda: [e for e in seed.events(victim.metadata.name) if e.reason == "Preempted"],
                         what="Preempted event")
    assert preempted[0].message == f"Preempted by pod {pod.metadata.uid} on node {node}"
    cond = seed.wait_unschedulable("urgent")
    # v1.37.2 appends the successful preemption's post-filter message
    assert cond.message == ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: found a potential "
                            f"placement for pod on node {node}, preempting 1 victims")
    # while the victim terminates, a retry (here: a node label changed) waits instead of preempting again
    seed.api.patch_node("gpu-0", {"metadata": {"labels": {"example.com/retry": "1"}}})
    wait_for(lambda: seed.wait_unschedulable("urgent").message == (
        "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. "
        "preemption: not eligible due to a terminating pod on the nominated node."), what="second attempt")
    assert [p.metadata.name for p in seed.api.list_namespaced_pod("default").items
            if p.metadata.deletion_timestamp] == [victim.metadata.name]
    # no kubelet here: finish the victim's termination as its kubelet would
    seed.api.delete_namespaced_pod(victim.metadata.name, "default", grace_period_seconds=0)
    assert seed.wait_bound("urgent").spec.node_name == node
    remaining = [p for p in seed.api.list_namespaced_pod("default").items if p.metadata.deletion_timestamp]
    assert remaining == []
