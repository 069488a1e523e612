"""Lab 11's gang view model against hand-made Jobs, pods and PodGroups (no cluster): who holds GPUs, who trains
(all of a Job's workers run: the rendezvous), and each PodGroup's printed status."""

from __future__ import annotations

import pytest

from mockgpu.widgets.gangs import gang_view, gangs_html

JOB_LABEL = "batch.kubernetes.io/job-name"


def _job(name: str, parallelism: int, succeeded: int = 0, group: str = "") -> dict:
    template: dict = {"spec": {"schedulingGroup": {"podGroupName": group}}} if group else {"spec": {}}
    return {"metadata": {"name": name}, "spec": {"parallelism": parallelism, "completions": parallelism,
                                                 "template": template},
            "status": {"succeeded": succeeded}}


def _worker(job: str, i: int, phase: str = "Pending", node: str = "", gpus: int = 2, group: str = "") -> dict:
    spec: dict = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if node:
        spec["nodeName"] = node
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"metadata": {"name": f"{job}-{i}", "namespace": "default", "labels": {JOB_LABEL: job}}, "spec": spec,
            "status": {"phase": phase}}


def _pg(name: str, min_count: int, condition: tuple[str, str] | None = None) -> dict:
    status = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": condition[0], "message": condition[1]}]} \
        if condition else {}
    return {"metadata": {"name": name}, "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
            "status": status}


HALF = [_worker(j, i, "Running", f"n{k}") for k, (j, i) in enumerate([("a", 0), ("a", 1), ("b", 0), ("b", 1)])] + [
    _worker(j, i) for j in ("a", "b") for i in (2, 3)]
GANG_A = [_worker("a", i, "Running", f"n{i}", group="a") for i in range(4)] + [
    _worker("b", i, group="b") for i in range(4)]

CASES = [
    ("deadlock: half of each Job placed", [_job("a", 4), _job("b", 4)], HALF, [], 8, 0,
     ["waiting for peers (2/4 running, 2 bound)"] * 2),
    ("gangs: one Job placed whole", [_job("a", 4, group="a"), _job("b", 4, group="b")], GANG_A,
     [_pg("a", 4, ("True", "")), _pg("b", 4, ("False", "minCount (4) cannot be satisfied"))], 8, 8,
     ["training (4/4 workers)", "no worker placed (0/4)"]),
    ("bound but not yet running: held, not training", [_job("a", 2)],
     [_worker("a", 0, "Pending", "n0"), _worker("a", 1, "Running", "n1")], [], 4, 0,
     ["waiting for peers (1/2 running, 2 bound)"]),
    ("done: finished workers hold nothing", [_job("a", 2, succeeded=2)],
     [_worker("a", i, "Succeeded", f"n{i}") for i in range(2)], [], 0, 0, ["done"]),
]


@pytest.mark.parametrize(("jobs", "pods", "groups", "held", "training", "states"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_gang_view(jobs, pods, groups, held, training, states):
    m = gang_view(pods, jobs, groups)
    assert (m.gpus_held, m.gpus_training) == (held, training)
    assert [j.state for j in m.jobs] == states
    html = gangs_html(m)
    assert f"GPUs held: {held}" in html and f"training: {training}" in html


def test_podgroup_rows():
    m = gang_view(GANG_A, [_job("a", 4, group="a"), _job("b", 4, group="b")],
                  [_pg("a", 4, ("True", "")), _pg("b", 4, ("False", "minCount (4) cannot be satisfied")), _pg("c", 2)])
    assert [(g.name, g.min_count, g.bound, g.status) for g in m.groups] == [
        ("a", 4, 4, "Scheduled"), ("b", 4, 0, "Unschedulable"), ("c", 2, 0, "Pending")]
    assert m.jobs[0].group == "a"
    assert "PodGroup b: minCount 4, 0 bound, Unschedulable" in m.describe()
