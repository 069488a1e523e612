"""The submit panel's model: the Pod a choice of scenario, GPU count, resource and profile turns into,
and what became of it (bound, pending with the scheduler's message, or refused by the API server).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mockgpu.widgets.inspector import failed_message
from mockgpu.widgets.snapshot import GPU_RESOURCE_PREFIX, Obj, Snapshot, node_gpu_allocatable, pod_phase

SCENARIOS = {
    "inspect": ["mockgpu-workload", "inspect"],
    "train": ["mockgpu-workload", "train", "--memory", "8GiB", "--duration", "0", "--interval", "0.5",
              "--log-every", "20"],
    "infer": ["mockgpu-workload", "infer", "--weights", "16GiB", "--kv-step", "4GiB", "--interval", "0.5"],
}
LAB_LABEL = "mockgpu.io/lab"  # what labs delete when they clean up a shared cluster


@dataclass(frozen=True)
class Submission:
    scenario: str
    gpus: str | int  # an integer; a string like "0.5" is passed through so the API server can refuse it
    resource: str = "nvidia.com/gpu"
    scheduler: str = "default-scheduler"
    name: str = ""
    namespace: str = "default"
    args: tuple[str, ...] = ()  # extra arguments for the workload command
    restart: str = "Never"
    command: tuple[str, ...] = ()  # a whole command instead of the scenario's (e.g. ("sleep", "30"))
    node_selector: tuple[tuple[str, str], ...] = ()  # (label, value) pairs for spec.nodeSelector
    # DRA: ResourceClaims (by name) and ResourceClaimTemplates the pod's container uses; each is a pod claim of
    # the same name in spec.resourceClaims and the container's resources.claims
    claims: tuple[str, ...] = ()
    claim_templates: tuple[str, ...] = ()


def pod_manifest(s: Submission) -> Obj:
    """A v1 Pod with one container running the scenario and ``limits: {resource: gpus}`` (no limits for 0 GPUs,
    e.g. a pod whose devices come from its ResourceClaims)."""
    if s.scenario not in SCENARIOS and not s.command:
        raise ValueError(f"unknown scenario {s.scenario!r}; choose one of {', '.join(SCENARIOS)}")
    command = list(s.command) if s.command else [*SCENARIOS[s.scenario], *s.args]
    name = s.name or f"{s.scenario}-{str(s.gpus).replace('.', '-')}-{s.resource.rsplit('/', 1)[-1].replace('.', '-')}"
    resources: Obj = {"limits": {s.resource: str(s.gpus)}} if str(s.gpus) != "0" else {}
    if s.claims or s.claim_templates:
        resources["claims"] = [{"name": c} for c in (*s.claims, *s.claim_templates)]
    spec: Obj = {"restartPolicy": s.restart, "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "main", "image": "mockgpu/workload", "command": command,
                                 "resources": resources}]}
    if s.claims or s.claim_templates:
        spec["resourceClaims"] = ([{"name": c, "resourceClaimName": c} for c in s.claims]
                                  + [{"name": c, "resourceClaimTemplateName": c} for c in s.claim_templates])
    if s.node_selector:
        spec["nodeSelector"] = dict(s.node_selector)
    if s.scheduler and s.scheduler != "default-scheduler":
        spec["schedulerName"] = s.scheduler
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": s.namespace, "labels": {LAB_LABEL: "true"}},
            "spec": spec}


def claim_manifest(name: str, requests: list[Obj], constraints: list[Obj] | None = None,
                   namespace: str = "default") -> Obj:
    """A resource.k8s.io/v1 ResourceClaim, labelled as the lab's, with these device requests (and constraints)."""
    devices: Obj = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, "labels": {LAB_LABEL: "true"}},
            "spec": {"devices": devices}}


APP_LABEL = "mockgpu.io/app"  # a lab Deployment's selector: its name


def job_manifest(s: Submission, *, parallelism: int = 1, completions: int | None = None,
                 backoff_limit: int = 0) -> Obj:
    """A batch/v1 Job whose pod template is ``pod_manifest(s)`` (restartPolicy Never: a failed pod counts
    against ``backoffLimit``, default 0 here so a lab sees the failure instead of six retries)."""
    pod = pod_manifest(s)
    meta = pod["metadata"]
    spec: Obj = {"parallelism": parallelism, "backoffLimit": backoff_limit,
                 "template": {"metadata": {"labels": dict(meta["labels"])}, "spec": pod["spec"]}}
    spec["completions"] = parallelism if completions is None else completions
    if spec["template"]["spec"]["restartPolicy"] == "Always":
        spec["template"]["spec"]["restartPolicy"] = "Never"  # a Job's pods may not restart Always
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(meta["labels"])},
            "spec": spec}


def deployment_manifest(s: Submission, replicas: int = 1) -> Obj:
    """An apps/v1 Deployment of ``replicas`` pods like ``pod_manifest(s)``, restartPolicy Always (the only one
    a Deployment allows: the kubelet restarts a crashed container in place, with its back-off)."""
    pod = pod_manifest(s)
    meta = pod["metadata"]
    labels = {**meta["labels"], APP_LABEL: meta["name"]}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(meta["labels"])},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {APP_LABEL: meta["name"]}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {**pod["spec"], "restartPolicy": "Always"}}}}


def resource_choices(nodes: Iterable[Obj]) -> list[str]:
    """The GPU resources some node advertises (whole, MIG profiles, shared), whole GPUs first."""
    names = {r for n in nodes for r in node_gpu_allocatable(n)}
    return sorted(names, key=lambda r: (r != "nvidia.com/gpu", r)) or ["nvidia.com/gpu"]


@dataclass(frozen=True)
class Outcome:
    """One line for the panel: ``kind`` is bound | pending | refused | waiting."""

    kind: str
    pod: str
    message: str


def outcome(snap: Snapshot, key: str) -> Outcome:
    """Where the submitted pod stands now, from the API (not from what the panel remembers)."""
    pod = snap.pod(key)
    if pod is None:
        return Outcome("refused", key, "the pod no longer exists")
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return Outcome("bound", key, f"{pod_phase(pod)} on {node}")
    msg = failed_message(pod, snap.events_for(pod))
    if msg:
        return Outcome("pending", key, msg)
    return Outcome("waiting", key, "Pending: not scheduled yet")


def is_gpu_resource(name: str) -> bool:
    return name.startswith(GPU_RESOURCE_PREFIX)
