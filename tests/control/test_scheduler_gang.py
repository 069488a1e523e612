"""The embedded scheduler loop with gang scheduling (GenericWorkload on): a PodGroup's pods are held until the group
can form, placed together or not at all, and the PodGroup's condition is written; without the gate the same pods
are scheduled one by one (the API server drops their schedulingGroup)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from .conftest import SEED, Env, _env, gpu_pod, wait_for

GROUP_MSG = ("minCount (2) cannot be satisfied: 1 scheduled, 0 remaining, pod group preemption: No preemption "
             "victims found for incoming preemptor")


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[Env]:
    doc = yaml.safe_load(SEED.read_text())
    doc["spec"]["featureGates"] = {"GenericWorkload": True}
    spec = tmp_path / "seed-gang.yaml"
    spec.write_text(yaml.safe_dump(doc))
    yield from _env(tmp_path, spec)


def _member(name: str, gpus: int = 2, group: str = "g") -> dict:
    pod = gpu_pod(name, gpus)
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return pod


def _podgroup(env: Env, name: str, count: int) -> client.SchedulingV1beta1Api:
    api = client.SchedulingV1beta1Api(env.cluster.api_client())
    api.create_namespaced_pod_group("default", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": count}}}})
    return api


def _condition(api: client.SchedulingV1beta1Api, name: str) -> tuple | None:
    pg = api.read_namespaced_pod_group(name, "default")
    return next(((c.status, c.reason, c.message) for c in (pg.status.conditions or [])), None)


def test_a_gang_binds_only_when_all_fit(gated: Env):
    gated.scheduler()
    for i in range(3):
        gated.create(gpu_pod(f"fill-{i}", 2))
        gated.wait_bound(f"fill-{i}")
    sched = _podgroup(gated, "g", 2)
    gated.create(_member("w0"))
    gated.create(_member("w1"))
    assert gated.wait_unschedulable("w0").message == f"pod group is unschedulable, {GROUP_MSG}"
    assert gated.wait_unschedulable("w1").message == "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    assert wait_for(lambda: _condition(sched, "g"), what="PodGroup condition") == ("False", "Unschedulable",
                                                                                    GROUP_MSG)
    assert gated.pod("w0").spec.node_name is None and gated.pod("w1").spec.node_name is None
    gated.api.delete_namespaced_pod("fill-0", "default", grace_period_seconds=0)
    nodes = {gated.wait_bound(w).spec.node_name for w in ("w0", "w1")}
    assert len(nodes) == 2
    assert wait_for(lambda: (c := _condition(sched, "g")) and c[0] == "True" and c,
                    what="Scheduled") == ("True", "Scheduled", "")


def test_a_gang_short_of_pods_waits_without_a_write(gated: Env):
    gated.scheduler()
    _podgroup(gated, "h", 3)
    gated.create(_member("a", 1, "h"))
    gated.create(_member("b", 1, "h"))
    gated.create(gpu_pod("plain", 1))
    gated.wait_bound("plain")  # the scheduler has had its look at a and b
    for name in ("a", "b"):
        pod = gated.pod(name)
        assert pod.spec.node_name is None and not pod.status.conditions and not gated.events(name)
    gated.create(_member("c", 1, "h"))  # the third pod: the group forms
    assert {gated.wait_bound(n).spec.node_name is not None for n in ("a", "b", "c")} == {True}


def test_without_the_gate_pods_are_scheduled_one_by_one(seed: Env):
    seed.scheduler()
    for i in range(3):
        seed.create(gpu_pod(f"fill-{i}", 2))
        seed.wait_bound(f"fill-{i}")
    seed.create(_member("w0"))
    seed.create(_member("w1"))
    assert seed.wait_bound("w0").spec.scheduling_group is None  # dropped by the API server
    assert seed.wait_unschedulable("w1").message.startswith("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
