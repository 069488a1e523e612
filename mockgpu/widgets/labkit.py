"""What every lab does first and last: start its own cluster (clean), hand out a client, and clean up.

``LabCluster("clusters/seed-4x2.yaml", name="lab01")`` starts an embedded cluster served from the
notebook's kernel. A state dir left by an earlier or crashed run of the same lab is deleted first, so a
lab run twice starts clean. With ``$MOCKGPU_KUBECONFIG`` set the lab uses that cluster instead (kind, or
one started by ``mockgpu up``) and only deletes the pods, Jobs and Deployments it created itself (label
``mockgpu.io/lab``). A lab submits bare pods (``submit``) or, as a user would, a Job (``submit_job``) or a
Deployment (``submit_deployment``), whose controller-made pods ``pods_of``/``wait_pods`` find by the Job's
``batch.kubernetes.io/job-name`` label or the Deployment's selector (their names end in a random suffix).
With ``$MOCKGPU_BACKEND=upstream`` the lab's own cluster runs on the real control plane instead
(``mockgpu.backends.upstream``), the same way; with ``$MOCKGPU_BACKEND=kind`` it is a kind cluster made from
the lab's spec (``mockgpu.backends.kind``: real kubelets, real containers of the mockgpu image), deleted at
``close``. There the client puts the loaded mockgpu image on every workload it creates, the Nodes are the
spec's (the first is kind's control plane), the real scheduler's results reach the pods as on upstream
(``mockgpu.backends.kind.schedresults``), and waits get longer timeouts (real containers start in seconds).

Every backend is started, found and deleted through the one interface of ``mockgpu.backends.base``
(``get_backend(name).cluster(UpOptions(..., owned=True))``, a ``Cluster``); what differs between them (the sandbox,
when the scheduler's results arrive, the workload image, slower waits) is the backend's ``Traits``.
"""

from __future__ import annotations

import atexit
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from mockgpu.backends.base import Backend, Cluster, Traits, UpOptions, get_backend
from mockgpu.backends.common.recorder import RECORDED
from mockgpu.config import ClusterSpec, NodeSpec
from mockgpu.config.clusterspec import parse_spec
from mockgpu.control.kubelet.sandboxprobe import probe
from mockgpu.errors import MockgpuError
from mockgpu.sched.config import default_config, load_config
from mockgpu.widgets.client import ApiRefused, ClusterClient, connect
from mockgpu.widgets.live import stop_all
from mockgpu.widgets.progress import Progress
from mockgpu.widgets.snapshot import JOB_NAME_LABEL, Obj, condition, node_gpu_allocatable, pod_phase
from mockgpu.widgets.submit import (
    LAB_LABEL,
    Submission,
    claim_manifest,
    deployment_manifest,
    job_manifest,
    pod_manifest,
)

REPO = Path(__file__).resolve().parents[2]


def repo_path(path: str | Path) -> Path:
    """A path relative to the checkout (labs run with the notebook's folder as cwd)."""
    p = Path(path)
    return p if p.is_absolute() else REPO / p


def load_lab_spec(spec: str | Path, scheduler_config: str | Path | None = None,
                  edit: Callable[[dict[str, Any]], None] | None = None) -> ClusterSpec:
    """The cluster spec, optionally pointed at another KubeSchedulerConfiguration file or edited in memory."""
    path = repo_path(spec)
    data = yaml.safe_load(path.read_text())
    if scheduler_config is not None:
        data.setdefault("spec", {})["schedulerConfig"] = str(repo_path(scheduler_config))
    if edit is not None:
        edit(data)
    return parse_spec(data, str(path))


def _decided(p: Obj) -> bool:
    cond = condition(p, "PodScheduled")
    return bool((p.get("spec") or {}).get("nodeName")) or bool(cond and cond.get("reason") == "Unschedulable")


def _and_recorded(check: Callable[[Obj], bool]) -> Callable[[Obj], bool]:
    return lambda p: check(p) and RECORDED in ((p.get("metadata") or {}).get("annotations") or {})


WAIT_UNTIL: dict[str, Callable[[Obj], bool]] = {
    "decided": _decided,  # bound to a node, or reported Unschedulable
    "bound": lambda p: bool((p.get("spec") or {}).get("nodeName")),
    "running": lambda p: pod_phase(p) in ("Running", "Succeeded", "Failed"),
    "finished": lambda p: pod_phase(p) in ("Succeeded", "Failed"),
}


T = TypeVar("T")


