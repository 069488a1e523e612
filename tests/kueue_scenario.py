"""Kueue scenarios shared by the upstream and kind backends' tests (``tests/upstream/test_upstream_kueue.py``,
``tests/backends/test_kind_kueue.py``): one ClusterQueue with a quota of 4 ``nvidia.com/gpu`` (and cpu/memory: a
ClusterQueue must cover every resource its workloads request) on ResourceFlavor ``default``, LocalQueues, and Jobs of
2-GPU pods labelled ``kueue.x-k8s.io/queue-name``, through the official client."""

from __future__ import annotations

import datetime
from typing import Any

import polling
from kubernetes import client

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# Kueue's flavor assigner (pkg/scheduler/flavorassigner: Assignment.Message, "insufficient unused quota") for a Job's
# pod set "main" asking 4 GPUs of a queue whose 4 are all in use
NO_QUOTA = ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
            "default, 4 more needed")
WAIT = 120.0  # a loaded 2-core machine: the Job controller, Kueue, the scheduler and the kubelets in turn


def custom(api: Any) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def create_queues(api: Any, cq: str, lq: str, namespace: str, gpus: int, *, cohort: str | None = None,
                  borrowing: bool = False, preempt: bool = False) -> None:
    """A ClusterQueue ``cq`` (``gpus`` nvidia.com/gpu on flavor ``default``) and a LocalQueue ``lq`` pointing at it."""
    objs = custom(api)
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{
            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
            "flavors": [{"name": "default", "resources": [
                {"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "512Gi"},
                {"name": "nvidia.com/gpu", "nominalQuota": str(gpus)}]}],
        }],
    }
    if cohort:
        spec["cohortName"] = cohort
    if not borrowing and cohort:
        for r in spec["resourceGroups"][0]["flavors"][0]["resources"]:
            r["borrowingLimit"] = "0"
    if preempt:
        spec["preemption"] = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    objs.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterQueue", "metadata": {"name": cq}, "spec": spec})
    objs.create_namespaced_custom_object(GROUP, VERSION, namespace, "localqueues", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "LocalQueue", "metadata": {"name": lq, "namespace": namespace},
        "spec": {"clusterQueue": cq}})


def ensure_flavor(api: Any) -> None:
    try:
        custom(api).create_cluster_custom_object(GROUP, VERSION, "resourceflavors", {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    except client.ApiException as exc:
        if exc.status != 409:
            raise


def job(name: str, queue: str, *, seconds: int, pods: int = 2, gpus_per_pod: int = 2,
        image: tuple[str, str] | None = None) -> dict[str, Any]:
    """A Job of ``pods`` pods of ``gpus_per_pod`` GPUs each that sleep ``seconds``, queued in LocalQueue ``queue``;
    ``image``: (image, pull policy) the backend's workloads must name (``Traits.workload_image``)."""
    labels = {QUEUE_LABEL: queue}
    container: dict[str, Any] = {"name": "train", "image": image[0] if image else "mockgpu/workload"}
    if image:
        container["imagePullPolicy"] = image[1]
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": labels},
        "spec": {"parallelism": pods, "completions": pods, "backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
            "containers": [{**container, "command": ["sleep", str(seconds)],
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                          "limits": {"nvidia.com/gpu": str(gpus_per_pod)}}}]}}},
    }


def workload_of(api: Any, namespace: str, job_name: str) -> dict[str, Any] | None:
    """The Workload Kueue made for Job ``job_name`` (its owner)."""
    items = custom(api).list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")["items"]
    for wl in items:
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Job" and o.get("name") == job_name for o in owners):
            return dict(wl)
    return None


