"""GangScheduling (PreEnqueue, PlacementFeasible) and the pod-group cycle, as tables (pure).

The texts are v1.37.2's (pkg/scheduler/framework/plugins/gangscheduling, schedule_one_podgroup.go); the
cycle's outcome for the conformance story was seen on the real kube-scheduler (tests/conformance/test_gang.py
runs it on both)."""

from __future__ import annotations

import random

import pytest
from sched_builders import container, infos, node, pod

from mockgpu.sched.config import default_config
from mockgpu.sched.framework import Code
from mockgpu.sched.plugins.gang_scheduling import min_count, placement_feasible, pre_enqueue
from mockgpu.sched.podgroup_cycle import NO_GROUP_VICTIMS, POD_GROUP_UNSCHEDULABLE, schedule_pod_group

GPU = "nvidia.com/gpu"


def _group(policy: dict, name: str = "g") -> dict:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"schedulingPolicy": policy}}


GANG2 = _group({"gang": {"minCount": 2}})


def _member(name: str, gpus: int = 2, group: str = "g", **kw: object) -> dict:
    c = container(None, resources={"limits": {GPU: str(gpus)}, "requests": {GPU: str(gpus)}})
    return pod(name, c, schedulingGroup={"podGroupName": group}, **kw)


PRE_ENQUEUE = [
    ("no group", pod("p", container()), None, 0, Code.SUCCESS, ""),
    ("group not there yet", _member("w"), None, 1, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
     'waiting for pods\'s pod group "g" to appear in scheduling queue'),
    ("one of two", _member("w"), GANG2, 1, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
     "waiting for minCount pods from a gang to appear in scheduling queue"),
    ("two of two", _member("w"), GANG2, 2, Code.SUCCESS, ""),
    ("basic policy", _member("w"), _group({"basic": {}}), 1, Code.SUCCESS, ""),
]


@pytest.mark.parametrize(("pod_", "group", "known", "code", "message"), [r[1:] for r in PRE_ENQUEUE],
                         ids=[r[0] for r in PRE_ENQUEUE])
def test_pre_enqueue(pod_, group, known, code, message):
    status = pre_enqueue(pod_, group, known)
    assert (status.code, status.message) == (code, message)


@pytest.mark.parametrize(("count", "scheduled", "remaining", "code", "message"), [
    (2, 0, 2, Code.WAIT, "minCount (2) is not yet satisfied: 0 scheduled, 2 remaining"),
    (2, 1, 0, Code.UNSCHEDULABLE, "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"),
    (2, 2, 0, Code.SUCCESS, ""),
    (3, 0, 2, Code.UNSCHEDULABLE, "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"),
    (2, 1, 1, Code.WAIT, "minCount (2) is not yet satisfied: 1 scheduled, 1 remaining"),
])
def test_placement_feasible(count, scheduled, remaining, code, message):
    status = placement_feasible(count, scheduled, remaining)
    assert (status.code, status.message) == (code, message)


def test_min_count():
    assert min_count(GANG2) == 2 and min_count(_group({"basic": {}})) is None


def _nodes(busy: int) -> list:
    """Four 2-GPU nodes, the first ``busy`` of them full."""
    ns = [node(f"n{i}", {"cpu": 32, "memory": "256Gi", GPU: 2}) for i in range(4)]
    blockers = [pod(f"b{i}", container(None, resources={"limits": {GPU: "2"}, "requests": {GPU: "2"}}),
                    node_name=f"n{i}") for i in range(busy)]
    return infos(ns, blockers)


PROFILE = default_config().profiles["default-scheduler"]
GROUP_MSG = f"minCount (2) cannot be satisfied: 1 scheduled, 0 remaining, {NO_GROUP_VICTIMS}"

# (id, busy nodes, pods, minCount, already scheduled, group scheduled?, each pod's node in the cycle (bound only
# when the group is), messages, condition message)
CYCLES = [
    ("one free node: none bound (w0 found n3, w1 nothing)", 3, ["w0", "w1"], 2, 0, False, ["n3", None],
     [f"{POD_GROUP_UNSCHEDULABLE}, {GROUP_MSG}", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."],
     GROUP_MSG),
    ("two free nodes: both bound", 2, ["w0", "w1"], 2, 0, True, ["n2", "n3"], ["", ""], ""),
    ("too few pods for minCount", 0, ["w0"], 2, 0, False, [None],
     ["minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"],
     f"minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, {NO_GROUP_VICTIMS}"),
    ("a late pod joins a group already placed", 2, ["w2"], 2, 2, True, ["n2"], [""], ""),
    ("no room at all: the first pod fails, the rest are not tried", 4, ["w0", "w1", "w2", "w3"], 4, 0, False,
     [None, None, None, None], ["0/4 nodes are available: 4 Insufficient nvidia.com/gpu."]
     + ["minCount (4) cannot be satisfied: 0 scheduled, 3 remaining"] * 3,
     f"minCount (4) cannot be satisfied: 0 scheduled, 3 remaining, {NO_GROUP_VICTIMS}"),
    ("three pods, minCount 2, room for two", 2, ["w0", "w1", "w2"], 2, 0, True, ["n2", "n3", None],
     ["", "", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."], ""),
]


@pytest.mark.parametrize(("busy", "names", "count", "placed", "ok", "nodes", "messages", "condition"),
                         [r[1:] for r in CYCLES], ids=[r[0] for r in CYCLES])
def test_pod_group_cycle(busy, names, count, placed, ok, nodes, messages, condition):
    cluster = _nodes(busy)
    before = [(n.name, dict(n.requested)) for n in cluster]
    res = schedule_pod_group([_member(n) for n in names], cluster, PROFILE, random.Random(0), min_count=count,
                             scheduled=placed)
    assert res.scheduled is ok
    assert [r.selected_node if r is not None else None for r in res.results] == nodes
    assert res.messages == messages
    assert res.condition()["message"] == condition
    assert res.condition()["status"] == ("True" if ok else "False")
    assert [(n.name, dict(n.requested)) for n in cluster] == before  # the cycle works on a copy
