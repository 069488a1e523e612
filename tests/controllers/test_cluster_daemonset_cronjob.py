"""DaemonSets and CronJobs end to end on the embedded backend, driven with kubectl: scheduler and fake kubelets
running the pods, and a ``ControllerManager`` started by the test with a ``FakeClock`` (the cluster's own
controllers are off), so CronJob schedule times arrive when the test moves the clock."""

from __future__ import annotations

import functools
import zoneinfo
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polling
import pytest
from kubectl_harness import KUBECTL, events, get, kubectl_runner

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.control.controllers import ControllerManager
from mockgpu.control.controllers.clock import FakeClock
from mockgpu.control.controllers.cronjob import job_name

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"
NODES = ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
pytestmark = [pytest.mark.skipif(KUBECTL is None, reason="no kubectl on PATH"), pytest.mark.timeout(240)]
wait_for = functools.partial(polling.wait_for, timeout=60.0)


def first_time_after(created: str) -> datetime:
    """The first */5 schedule time after the CronJob's (real) creation time."""
    t = datetime.fromisoformat(created.replace("Z", "+00:00")).replace(second=0)
    return t + timedelta(minutes=5 - t.minute % 5)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(SEED, home=tmp_path_factory.mktemp("home"), kubelets=True, scheduler=True,
                         controllers=False, delete_on_exit=True) as c:
        yield c


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC))


@pytest.fixture(scope="module")
def manager(cluster: EmbeddedCluster, clock: FakeClock) -> Iterator[ControllerManager]:
    mgr = ControllerManager(cluster.api_client(), clock=clock).start()
    assert mgr.wait_synced(20)
    yield mgr
    mgr.stop()


@pytest.fixture(scope="module")
def kubectl(cluster: EmbeddedCluster, manager: ControllerManager):
    return kubectl_runner(cluster.kubeconfig, timeout=90)


def pods_by_node(kubectl, selector: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in get(kubectl, "pods", "-l", selector)["items"]:
        if not p["metadata"].get("deletionTimestamp"):
            out.setdefault(p["spec"].get("nodeName") or "", []).append(p["metadata"]["name"])
    return out


DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: %(name)s}
spec:
  selector: {matchLabels: {app: %(name)s}}
  template:
    metadata: {labels: {app: %(name)s}}
    spec:
      terminationGracePeriodSeconds: 1
      %(extra)s
      containers:
      - {name: agent, image: %(image)s, command: [sleep, "600"]}
"""


def test_daemonset_runs_one_pod_per_node_rolls_out_and_follows_taints(kubectl):
    kubectl("apply", "-f", "-", stdin=DAEMONSET % {"name": "agent", "image": "v1", "extra": ""})
    out = kubectl("rollout", "status", "ds/agent", "--timeout=90s")
    assert 'daemon set "agent" successfully rolled out' in out
    by_node = pods_by_node(kubectl, "app=agent")
    assert sorted(by_node) == NODES and all(len(v) == 1 for v in by_node.values())
    pod = get(kubectl, "pod", by_node["gpu-2"][0])
    assert pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-2"]}]}]}
    assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"} in \
        pod["spec"]["tolerations"]
    assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    assert ("Normal", "SuccessfulCreate", f"Created pod: {by_node['gpu-2'][0]}") in events(kubectl, "DaemonSet",
                                                                                          "agent")
    table = kubectl("get", "ds", "agent", "--no-headers").split()
    assert table[:7] == ["agent", "4", "4", "4", "4", "4", "<none>"]

    # an untolerated NoExecute taint evicts the pod; removing it brings one back
    kubectl("taint", "node", "gpu-3", "maintenance=yes:NoExecute")
    wait_for(lambda: "gpu-3" not in pods_by_node(kubectl, "app=agent"))
    wait_for(lambda: get(kubectl, "ds", "agent")["status"]["desiredNumberScheduled"] == 3)
    kubectl("taint", "node", "gpu-3", "maintenance=yes:NoExecute-")
    wait_for(lambda: len(pods_by_node(kubectl, "app=agent").get("gpu-3", [])) == 1)

    # a template change rolls out node by node
    kubectl("set", "image", "ds/agent", "agent=v2")
    out = kubectl("rollout", "status", "ds/agent", "--timeout=120s")
    assert 'daemon set "agent" successfully rolled out' in out
    ds = get(kubectl, "ds", "agent")
    assert ds["status"]["updatedNumberScheduled"] == 4 and ds["status"]["observedGeneration"] == 2
    pods = [p for p in get(kubectl, "pods", "-l", "app=agent")["items"] if not p["metadata"].get("deletionTimestamp")]
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"v2"}
    assert {p["metadata"]["labels"]["pod-template-generation"] for p in pods} == {"2"}

    kubectl("delete", "ds", "agent")
    wait_for(lambda: not get(kubectl, "pods", "-l", "app=agent")["items"])


def test_daemonset_follows_node_labels(kubectl):
    kubectl("apply", "-f", "-", stdin=DAEMONSET % {"name": "picky", "image": "v1",
                                                  "extra": "nodeSelector: {role: picky}"})
    wait_for(lambda: "observedGeneration" in (get(kubectl, "ds", "picky").get("status") or {}))
    assert get(kubectl, "ds", "picky")["status"]["desiredNumberScheduled"] == 0
    kubectl("label", "node", "gpu-1", "role=picky")
    wait_for(lambda: list(pods_by_node(kubectl, "app=picky")) == ["gpu-1"])
    kubectl("label", "node", "gpu-1", "role-")
    wait_for(lambda: not pods_by_node(kubectl, "app=picky"))
    assert get(kubectl, "ds", "picky")["status"]["desiredNumberScheduled"] == 0
    kubectl("delete", "ds", "picky")


CRONJOB = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "*/5 * * * *"
  timeZone: Europe/Berlin
  successfulJobsHistoryLimit: 2
  jobTemplate:
    metadata: {labels: {team: gpu}}
    spec:
      template:
        spec:
          restartPolicy: Never
          terminationGracePeriodSeconds: 1
          containers:
          - {name: c, image: x, command: [sh, -c, "echo tick"]}
"""