def condition(wl: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for c in ((wl or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def suspended(batch: client.BatchV1Api, name: str, namespace: str = "default") -> bool:
    return bool(batch.read_namespaced_job(name, namespace).spec.suspend)


def bound_pods(core: client.CoreV1Api, job_name: str, namespace: str = "default") -> list[client.V1Pod]:
    pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={job_name}").items
    return [p for p in pods if p.spec.node_name]


def ts(value: Any) -> datetime.datetime:
    return value if isinstance(value, datetime.datetime) else datetime.datetime.fromisoformat(
        str(value).replace("Z", "+00:00"))


def quota_scenario(api: Any, image: tuple[str, str] | None = None, wait: float = WAIT, first_runs: int = 25) -> None:
    """Two 4-GPU Jobs on a 4-GPU queue: the first (its pods sleep ``first_runs`` seconds) admitted (unsuspended, pods
    bound to GPU nodes), the second suspended with its Workload's ``QuotaReserved=False`` and Kueue's message until
    the first completes."""
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    ensure_flavor(api)
    create_queues(api, "gpus", "team-a", "default", 4)

    batch.create_namespaced_job("default", job("train-1", "team-a", seconds=first_runs, image=image))
    polling.wait_for(lambda: not suspended(batch, "train-1"), wait, "train-1 admitted (unsuspended)")
    pods = polling.wait_for(lambda: len(bound_pods(core, "train-1")) == 2 and bound_pods(core, "train-1"), wait,
                            "train-1's two pods bound")
    gpu_nodes = {n.metadata.name for n in core.list_node().items
                 if int((n.status.allocatable or {}).get("nvidia.com/gpu", "0")) > 0}
    assert {p.spec.node_name for p in pods} <= gpu_nodes
    wl1 = workload_of(api, "default", "train-1")
    assert (condition(wl1, "QuotaReserved") or {}).get("status") == "True"
    assert (condition(wl1, "Admitted") or {}).get("status") == "True"

    # The second 4-GPU Job waits: suspended by Kueue's webhook at creation, its Workload without quota.
    batch.create_namespaced_job("default", job("train-2", "team-a", seconds=1, image=image))
    wl2 = polling.wait_for(lambda: (c := condition(w := workload_of(api, "default", "train-2"), "QuotaReserved"))
                           and c.get("status") == "False" and c.get("message") == NO_QUOTA and w, wait,
                           "train-2's Workload QuotaReserved=False with Kueue's message")
    assert condition(wl2, "QuotaReserved")["reason"] == "Pending"
    assert suspended(batch, "train-2")
    assert core.list_namespaced_pod("default", label_selector="job-name=train-2").items == []
    assert not (batch.read_namespaced_job("train-1", "default").status.succeeded or 0), \
        f"train-1 finished before train-2 was seen waiting ({first_runs} s too short for this machine?)"

    # train-1 finishes; only then does Kueue admit train-2.
    polling.wait_for(lambda: (batch.read_namespaced_job("train-1", "default").status.succeeded or 0) == 2, wait,
                     "train-1 complete")
    polling.wait_for(lambda: not suspended(batch, "train-2"), wait, "train-2 admitted once train-1 finished")
    done_at = ts(batch.read_namespaced_job("train-1", "default").status.completion_time)
    admitted = condition(workload_of(api, "default", "train-2"), "QuotaReserved")
    assert admitted["status"] == "True"
    assert ts(admitted["lastTransitionTime"]) >= done_at.replace(microsecond=0)
    polling.wait_for(lambda: len(bound_pods(core, "train-2")) == 2, wait, "train-2's pods bound")


def cohort_scenario(api: Any, image: tuple[str, str] | None = None, wait: float = WAIT) -> None:
    """Two teams' ClusterQueues in one cohort, 2 GPUs each: team-b's idle quota is lent to team-a's 4-GPU Job; a
    team-b Job then reclaims it (``reclaimWithinCohort: Any``) and Kueue evicts team-a's Job (suspended again, its
    Workload ``Evicted`` with reason ``Preempted``)."""
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "cohort"}})
    ensure_flavor(api)
    create_queues(api, "team-a-cq", "team-a", "cohort", 2, cohort="research", borrowing=True)
    create_queues(api, "team-b-cq", "team-b", "cohort", 2, cohort="research", preempt=True)
    polling.wait_for(lambda: core.list_namespaced_service_account("cohort").items, wait, "the namespace's SA")

    batch.create_namespaced_job("cohort", job("borrower", "team-a", seconds=600, image=image))
    polling.wait_for(lambda: not suspended(batch, "borrower", "cohort"), wait, "borrower admitted, borrowing 2 GPUs")
    batch.create_namespaced_job("cohort", job("owner", "team-b", seconds=600, pods=1, image=image))
    polling.wait_for(lambda: not suspended(batch, "owner", "cohort"), wait, "owner admitted after reclaiming")
    evicted = condition(workload_of(api, "cohort", "borrower"), "Evicted")
    assert evicted and evicted["status"] == "True" and evicted["reason"] == "Preempted", evicted
    assert suspended(batch, "borrower", "cohort")
