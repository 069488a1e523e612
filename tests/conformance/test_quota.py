"""GPU quotas side by side: ResourceQuota and LimitRange on the embedded and the upstream API server (with their
quota controllers), compared by status code, Status reason and message, and what the quota's status shows."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from test_api import normalise

from mockgpu.backends.upstream import binaries

SCHEDULER = "no-such-scheduler"  # pods stay Pending and unbound: only admission and the quota controller act
GPU_QUOTA = {"requests.nvidia.com/gpu": "2", "limits.nvidia.com/gpu": "4", "pods": "3", "count/configmaps": "5"}


def _pod(name: str, resources: dict[str, Any] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "mockgpu/workload"}
    if resources is not None:
        c["resources"] = resources
    return {"metadata": {"name": name}, "spec": {"schedulerName": SCHEDULER, "containers": [c]}}


def _gpu_pod(name: str, gpus: int) -> dict[str, Any]:
    return _pod(name, {"limits": {"nvidia.com/gpu": str(gpus)}})


def outcome(call: Callable[[], Any], view: Callable[[Any], Any]) -> dict[str, Any]:
    try:
        result = call()
    except ApiException as exc:
        body = json.loads(exc.body or "{}")
        causes = sorted((c.get("reason"), c.get("field"), c.get("message"))
                        for c in (body.get("details") or {}).get("causes") or [])
        return {"code": exc.status, "reason": body.get("reason"), "message": body.get("message"), "causes": causes}
    return {"code": 200, "view": view(result)}


def _status(core: Any, ns: str, name: str, until: Callable[[Any], bool]) -> Any:
    """The quota's status once ``until`` holds (the controller's sync is asynchronous on both sides)."""
    deadline = time.monotonic() + 30
    q = core.read_namespaced_resource_quota(name, ns)
    while time.monotonic() < deadline and not until(q.status):
        time.sleep(0.1)
        q = core.read_namespaced_resource_quota(name, ns)
    return {"hard": (q.status.hard if q.status else None), "used": (q.status.used if q.status else None)}


def _synced(status: Any) -> bool:
    return status is not None and status.used is not None


def _ns(core: Any, name: str) -> None:
    core.create_namespace({"metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # upstream refuses pods until the namespace's ServiceAccount exists
        try:
            core.read_namespaced_service_account("default", name)
            return
        except ApiException:
            time.sleep(0.1)


def battery(api: Any, kubectl: Any) -> list[tuple[str, dict[str, Any]]]:
    core = client.CoreV1Api(api)
    out: list[tuple[str, dict[str, Any]]] = []

    def case(name: str, call: Callable[[], Any], view: Callable[[Any], Any] = lambda r: r) -> None:
        out.append((name, outcome(call, view)))

    a, b = "quota-team-a", "quota-team-b"
    _ns(core, a)
    _ns(core, b)
    case("create a GPU quota", lambda: core.create_namespaced_resource_quota(
        a, {"metadata": {"name": "team-a"}, "spec": {"hard": GPU_QUOTA}}), lambda q: (q.spec.hard, q.status))
    case("status after the controller's first sync", lambda: _status(core, a, "team-a", _synced))
    case("kubectl get quota", lambda: kubectl(["get", "quota", "-n", a]))
    case("a pod with 2 GPUs", lambda: core.create_namespaced_pod(a, _gpu_pod("train-1", 2)),
         lambda p: p.metadata.name)
    case("a third GPU is over quota (403)", lambda: core.create_namespaced_pod(a, _gpu_pod("train-2", 1)))
    case("status.used with the pod", lambda: _status(
        core, a, "team-a", lambda s: (s.used or {}).get("requests.nvidia.com/gpu") == "2"))
    case("kubectl describe quota", lambda: kubectl(["describe", "quota", "team-a", "-n", a]))
    case("delete the pod", lambda: core.delete_namespaced_pod("train-1", a), lambda p: None)
    case("status.used after it is gone", lambda: _status(
        core, a, "team-a", lambda s: (s.used or {}).get("requests.nvidia.com/gpu") == "0"))
    # After a deletion, kube-controller-manager's recount reads its informer caches, which may not hold a pod
    # admitted a moment ago: it can write a status.used without that pod (seen here under load: pods 1 of 2),
    # until its 5-minute resync. So team A's status is not compared again after the creates below.
    case("now the GPU fits", lambda: core.create_namespaced_pod(a, _gpu_pod("train-2", 1)), lambda p: None)
    # validation
    case("a quota on a bare name (422)", lambda: core.create_namespaced_resource_quota(
        a, {"metadata": {"name": "bad1"}, "spec": {"hard": {"gpu": "1"}}}))
    case("a fractional extended resource (422)", lambda: core.create_namespaced_resource_quota(
        a, {"metadata": {"name": "bad2"}, "spec": {"hard": {"nvidia.com/gpu": "1500m"}}}))
    case("conflicting scopes (422)", lambda: core.create_namespaced_resource_quota(
        a, {"metadata": {"name": "bad3"}, "spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort", "NotBestEffort"]}}))
    case("a scope that does not apply to the resource (422)", lambda: core.create_namespaced_resource_quota(
        a, {"metadata": {"name": "bad4"}, "spec": {"hard": {"requests.cpu": "1"}, "scopes": ["BestEffort"]}}))
    # compute quotas and LimitRanges
    case("a compute quota", lambda: core.create_namespaced_resource_quota(
        b, {"metadata": {"name": "compute"}, "spec": {"hard": {"requests.cpu": "1", "limits.memory": "1Gi"}}}),
        lambda q: q.spec.hard)
    case("its first status", lambda: _status(core, b, "compute", _synced))
    case("a pod that states neither (403 must specify)", lambda: core.create_namespaced_pod(b, _pod("bare")))
    case("a LimitRange with defaults", lambda: core.create_namespaced_limit_range(b, {
        "metadata": {"name": "defaults"}, "spec": {"limits": [{"type": "Container", "max": {"cpu": "800m"},
                                                               "default": {"cpu": "500m", "memory": "256Mi"},
                                                               "defaultRequest": {"cpu": "250m"}}]}}),
        lambda lr: [(i.type, i.default, i.default_request, i.max) for i in lr.spec.limits])
    case("the same pod, defaulted", lambda: core.create_namespaced_pod(b, _pod("bare")),
         lambda p: (p.metadata.annotations, p.spec.containers[0].resources.to_dict(), p.status.qos_class))
    case("over the LimitRange's max (403)", lambda: core.create_namespaced_pod(
        b, _pod("big", {"limits": {"cpu": "2"}})))
    case("status.used of the compute quota", lambda: _status(
        core, b, "compute", lambda s: (s.used or {}).get("requests.cpu") == "250m"))
    case("a LimitRange with min above max (422)", lambda: core.create_namespaced_limit_range(b, {
        "metadata": {"name": "bad"}, "spec": {"limits": [{"type": "Container", "min": {"cpu": "2"},
                                                          "max": {"cpu": "1"}}]}}))
    case("kubectl create quota (a protobuf body) with a scope", lambda: kubectl([
        "create", "quota", "cli", "--hard=requests.nvidia.com/gpu=8,count/pods=9", "--scopes=NotBestEffort", "-n", b]))
    case("its status counts the pods in its scope", lambda: _status(core, b, "cli", _synced))
    case("kubectl get quota with two quotas", lambda: kubectl(["get", "quota", "-n", b]))
    # kubectl prints a LimitRange item's resources in Go's map order (describeLimitRangeSpec): compare the lines
    case("kubectl describe namespace (quotas and LimitRanges)",
         lambda: sorted(kubectl(["describe", "namespace", b]).splitlines()))
    # Services: node ports and load balancers (the service evaluator), as e2e's "capture the life of a service"
    c = "quota-services"
    _ns(core, c)
    case("a quota on services, node ports and load balancers", lambda: core.create_namespaced_resource_quota(
        c, {"metadata": {"name": "svc"}, "spec": {"hard": {"services": "10", "services.nodeports": "1",
                                                           "services.loadbalancers": "1"}}}),
        lambda q: q.spec.hard)
    case("its first status (services)", lambda: _status(core, c, "svc", _synced))
    case("a NodePort Service", lambda: core.create_namespaced_service(c, _service("np", "NodePort")),
         lambda svc: svc.spec.type)
    case("a LoadBalancer over the node ports (403)", lambda: core.create_namespaced_service(
        c, _service("lb", "LoadBalancer")))
    case("a LoadBalancer without node ports", lambda: core.create_namespaced_service(
        c, _service("lb2", "LoadBalancer", allocateLoadBalancerNodePorts=False)), lambda svc: svc.spec.type)
    case("status.used of the services quota", lambda: _status(
        core, c, "svc", lambda s: (s.used or {}).get("services.loadbalancers") == "1"))
    return out


def _service(name: str, kind: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"type": kind, "ports": [{"port": 80}], **spec}}


def _kubectl(kubeconfig: Any) -> Callable[[list[str]], str]:
    def run(argv: list[str]) -> str:
        done = subprocess.run([str(binaries.bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig), *argv],
                              capture_output=True, text=True, timeout=60)
        return normalise(done.stdout + done.stderr)
    return run


def test_quota_battery(report, upstream_cluster, embedded_cluster):
    results = {name: battery(c.api_client(), _kubectl(c.kubeconfig))
               for name, c in (("embedded", embedded_cluster), ("upstream", upstream_cluster))}
    emb = dict(results["embedded"])  # what the cases are about, so that two equal failures cannot pass
    assert emb["a third GPU is over quota (403)"]["message"] == (
        'pods "train-2" is forbidden: exceeded quota: team-a, requested: requests.nvidia.com/gpu=1, used: '
        "requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2")
    assert emb["status.used after it is gone"]["view"]["used"]["requests.nvidia.com/gpu"] == "0"
    assert emb["a pod that states neither (403 must specify)"]["message"] == (
        'pods "bare" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c')
    assert "team-a" in emb["kubectl get quota"]["view"]
    report.compare("quota", results["embedded"], results["upstream"])
