"""Ordered namespace deletion, ReplicationControllers and PodTemplates side by side: the embedded and the upstream
API server with their controllers (kube-controller-manager's namespace, replication and garbage-collector
controllers), compared by status code, Status reason and message, what the objects show and kubectl's output."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from test_api import normalise
from test_quota import SCHEDULER, _ns, outcome

from mockgpu.backends.upstream import binaries

UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
WAIT = 90.0  # upstream looks again at a Terminating namespace after its estimate (15 s for finalizers)

RC = """apiVersion: v1
kind: ReplicationController
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      schedulerName: {scheduler}
      containers: [{{name: c, image: mockgpu/workload}}]
"""
PODTEMPLATE = """apiVersion: v1
kind: PodTemplate
metadata: {name: gpu-worker}
template:
  metadata: {labels: {app: worker, tier: gpu}}
  spec:
    containers:
    - {name: c, image: mockgpu/workload, resources: {limits: {nvidia.com/gpu: 1}}}
    - {name: sidecar, image: busybox}
"""


def _until(read: Callable[[], Any], done: Callable[[Any], bool], timeout: float = WAIT) -> Any:
    """``read()`` once ``done`` holds of it (or the last read after ``timeout``): both sides act asynchronously."""
    deadline = time.monotonic() + timeout
    value = read()
    while time.monotonic() < deadline and not done(value):
        time.sleep(0.2)
        value = read()
    return value


def _namespace(core: Any, name: str) -> dict[str, Any] | None:
    try:
        return json.loads(core.read_namespace(name, _preload_content=False).data)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _conditions(ns: dict[str, Any] | None) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
            for c in ((ns or {}).get("status") or {}).get("conditions") or []]


def _ns_view(ns: dict[str, Any] | None) -> Any:
    if ns is None:
        return None
    return {"phase": ns["status"].get("phase"), "spec": ns.get("spec"),
            "finalizers": ns["metadata"].get("finalizers"), "deleting": "deletionTimestamp" in ns["metadata"],
            "conditions": _conditions(ns)}


def _delete_ns(core: Any, name: str, **kw: Any) -> Any:
    return _ns_view(json.loads(core.delete_namespace(name, _preload_content=False, **kw).data))


def _held_pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "finalizers": ["example.com/hold"]},
            "spec": {"schedulerName": SCHEDULER, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "mockgpu/workload"}]}}


def _pods(core: Any, ns: str) -> list[Any]:
    return core.list_namespaced_pod(ns).items


def _owners(pods: list[Any]) -> list[list[tuple[str, str, bool]]]:
    return sorted([(r.kind, r.name, bool(r.controller)) for r in p.metadata.owner_references or []] for p in pods)


def namespace_cases(core: Any, kubectl: Callable[..., str], case: Callable[..., None]) -> None:
    a = "nsdel-pod"
    _ns(core, a)
    core.create_namespaced_pod(a, _held_pod("held"))
    core.create_namespaced_config_map(a, {"metadata": {"name": "settings"}})
    case("delete a namespace: Terminating, spec.finalizers kept", lambda: _delete_ns(core, a))
    case("create in a Terminating namespace (403)", lambda: core.create_namespaced_config_map(
        a, {"metadata": {"name": "late"}}))
    case("generateName create in a Terminating namespace (403)", lambda: core.create_namespaced_config_map(
        a, {"metadata": {"generateName": "late-"}}))
    case("conditions while a pod with a finalizer remains", lambda: _ns_view(_until(
        lambda: _namespace(core, a), lambda ns: len(_conditions(ns)) == 5)))
    case("pods first: the pod is marked, the ConfigMaps wait", lambda: (
        [bool(p.metadata.deletion_timestamp) for p in _pods(core, a)],
        sorted(c.metadata.name for c in core.list_namespaced_config_map(a).items)))
    case("a second DELETE while Terminating", lambda: _delete_ns(core, a))
    case("kubectl get namespace while Terminating", lambda: kubectl(["get", "namespace", a]))
    case("remove the pod's finalizer", lambda: core.patch_namespaced_pod(
        "held", a, {"metadata": {"finalizers": None}}), lambda p: None)
    case("the namespace goes once the pod is gone", lambda: _until(lambda: _namespace(core, a), lambda ns: ns is None))

    b = "nsdel-content"
    _ns(core, b)
    core.create_namespaced_config_map(b, {"metadata": {"name": "kept", "finalizers": ["example.com/hold"]}})
    core.create_namespaced_config_map(b, {"metadata": {"name": "plain"}})
    case("delete a namespace with propagationPolicy=Orphan", lambda: _delete_ns(core, b, propagation_policy="Orphan"))
    case("conditions while a ConfigMap with a finalizer remains", lambda: _ns_view(_until(
        lambda: _namespace(core, b),
        lambda ns: ("NamespaceFinalizersRemaining", "True") in [c[:2] for c in _conditions(ns)])))
    case("what remains of its content", lambda: sorted(c.metadata.name for c in core.list_namespaced_config_map(
        b).items))
    case("remove the ConfigMap's finalizer", lambda: core.patch_namespaced_config_map(
        "kept", b, {"metadata": {"finalizers": None}}), lambda c: None)
    case("the namespace goes (its orphan finalizer released)", lambda: _until(
        lambda: _namespace(core, b), lambda ns: ns is None))

    c = "nsdel-finalize"
    _ns(core, c)
    body = _namespace(core, c)
    case("finalize with a bad finalizer name (422)", lambda: core.replace_namespace_finalize(
        c, {**body, "spec": {"finalizers": ["kubernetes", "nope"]}}))
    case("finalize an active namespace: spec.finalizers emptied", lambda: _ns_view(json.loads(
        core.replace_namespace_finalize(c, {**body, "spec": {"finalizers": []}}, _preload_content=False).data)))
    case("an update cannot set spec.finalizers back", lambda: _ns_view(json.loads(core.replace_namespace(
        c, {**_namespace(core, c), "spec": {"finalizers": ["kubernetes"]}}, _preload_content=False).data)))
    case("DELETE of a namespace without finalizers only marks it", lambda: (_delete_ns(core, c),
                                                                             _ns_view(_namespace(core, c))))
    case("a second DELETE removes it", lambda: (_delete_ns(core, c), _namespace(core, c)))


def workload_cases(core: Any, kubectl: Callable[[list[str]], str], case: Callable[..., None]) -> None:
    ns = "rc-demo"
    _ns(core, ns)

    def rc(name: str) -> Any:
        return core.read_namespaced_replication_controller(name, ns)

    def k(*argv: str) -> Callable[[], str]:
        return lambda: kubectl([*argv, "-n", ns])

    case("kubectl create -f a PodTemplate", lambda: kubectl(["create", "-f", "-", "-n", ns], PODTEMPLATE))
    case("kubectl get podtemplates", k("get", "podtemplates"))
    case("kubectl get podtemplate -o yaml (defaults)", k("get", "podtemplate", "gpu-worker", "-o", "yaml"))
    case("a PodTemplate without containers (422)", lambda: core.create_namespaced_pod_template(
        ns, {"metadata": {"name": "empty"}, "template": {"spec": {"containers": []}}}))
    case("kubectl create -f an RC", lambda: kubectl(["create", "-f", "-", "-n", ns],
                                                  RC.format(name="web", replicas=2, scheduler=SCHEDULER)))
    case("the RC's status once its pods exist", lambda: _until(
        lambda: rc("web"), lambda r: r.status.replicas == 2 and r.status.observed_generation == 1).to_dict()["status"])
    case("kubectl get rc -o wide", k("get", "rc", "-o", "wide"))
    case("kubectl get rc -o yaml (defaults)", lambda: _until(
        k("get", "rc", "web", "-o", "yaml"), lambda out: "observedGeneration" in out))
    case("its pods and their owner", lambda: _owners(_pods(core, ns)))
    case("kubectl scale rc --replicas=3", k("scale", "rc", "web", "--replicas=3"))
    case("the scale subresource", lambda: (lambda s: (s.spec.replicas, s.status.selector))(_until(
        lambda: core.read_namespaced_replication_controller_scale("web", ns), lambda s: s.status.replicas == 3)))
    case("a negative scale (422)", lambda: core.patch_namespaced_replication_controller_scale(
        "web", ns, {"spec": {"replicas": -1}}))
    case("kubectl get rc after scaling", lambda: _until(k("get", "rc"), lambda out: " 3 3 " in out))
    case("kubectl delete rc --cascade=orphan", k("delete", "rc", "web", "--cascade=orphan"))
    case("the orphans keep running, released", lambda: _owners(_until(
        lambda: _pods(core, ns), lambda pods: all(not p.metadata.owner_references for p in pods))))
    case("kubectl create -f a second RC", lambda: kubectl(["create", "-f", "-", "-n", ns],
                                                        RC.format(name="db", replicas=2, scheduler=SCHEDULER)))
    case("its pods", lambda: len(_until(lambda: [p for p in _pods(core, ns) if p.metadata.labels.get("app") == "db"],
                                        lambda pods: len(pods) == 2)))
    case("kubectl delete rc (background: its pods go)", k("delete", "rc", "db"))
    case("what is left", lambda: sorted(p.metadata.labels["app"] for p in _until(
        lambda: _pods(core, ns), lambda pods: all(p.metadata.labels.get("app") != "db" for p in pods))))
    def app(name: str) -> Callable[[], list[Any]]:
        return lambda: [p for p in _pods(core, ns) if p.metadata.labels.get("app") == name]

    case("foreground deletion of an RC", lambda: (
        kubectl(["create", "-f", "-", "-n", ns], RC.format(name="fg", replicas=1, scheduler=SCHEDULER)),
        _until(app("fg"), lambda pods: len(pods) == 1),
        kubectl(["delete", "rc", "fg", "--cascade=foreground", "-n", ns]),
        _until(app("fg"), lambda pods: not pods))[2:])
    mismatch = {"metadata": {"name": "bad"}, "spec": {"selector": {"app": "x"}, "template": {
        "metadata": {"labels": {"app": "y"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    case("an RC whose selector does not match its template (422)",
         lambda: core.create_namespaced_replication_controller(ns, mismatch))
    case("an RC without a template (422)", lambda: core.create_namespaced_replication_controller(
        ns, {"metadata": {"name": "bad"}, "spec": {"selector": {"app": "x"}}}))
    case("an RC with restartPolicy Never (422)", lambda: core.create_namespaced_replication_controller(
        ns, {"metadata": {"name": "bad"}, "spec": {"template": {"metadata": {"labels": {"app": "y"}}, "spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}))
    case("a quota on replicationcontrollers", lambda: (
        core.create_namespaced_resource_quota(ns, {"metadata": {"name": "rcs"}, "spec": {"hard": {
            "replicationcontrollers": "0", "count/podtemplates": "1"}}}),
        _until(lambda: core.read_namespaced_resource_quota("rcs", ns), lambda q: q.status and q.status.used).status.used
    )[1])
    case("an RC over the quota (403)", lambda: kubectl(["create", "-f", "-", "-n", ns],
                                                      RC.format(name="over", replicas=0, scheduler=SCHEDULER)))
    case("kubectl api-resources (the new kinds)", lambda: "\n".join(
        line for line in kubectl(["api-resources", "-o", "wide"]).splitlines()
        if line.split(" ")[0] in ("NAME", "namespaces", "podtemplates", "replicationcontrollers")))
    case("kubectl get all (the orphaned pods)", k("get", "all"))


def battery(api: Any, kubectl: Callable[..., str]) -> list[tuple[str, dict[str, Any]]]:
    core = client.CoreV1Api(api)
    out: list[tuple[str, dict[str, Any]]] = []

    def case(name: str, call: Callable[[], Any], view: Callable[[Any], Any] = lambda r: r) -> None:
        out.append((name, outcome(call, view)))

    namespace_cases(core, kubectl, case)
    workload_cases(core, kubectl, case)
    return out


def _kubectl(kubeconfig: Any) -> Callable[..., str]:
    """kubectl with an optional manifest on stdin; output normalised (pods' random name suffixes too)."""
    def run(argv: list[str], stdin: str | None = None) -> str:
        done = subprocess.run([str(binaries.bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig), *argv],
                              input=stdin, capture_output=True, text=True, timeout=60)
        # uids first: normalise's age pattern can take a uid's leading digits ("4d8...") for an age
        text = UID.sub("<uid>", done.stdout + done.stderr)
        return re.sub(r"\b(web|db|fg)-[a-z0-9]{5}\b", r"\1-<random>", normalise(text))
    return run


def test_namespaces_battery(report, upstream_cluster, embedded_cluster):
    results = {name: battery(c.api_client(), _kubectl(c.kubeconfig))
               for name, c in (("embedded", embedded_cluster), ("upstream", upstream_cluster))}
    emb = dict(results["embedded"])  # what the cases are about, so that two equal failures cannot pass
    assert emb["create in a Terminating namespace (403)"]["message"] == (
        'configmaps "late" is forbidden: unable to create new content in namespace nsdel-pod because it is being '
        "terminated")
    assert emb["delete a namespace: Terminating, spec.finalizers kept"]["view"]["phase"] == "Terminating"
    assert emb["the namespace goes once the pod is gone"]["view"] is None
    assert "replicationcontrollers" in emb["kubectl api-resources (the new kinds)"]["view"]
    report.compare("namespaces", results["embedded"], results["upstream"])