def test_cronjob_runs_jobs_on_the_driven_clock(kubectl, manager: ControllerManager, clock: FakeClock):
    kubectl("apply", "-f", "-", stdin=CRONJOB)
    first = first_time_after(get(kubectl, "cj", "tick")["metadata"]["creationTimestamp"])
    clock.set(first - timedelta(seconds=30))
    table = kubectl("get", "cj", "tick", "--no-headers").split()
    assert table[:8] == ["tick", "*/5", "*", "*", "*", "*", "Europe/Berlin", "False"]
    manager.enqueue("CronJob", "default", "tick")  # nothing is due yet
    names = []
    for step in (0, 5, 10):
        when = first + timedelta(minutes=step)
        clock.set(when + timedelta(seconds=2))
        manager.enqueue("CronJob", "default", "tick")
        names.append(job_name("tick", when))
        wait_for(lambda n=names[-1]: any(j["metadata"]["name"] == n for j in get(kubectl, "jobs")["items"]))
        kubectl("wait", "--for=condition=complete", f"job/{names[-1]}", "--timeout=60s")
    job = get(kubectl, "job", names[-1])
    berlin = (first + timedelta(minutes=10)).astimezone(zoneinfo.ZoneInfo("Europe/Berlin"))
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == \
        berlin.isoformat()
    assert job["metadata"]["labels"]["team"] == "gpu"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    manager.enqueue("CronJob", "default", "tick")
    wait_for(lambda: sorted(j["metadata"]["name"] for j in get(kubectl, "jobs")["items"]) == sorted(names[1:]))
    wait_for(lambda: "active" not in get(kubectl, "cj", "tick")["status"]
             and "lastSuccessfulTime" in get(kubectl, "cj", "tick")["status"])
    last = (first + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert get(kubectl, "cj", "tick")["status"]["lastScheduleTime"] == last
    evs = events(kubectl, "CronJob", "tick")
    assert sorted(m for _, r, m in evs if r == "SuccessfulCreate") == sorted(f"Created job {n}" for n in names)
    assert ("Normal", "SawCompletedJob", f"Saw completed job: {names[0]}, condition: Complete") in evs
    assert ("Normal", "SuccessfulDelete", f"Deleted job {names[0]}") in evs
    kubectl("delete", "cronjob", "tick")  # the cascade takes its Jobs (and their pods)
    wait_for(lambda: not get(kubectl, "jobs", "-l", "team=gpu")["items"])


def test_kubectl_create_cronjob_then_job_from_it_and_deletion_takes_the_jobs(kubectl):
    kubectl("create", "cronjob", "hand", "--image=x", "--schedule=0 3 * * *", "--", "sh", "-c", "echo hand")
    cj = get(kubectl, "cj", "hand")  # sent as protobuf by kubectl
    assert cj["spec"]["schedule"] == "0 3 * * *" and cj["spec"]["concurrencyPolicy"] == "Allow"
    assert cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "sh", "-c", "echo hand"]
    kubectl("create", "job", "--from=cronjob/hand", "by-hand")
    job = get(kubectl, "job", "by-hand")
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert job["metadata"]["ownerReferences"][0]["name"] == "hand"
    kubectl("wait", "--for=condition=complete", "job/by-hand", "--timeout=60s")
    wait_for(lambda: "lastSuccessfulTime" in (get(kubectl, "cj", "hand").get("status") or {}))
    kubectl("delete", "cronjob", "hand")
    wait_for(lambda: not any(j["metadata"]["name"] == "by-hand" for j in get(kubectl, "jobs")["items"]))