def _poll(fn: Callable[[], T], ok: Callable[[T], bool], timeout: float) -> tuple[T, bool]:
    """Call ``fn`` until ``ok(result)`` or ``timeout`` seconds, backing off from 20 ms to 200 ms: (the last
    result, whether it was ok)."""
    deadline, delay = time.monotonic() + timeout, 0.02
    result = fn()
    while not ok(result):
        if time.monotonic() > deadline:
            return result, False
        time.sleep(delay)
        delay = min(delay * 1.5, 0.2)
        result = fn()
    return result, True


def scheduler_profiles(spec: ClusterSpec) -> list[str]:
    """The profile names of the spec's scheduler config (``default-scheduler`` when it has none)."""
    path = spec.scheduler_config_path()
    config = load_config(path) if path else default_config()
    return list(config.profiles)


class LabCluster:
    """Context manager: ``with LabCluster(spec, name=...) as lab: lab.client ...``."""

    def __init__(self, spec: str | Path, *, name: str, scheduler_config: str | Path | None = None,
                 edit: Callable[[dict[str, Any]], None] | None = None, home: str | Path | None = None,
                 control_plane: bool = True) -> None:
        self.spec_path = str(spec)
        self.spec_file = repo_path(spec)  # the file as written (without in-memory edits)
        self.spec = load_lab_spec(spec, scheduler_config, edit)
        self.name = name
        self.home = home
        self.profiles = scheduler_profiles(self.spec)
        self.cluster: Cluster | None = None
        self.client: ClusterClient | None = None
        self.external = bool(os.environ.get("MOCKGPU_KUBECONFIG"))
        self.control_plane = control_plane  # False: API server only (tests that play scheduler and kubelet)
        # API-only labs run on the embedded backend whatever MOCKGPU_BACKEND says: only it serves an API alone
        self.backend = "external" if self.external else \
            os.environ.get("MOCKGPU_BACKEND", "embedded") if control_plane else "embedded"
        self.traits = Traits(sandboxed=False)  # the backend's, once started (external: nothing assumed)
        self.sandbox_line = ""  # which sandbox layer this lab's pods run under (the probe's line), once started

    @property
    def up_command(self) -> str:
        return f"mockgpu up --spec {self.spec_path} --name {self.name}"

    def start(self) -> LabCluster:
        if self.external:
            self.client = connect(os.environ["MOCKGPU_KUBECONFIG"], up_command=self.up_command)
            self.cleanup_pods()
            return self
        backend = self._backend()
        self.traits = backend.traits
        if self.control_plane:
            self.check_sandbox()
        problem = backend.is_available()
        if problem:
            raise MockgpuError(f"MOCKGPU_BACKEND={backend.name}: {problem}")
        cluster = backend.cluster(UpOptions(spec=self.spec, name=self.name, owned=True,
                                            control_plane=self.control_plane,
                                            stop_grace=0.5))  # a lab's pods are disposable: 0.5 s at close, not 2 s
        progress = Progress(f"starting cluster {self.name} ({self.spec_path})", steps=3)
        progress.step("removing what an earlier run of this lab left")
        cluster.delete()  # whatever an earlier or crashed run left (a cluster another process serves: refused)
        progress.finish_step("nothing left from an earlier run")
        progress.step("starting the API server, the scheduler and a kubelet per node")
        self.cluster = cluster.start()
        atexit.register(self.close)  # the kernel stopping deletes the cluster (close() is idempotent)
        up_command = self.up_command + ("" if backend.name == "embedded" else f" --backend {backend.name}")
        self.client = ClusterClient(cluster.api_client(), up_command=up_command)
        self.client.image_override = self.traits.workload_image
        progress.finish_step("API server, scheduler and kubelets started")
        if self.sandbox_line:  # which layer the pods run under, as `mockgpu up` says it
            progress.lines.append(self.sandbox_line)
        gpus = 0
        if self.control_plane:
            progress.step("waiting for every node to publish its GPUs")
            gpus = self._wait_published()
            progress.finish_step("every node published its GPUs")
        progress.done(f"cluster {self.name} ready: {_count(len(self.spec_nodes()), 'node')}, {_count(gpus, 'GPU')} "
                      f"(it lives until lab.close() or the kernel stops)")
        return self

    # -- faults (mockgpu fault; the Cluster interface of backends/base.py) ------------------------------
    def _started(self) -> Cluster:
        if self.cluster is None:
            raise MockgpuError("fault injection needs a cluster this lab started (not MOCKGPU_KUBECONFIG's): "
                               "run lab.start() first")
        return self.cluster

    def inject_fault(self, node: str, gpu: int | str, xid: int) -> Any:
        """Inject Xid ``xid`` on GPU ``gpu`` (index or UUID) of ``node``, as ``mockgpu fault inject`` does."""
        return self._started().inject_fault(node, gpu, xid)

    def clear_faults(self, node: str | None = None, gpu: int | str | None = None) -> int:
        """Forget injected faults (a fake GPU reset), as ``mockgpu fault clear`` does."""
        return self._started().clear_faults(node, gpu)

    def faults(self) -> list[Any]:
        """The injected faults, as ``mockgpu fault list`` shows them."""
        return self._started().faults()

    def _backend(self) -> Backend:
        return get_backend(self.backend, home=self.home)

    @property
    def kueue(self) -> bool:
        """Whether Kueue runs next to this lab's cluster (``spec.kueue`` on the upstream or kind backend, its webhooks
        answering): a lab runs its Kueue part only then and otherwise prints ``kueue_skip_line()``."""
        return self.cluster is not None and self.cluster.info().kueue

    def kueue_skip_line(self) -> str:
        """One line saying why this cluster has no Kueue and how to get it."""
        how = "MOCKGPU_BACKEND=upstream ./scripts/lab, after ./scripts/upstream-build"
        if not self.spec.spec.kueue.enabled:
            return f"Kueue is off in {self.spec_path} (spec.kueue.enabled: false); skipping the Kueue part"
        return (f"Kueue runs only where a real API server is, not on the {self.backend} backend; skipping the Kueue "
                f"part (to run it: {how})")

    def check_sandbox(self) -> None:
        """On the embedded and upstream backends the lab's pods run here, in the workload sandbox: when it cannot
        be built no pod would ever start and every check would answer "Not quite", so say why (the same line
        ``mockgpu up`` fails with) instead of starting the cluster. Kind's pods run in kind's containers."""
        if self._backend().traits.sandboxed:
            self.sandbox_line = probe().check().line  # PodsCannotStart: a notebook shows its one line only

    def spec_nodes(self) -> list[NodeSpec]:
        return list(self.spec.nodes())

    def _wait_published(self, timeout: float = 30.0) -> int:
        """Wait until each node's GPU state is published (the map then shows every GPU); the GPU count."""
        assert self.client is not None
        client = self.client

        want = len(self.spec_nodes())

        def published() -> tuple[bool, int]:
            snap = client.snapshot()
            with_gpus = [n for n in snap.nodes if node_gpu_allocatable(n)]
            ok = len(snap.nodes) >= want and all(n["metadata"]["name"] in snap.gpu_states for n in with_gpus)
            return ok, sum(len(s.get("gpus") or []) for s in snap.gpu_states.values())

        return _poll(published, lambda r: r[0], self._timeout(timeout))[0][1]

    def _timeout(self, seconds: float) -> float:
        """A wait's timeout on this backend: kind's real containers and controllers take seconds, not
        milliseconds, on a loaded machine (its ``Traits.wait_factor``)."""
        return seconds * self.traits.wait_factor

    def submit(self, name: str, scenario: str = "inspect", gpus: int | str | None = None, *,
               resource: str = "nvidia.com/gpu", scheduler: str = "default-scheduler", args: tuple[str, ...] = (),
               command: tuple[str, ...] = (), node_selector: dict[str, str] | None = None,
               claims: tuple[str, ...] = (), claim_templates: tuple[str, ...] = ()) -> Obj:
        """Create a workload Pod (labelled as the lab's) and return it as the API server stored it. ``gpus``
        defaults to 1, or to none when the pod's devices come from ResourceClaims / ResourceClaimTemplates."""
        assert self.client is not None
        if gpus is None:
            gpus = 0 if claims or claim_templates else 1
        return self.client.create_pod(pod_manifest(Submission(
            scenario, gpus, resource, scheduler, name, args=tuple(args), command=tuple(command),
            node_selector=tuple((node_selector or {}).items()), claims=tuple(claims),
            claim_templates=tuple(claim_templates))))

    def apply_device_classes(self, path: str | Path = "clusters/dra/deviceclasses.yaml") -> list[str]:
        """Create (or replace) the DeviceClasses in the YAML file, as ``kubectl apply -f`` does; their names."""
        assert self.client is not None
        docs = [d for d in yaml.safe_load_all(repo_path(path).read_text()) if d]
        return self.client.apply_device_classes(docs)

    def claim(self, name: str, requests: list[Obj], constraints: list[Obj] | None = None,
              namespace: str = "default") -> Obj:
        """Create the ResourceClaim ``name`` (labelled as the lab's) with ``spec.devices.requests`` (and
        ``constraints``), and return it as the API server stored it."""
        assert self.client is not None
        return self.client.create_claim(claim_manifest(name, requests, constraints, namespace))

    def submit_job(self, name: str, scenario: str = "train", gpus: int | str = 1, *, parallelism: int = 1,
                   completions: int | None = None, resource: str = "nvidia.com/gpu", args: tuple[str, ...] = (),
                   command: tuple[str, ...] = (), pod_group: str | None = None, backoff_limit: int = 0) -> Obj:
        """Create a batch/v1 Job (labelled as the lab's; its pods ``<name>-xxxxx`` too) and return it.
        ``pod_group``: its pods join that PodGroup (``spec.schedulingGroup.podGroupName``; GenericWorkload).
        ``backoff_limit``: how many failed pods it replaces (0 here by default: a lab sees the failure)."""
        assert self.client is not None
        sub = Submission(scenario, gpus, resource, name=name, args=tuple(args), command=tuple(command))
        manifest = job_manifest(sub, parallelism=parallelism, completions=completions, backoff_limit=backoff_limit)
        if pod_group:
            manifest["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": pod_group}
        return self.client.create_job(manifest)

    def pod_group(self, name: str, min_count: int, namespace: str = "default") -> Obj:
        """Create a gang PodGroup (``scheduling.k8s.io/v1beta1``, ``schedulingPolicy.gang.minCount``)."""
        assert self.client is not None
        return self.client.create_pod_group({
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "labels": {LAB_LABEL: "true"}},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}})

    def set_parallelism(self, name: str, parallelism: int, namespace: str = "default") -> Obj:
        """Change a Job's ``parallelism`` (as ``kubectl patch``); the Job controller adds or removes workers."""
        assert self.client is not None
        return self.client.set_job_parallelism(namespace, name, parallelism)

    def submit_deployment(self, name: str, scenario: str = "infer", gpus: int | str = 1, *, replicas: int = 1,
                          resource: str = "nvidia.com/gpu", args: tuple[str, ...] = (),
                          command: tuple[str, ...] = ()) -> Obj:
        """Create an apps/v1 Deployment of ``replicas`` pods (labelled as the lab's) and return it."""
        assert self.client is not None
        sub = Submission(scenario, gpus, resource, name=name, args=tuple(args), command=tuple(command))
        return self.client.create_deployment(deployment_manifest(sub, replicas))

    def scale(self, name: str, replicas: int, namespace: str = "default") -> Obj:
        """Set a Deployment's replicas (its ``/scale`` subresource, as ``kubectl scale`` does)."""
        assert self.client is not None
        return self.client.scale_deployment(namespace, name, replicas)

    def pods_of(self, kind: str, name: str, namespace: str = "default") -> list[Obj]:
        """The live (not terminating) pods of Job or Deployment ``name``, oldest first."""
        assert self.client is not None
        if kind == "Job":
            selector = f"{JOB_NAME_LABEL}={name}"
        elif kind == "Deployment":
            labels = self.client.get_deployment(namespace, name)["spec"]["selector"].get("matchLabels") or {}
            selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        else:
            raise ValueError(f"pods_of knows Job and Deployment, not {kind!r}")
        pods = [p for p in self.client.list_pods(namespace, selector) if not p["metadata"].get("deletionTimestamp")]
        return sorted(pods, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))

    def wait_pods(self, kind: str, name: str, until: str = "decided", count: int = 1, timeout: float = 20.0,
                  namespace: str = "default") -> list[Obj]:
        """Poll until the Job/Deployment has ``count`` pods and ``until`` holds for each; MockgpuError on
        timeout. The pods come oldest first; their names are random, so print roles, not names."""
        check, timeout = self._check(until), self._timeout(timeout)
        pods, ok = _poll(lambda: self.pods_of(kind, name, namespace),
                         lambda pods: len(pods) == count and all(check(p) for p in pods), timeout)
        if not ok:
            raise MockgpuError(f"{kind} {namespace}/{name}: {len(pods)} pods, not {count} {until} after "
                               f"{timeout:g}s (phases {', '.join(pod_phase(p) for p in pods) or '-'})")
        return pods

    def _check(self, until: str) -> Callable[[Obj], bool]:
        check = WAIT_UNTIL[until]
        if self.backend in ("upstream", "kind") and until in ("decided", "bound"):
            # the real scheduler's results reach the pod just after its decision (backends.common.recorder)
            check = _and_recorded(check)
        return check

    def wait(self, name: str, until: str = "decided", timeout: float = 20.0, namespace: str = "default") -> Obj:
        """Poll the pod until ``until`` (decided | bound | running | finished) holds; MockgpuError on timeout."""
        assert self.client is not None
        client, check, timeout = self.client, self._check(until), self._timeout(timeout)
        pod, ok = _poll(lambda: client.get_pod(namespace, name), check, timeout)
        if not ok:
            raise MockgpuError(f"pod {namespace}/{name} not {until} after {timeout:g}s (phase {pod_phase(pod)})")
        return pod

    def eventually(self, fn: Callable[[], Any], ok: Callable[[Any], bool] = bool, timeout: float = 10.0) -> Any:
        """Call ``fn`` until ``ok(result)``; the last result after ``timeout`` seconds (e.g. GPU state that is
        published every second catching up with a pod that just started)."""
        return _poll(fn, ok, self._timeout(timeout))[0]

    def clear(self, namespace: str = "default", timeout: float = 15.0) -> None:
        """Delete the lab's Jobs and Deployments and the namespace's pods, and wait until the API has none left
        (a part of a lab starts empty); then the lab's ResourceClaims, once their devices are free again.

        The pods are deleted gracefully (1 s), not forced: a kubelet removes a gracefully deleted pod from the API
        only after its containers stopped and its claims were unprepared (kubelet.go, SyncTerminatingPod: "resources
        must be unprepared AFTER all containers have stopped and BEFORE the pod status is changed on the API
        server"), so the next part never meets a MIG instance or a device of a pod that no longer exists (on kind
        a force-deleted pod's MIG instance was still on its GPU two cells later)."""
        assert self.client is not None
        self._delete_workloads(namespace)  # else their controllers would make the pods again
        self.client.delete_pods(namespace, grace_seconds=1)
        left = self.eventually(lambda: self.client.list_pods(namespace), lambda pods: not pods, timeout)
        if left:
            raise MockgpuError(f"{len(left)} pods still in {namespace} after {timeout:g}s")
        self._delete_claims(namespace, timeout)

    def _delete_claims(self, namespace: str | None, timeout: float | None = 15.0) -> None:
        """The lab's own ResourceClaims (label ``mockgpu.io/lab``; every namespace for None), waited for until
        gone unless ``timeout`` is None (their finalizer goes once the claim controller has deallocated them)."""
        assert self.client is not None

        def mine() -> list[Obj]:
            return self.client.list_claims(namespace, LAB_LABEL)

        try:
            claims = mine()
        except ApiRefused as exc:
            if exc.code == 404:  # a cluster that does not serve resource.k8s.io/v1 has no claims to delete
                return
            raise
        for c in claims:
            self.client.delete_claim(c["metadata"]["namespace"], c["metadata"]["name"])
        if timeout is not None:
            left = self.eventually(mine, lambda cs: not cs, timeout)
            if left:
                raise MockgpuError(f"{len(left)} resourceclaims still there after {timeout:g}s")

    def cleanup_pods(self) -> None:
        """On a shared cluster: delete the Jobs, Deployments and pods labs created (in every namespace)."""
        assert self.client is not None
        self._delete_workloads(None)
        for pod in self.client.list_pods():
            if LAB_LABEL in ((pod["metadata"].get("labels")) or {}):
                self.client.delete_pod(pod["metadata"]["namespace"], pod["metadata"]["name"])
        self._delete_claims(None, timeout=None)

    def _delete_workloads(self, namespace: str | None) -> None:
        """The lab's own Jobs and Deployments (label ``mockgpu.io/lab``); their pods follow (Background)."""
        assert self.client is not None
        for job in self.client.list_jobs(namespace, LAB_LABEL):
            self.client.delete_job(job["metadata"]["namespace"], job["metadata"]["name"])
        for dep in self.client.list_deployments(namespace, LAB_LABEL):
            self.client.delete_deployment(dep["metadata"]["namespace"], dep["metadata"]["name"])

    def summary(self) -> str:
        """One line for a lab's last cell: what is up, and how it goes away."""
        if self.external:
            return ("the lab ran on the cluster of $MOCKGPU_KUBECONFIG; lab.close() deletes the pods, Jobs and "
                    "Deployments it created")
        if self.cluster is None:
            return f"cluster {self.name} is deleted"
        return (f"cluster {self.name} is up ({_count(len(self.spec_nodes()), 'node')}): the live widgets keep "
                f"following it. It is deleted when this notebook's kernel stops; lab.close() deletes it now.")

    def close(self) -> None:
        """Stop the widgets following this cluster and delete it (an external one: delete the lab's pods).
        Runs by itself when the kernel stops; a lab's last cell does not call it, so the cluster outlives
        Run All and the widgets keep answering."""
        atexit.unregister(self.close)
        if self.client is not None:
            stop_all(self.client)
        if self.external:
            if self.client is not None:
                self.cleanup_pods()
            return
        if self.cluster is not None:
            self.cluster.delete()
            self.cluster = None

    def __enter__(self) -> LabCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
