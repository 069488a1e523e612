"""kubectl against the embedded API server: the commands the labs and learners use, for every kubectl found.

Every ``kubectl`` and ``kubectl.1.NN`` on PATH, and the upstream build's kubectl (the release the server
models, from ``scripts/upstream-build``) when it has been built, is tried for a few core commands; the rest run with the
newest one only, to keep the run short. The cluster is ``clusters/seed-4x2.yaml`` (4 nodes x 2 GPUs),
served in-process by ``mockgpu.backends.embedded.EmbeddedCluster``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

try:
    from mockgpu.backends.embedded import EmbeddedCluster
except ImportError as exc:  # pragma: no cover - only while the server package is absent
    pytest.skip(f"embedded API server not available: {exc}", allow_module_level=True)

from mockgpu.backends.upstream.binaries import bin_dir

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "clusters" / "seed-4x2.yaml"


def _version(path: str) -> tuple[int, int]:
    try:
        out = subprocess.run([path, "version", "--client", "-o", "json"], capture_output=True, text=True,
                             timeout=30).stdout
        info = json.loads(out)["clientVersion"]
        return int(info["major"]), int(re.sub(r"\D.*", "", info["minor"]))
    except (OSError, ValueError, KeyError, subprocess.SubprocessError):
        return (0, 0)


def find_kubectls() -> list[tuple[str, str]]:
    """(id, path) for every distinct kubectl binary on PATH and the upstream build's, oldest first."""
    found: dict[str, str] = {}
    for d in [*os.environ.get("PATH", "").split(os.pathsep), str(bin_dir())]:
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name == "kubectl" or re.fullmatch(r"kubectl\.1\.\d+", name):
                path = os.path.join(d, name)
                if os.access(path, os.X_OK):
                    found.setdefault(os.path.realpath(path), path)
    versioned = sorted(((_version(p), p) for p in found.values()), key=lambda vp: vp[0])
    return [(f"kubectl-{v[0]}.{v[1]}", p) for v, p in versioned if v != (0, 0)]


KUBECTLS = find_kubectls()
NEWEST = KUBECTLS[-1:] if KUBECTLS else []
pytestmark = pytest.mark.skipif(not KUBECTLS, reason="no kubectl on PATH (looked for kubectl and kubectl.1.NN)")


def gpu_pod(name: str, gpus: str, image: str = "busybox:1.36") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: lab}}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: {image}
    resources:
      limits:
        nvidia.com/gpu: {gpus}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    home = tmp_path_factory.mktemp("mockgpu-home")
    with EmbeddedCluster(SPEC, home=home, delete_on_exit=True) as c:
        yield c


class Kubectl:
    def __init__(self, path: str, kubeconfig: Path, cache: Path) -> None:
        self.path, self.kubeconfig, self.cache = path, kubeconfig, cache

    def __call__(self, *args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        return subprocess.run([self.path, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache), *args],
                              input=stdin, capture_output=True, text=True, timeout=timeout, env=env)

    def ok(self, *args: str, stdin: str | None = None, timeout: float = 60) -> str:
        r = self(*args, stdin=stdin, timeout=timeout)
        assert r.returncode == 0, f"kubectl {' '.join(args)} failed ({r.returncode}): {r.stderr}"
        return r.stdout


def _kubectl(request, cluster, tmp_path) -> Kubectl:
    return Kubectl(request.param, cluster.kubeconfig, tmp_path / "kube-cache")


@pytest.fixture(params=[p for _, p in KUBECTLS], ids=[i for i, _ in KUBECTLS])
def kubectl(request, cluster, tmp_path):
    return _kubectl(request, cluster, tmp_path)


@pytest.fixture(params=[p for _, p in NEWEST], ids=[i for i, _ in NEWEST])
def newest(request, cluster, tmp_path):
    return _kubectl(request, cluster, tmp_path)


@pytest.fixture
def core(cluster):
    from kubernetes import client
    return client.CoreV1Api(cluster.api_client())


def _cleanup(core, *names: str) -> None:
    from kubernetes.client.rest import ApiException
    for name in names:
        try:
            core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                raise


# ---- full matrix ------------------------------------------------------------------------------------------

def test_get_nodes_shows_four_nodes_with_two_gpus(kubectl):
    out = kubectl.ok("get", "nodes")
    lines = out.strip().splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [line.split()[0] for line in lines[1:]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert all(line.split()[1] == "Ready" for line in lines[1:])
    gpus = kubectl.ok("get", "nodes", "-o", r"jsonpath={.items[*].status.allocatable.nvidia\.com/gpu}")
    assert gpus.split() == ["2", "2", "2", "2"]


def test_apply_twice_then_change(kubectl, core, request):
    name = "apply-" + request.node.callspec.id.replace(".", "-")
    request.addfinalizer(lambda: _cleanup(core, name))
    manifest = gpu_pod(name, '"1"')
    assert kubectl.ok("apply", "-f", "-", stdin=manifest).strip() == f"pod/{name} created"
    assert kubectl.ok("apply", "-f", "-", stdin=manifest).strip() == f"pod/{name} unchanged"
    changed = manifest.replace("busybox:1.36", "busybox:1.37")
    assert kubectl.ok("apply", "-f", "-", stdin=changed).strip() == f"pod/{name} configured"
    assert core.read_namespaced_pod(name, "default").spec.containers[0].image == "busybox:1.37"


def test_fractional_gpu_is_refused_with_upstream_message(kubectl):
    r = kubectl("create", "-f", "-", stdin=gpu_pod("half-gpu", "0.5"))
    assert r.returncode == 1
    assert 'The Pod "half-gpu" is invalid' in r.stderr
    assert 'spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer' in r.stderr
    assert 'spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": must be an integer' \
        in r.stderr


# ---- newest kubectl only ----------------------------------------------------------------------------------

def test_unknown_field_is_refused_by_server_side_strict_validation(newest):
    manifest = gpu_pod("typo", "1").replace("    image:", "    imagee: x\n    image:")
    r = newest("create", "-f", "-", stdin=manifest)
    assert r.returncode == 1
    assert ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
            'unknown field "spec.containers[0].imagee"') in r.stderr
    r = newest("create", "--validate=false", "-f", "-", stdin=manifest.replace("typo", "typo-lax"))
    assert r.returncode == 0, r.stderr
    newest.ok("delete", "pod", "typo-lax", "--grace-period=0", "--force")


def test_unknown_field_is_dropped_with_kubectls_warning(newest, core):
    manifest = gpu_pod("typo-warn", "1").replace("    image:", "    imagee: x\n    image:")
    r = newest("create", "--validate=warn", "-f", "-", stdin=manifest)
    assert r.returncode == 0, r.stderr
    assert 'Warning: unknown field "spec.containers[0].imagee"' in r.stderr  # the server's Warning header
    stored = newest.ok("get", "pod", "typo-warn", "-o", "json")
    assert "imagee" not in stored
    _cleanup(core, "typo-warn")


def test_create_and_get_pods_wide(newest, core, request):
    request.addfinalizer(lambda: _cleanup(core, "wide-pod"))
    assert newest.ok("create", "-f", "-", stdin=gpu_pod("wide-pod", "2")).strip() == "pod/wide-pod created"
    r = newest("create", "-f", "-", stdin=gpu_pod("wide-pod", "2"))
    assert r.returncode == 1 and 'pods "wide-pod" already exists' in r.stderr
    lines = newest.ok("get", "pods", "-o", "wide", "-l", "app=lab").strip().splitlines()
    assert re.split(r"\s{2,}", lines[0]) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                             "NOMINATED NODE", "READINESS GATES"]
    row = next(line.split() for line in lines[1:] if line.startswith("wide-pod "))
    assert row[1] == "0/1" and row[3] == "0"
    assert row[2] in ("Pending", "ContainerCreating", "Running", "Completed", "Error")


def test_get_pods_wide_after_binding_and_status(newest, core, request):
    """A pod bound through pods/binding and reported Running shows its node, IP and readiness."""
    from kubernetes import client
    request.addfinalizer(lambda: _cleanup(core, "bound"))
    pod = gpu_pod("bound", "1").replace("spec:\n", "spec:\n  schedulerName: nobody\n")  # no scheduler takes it
    newest.ok("create", "-f", "-", stdin=pod)
    core.create_namespaced_binding("default", client.V1Binding(
        metadata=client.V1ObjectMeta(name="bound"), target=client.V1ObjectReference(kind="Node", name="gpu-2")),
        _preload_content=False)
    core.patch_namespaced_pod_status("bound", "default", {"status": {
        "phase": "Running", "podIP": "10.244.2.7", "podIPs": [{"ip": "10.244.2.7"}],
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "main", "image": "busybox:1.36", "imageID": "", "ready": True,
                               "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}})
    lines = newest.ok("get", "pod", "bound", "-o", "wide").strip().splitlines()
    assert lines[1].split()[:3] == ["bound", "1/1", "Running"]
    assert lines[1].split()[5:7] == ["10.244.2.7", "gpu-2"]
    r = newest("create", "-f", "-", stdin=gpu_pod("bound", "1"))
    assert r.returncode == 1 and 'pods "bound" already exists' in r.stderr


def test_describe_node_and_pod(newest, core, request):
    request.addfinalizer(lambda: _cleanup(core, "described"))
    out = newest.ok("describe", "node", "gpu-0")
    assert re.search(r"^Name:\s+gpu-0$", out, re.M)
    assert re.search(r"^Capacity:\n(?:  .*\n)*?  nvidia.com/gpu:\s+2$", out, re.M)
    assert re.search(r"^Allocatable:\n(?:  .*\n)*?  nvidia.com/gpu:\s+2$", out, re.M)
    newest.ok("create", "-f", "-", stdin=gpu_pod("described", "1"))
    out = newest.ok("describe", "pod", "described")
    assert re.search(r"^Name:\s+described$", out, re.M)
    assert re.search(r"^QoS Class:\s+BestEffort$", out, re.M)
    assert re.search(r"Limits:\n\s+nvidia.com/gpu:\s+1\n\s+Requests:\n\s+nvidia.com/gpu:\s+1", out)
    assert "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s" in out


def test_get_events_with_field_selector(newest, core):
    for name, reason in (("sel-pod.1", "FailedScheduling"), ("other.1", "Scheduled")):
        core.create_namespaced_event("default", {
            "metadata": {"name": name}, "reason": reason,
            "type": "Warning" if reason.startswith("Failed") else "Normal",
            "involvedObject": {"kind": "Pod", "name": name.split(".")[0], "namespace": "default"},
            "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
            "source": {"component": "default-scheduler"}, "count": 1})
    out = newest.ok("get", "events", "--field-selector", "involvedObject.name=sel-pod,reason=FailedScheduling")
    lines = out.strip().splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert len(lines) == 2 and "pod/sel-pod" in lines[1] and "Insufficient nvidia.com/gpu" in lines[1]
    r = newest("get", "events", "--field-selector", "foo=bar")
    assert r.returncode == 1 and "field label not supported: foo" in r.stderr
    r = newest("get", "pods", "-l", "app in")
    assert r.returncode == 1 and "unable to parse requirement: found '' expected: '('" in r.stderr


def test_wait_for_condition_set_through_the_api(newest, core, request):
    request.addfinalizer(lambda: _cleanup(core, "waited"))
    newest.ok("create", "-f", "-", stdin=gpu_pod("waited", "1"))

    def set_condition() -> None:
        time.sleep(1.0)
        core.patch_namespaced_pod_status("waited", "default", {"status": {"conditions": [
            {"type": "mockgpu.io/Checked", "status": "True", "reason": "Test"}]}})
    t = threading.Thread(target=set_condition)
    t.start()
    try:
        out = newest.ok("wait", "--for=condition=mockgpu.io/Checked", "pod/waited", "--timeout=30s")
    finally:
        t.join()
    assert out.strip() == "pod/waited condition met"


def test_get_watch_ends_at_request_timeout_and_shows_changes(newest, core, request):
    request.addfinalizer(lambda: _cleanup(core, "watched"))
    newest.ok("create", "-f", "-", stdin=gpu_pod("watched", "1"))

    def relabel() -> None:
        time.sleep(1.0)
        core.patch_namespaced_pod("watched", "default", {"metadata": {"labels": {"seen": "yes"}}})
    t = threading.Thread(target=relabel)
    t.start()
    started = time.monotonic()
    try:
        r = newest("get", "pod", "watched", "-w", "--output-watch-events", "--request-timeout=3s", timeout=30)
    finally:
        t.join()
    assert time.monotonic() - started < 20
    lines = r.stdout.strip().splitlines()
    assert lines[0].split()[:2] == ["EVENT", "NAME"]
    assert [line.split()[0] for line in lines[1:]][:2] == ["ADDED", "MODIFIED"]


def test_logs_read_what_the_kubelet_wrote(newest, core, cluster, request):
    from mockgpu.control.apiserver.podlogs import container_log_dir
    from mockgpu.control.kubelet.containerlogs import cri_line
    request.addfinalizer(lambda: _cleanup(core, "logged"))
    newest.ok("create", "-f", "-", stdin=gpu_pod("logged", "1"))
    node = core.list_node().items[0].metadata.name  # a pod with no node has an empty log, as upstream
    core.create_namespaced_binding("default", {"metadata": {"name": "logged"}, "target": {
        "apiVersion": "v1", "kind": "Node", "name": node}}, _preload_content=False)
    pod = core.read_namespaced_pod("logged", "default")
    path = container_log_dir(cluster.state.dir, "default", "logged", pod.metadata.uid, "main") / "0.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cri_line("stdout", "GPU 0: NVIDIA A100-SXM4-80GB") + cri_line("stderr", "line two"))
    core.patch_namespaced_pod_status("logged", "default", {"status": {"phase": "Running", "containerStatuses": [
        {"name": "main", "image": "busybox:1.36", "imageID": "", "ready": True, "restartCount": 0,
         "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}})
    assert newest.ok("logs", "logged", "--tail=1").strip() == "line two"
    assert "GPU 0: NVIDIA A100-SXM4-80GB" in newest.ok("logs", "logged")


def test_delete_then_not_found(newest, core):
    newest.ok("create", "-f", "-", stdin=gpu_pod("doomed", "1"))
    out = newest.ok("delete", "pod", "doomed", "--grace-period=0", "--force", timeout=60).strip()
    # kubectl's own wording: from 1.33 it names the namespace
    assert re.search(r'pod "doomed" force deleted( from default namespace)?$', out), out
    r = newest("get", "pod", "doomed")
    assert r.returncode == 1 and 'pods "doomed" not found' in r.stderr



def test_apply_multi_document_namespace_configmap_pod(newest):
    manifest = """apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team-a}
data: {batch: "32", model: resnet50}
---
""" + gpu_pod("trainer", '"2"').replace("  labels:", "  namespace: team-a\n  labels:")
    out = newest.ok("apply", "-f", "-", stdin=manifest)
    assert out.split("\n")[:3] == ["namespace/team-a created", "configmap/settings created", "pod/trainer created"]
    lines = newest.ok("get", "configmaps", "-n", "team-a").strip().splitlines()
    assert lines[0].split() == ["NAME", "DATA", "AGE"]  # and, as upstream, every namespace's kube-root-ca.crt
    assert [line.split()[:2] for line in lines[1:]] == [["kube-root-ca.crt", "1"], ["settings", "2"]]
    assert newest.ok("get", "pod", "trainer", "-n", "team-a", "-o",
                     r"jsonpath={.spec.containers[0].resources.requests.nvidia\.com/gpu}") == "2"
    newest.ok("delete", "namespace", "team-a", "--wait=false")


PATCH_CASES = [
    ("strategic", ["--type", "strategic", "-p", '{"metadata":{"labels":{"tier":"gpu"}}}'],
     "{.metadata.labels.tier}", "gpu"),
    ("merge", ["--type", "merge", "-p", '{"spec":{"activeDeadlineSeconds":600}}'], "{.spec.activeDeadlineSeconds}",
     "600"),
    ("json", ["--type", "json", "-p", '[{"op":"replace","path":"/spec/containers/0/image","value":"busybox:1.37"}]'],
     "{.spec.containers[0].image}", "busybox:1.37"),
]


@pytest.mark.parametrize(("args", "jsonpath", "want"), [c[1:] for c in PATCH_CASES], ids=[c[0] for c in PATCH_CASES])
def test_kubectl_patch_types(newest, core, request, args, jsonpath, want):
    name = "patched-" + request.node.callspec.id.split("-")[0]
    request.addfinalizer(lambda: _cleanup(core, name))
    newest.ok("create", "-f", "-", stdin=gpu_pod(name, "1"))
    assert newest.ok("patch", "pod", name, *args).strip() == f"pod/{name} patched"
    assert newest.ok("get", "pod", name, "-o", f"jsonpath={jsonpath}") == want


def test_patch_that_changes_immutable_spec_is_refused(newest, core, request):
    request.addfinalizer(lambda: _cleanup(core, "frozen"))
    newest.ok("create", "-f", "-", stdin=gpu_pod("frozen", "1"))
    r = newest("patch", "pod", "frozen", "--type", "merge", "-p", '{"spec":{"schedulerName":"other"}}')
    assert r.returncode == 1
    assert 'The Pod "frozen" is invalid: spec: Forbidden: pod updates may not change fields other than' in r.stderr
    r = newest("patch", "pod", "frozen", "--type", "json", "-p", '[{"op":"test","path":"/metadata/name","value":"x"}]')
    assert r.returncode == 1
    assert r.stderr.strip() == "The request is invalid: the server rejected our request due to an error in our request"


def test_label_and_cordon_show_in_get(newest):
    newest.ok("label", "node", "gpu-3", "accelerator=example-gpu-x100")
    try:
        out = newest.ok("get", "nodes", "-l", "accelerator in (example-gpu-x100)", "-o", "name")
        assert out.split() == ["node/gpu-3"]
        assert newest.ok("cordon", "gpu-3").strip() == "node/gpu-3 cordoned"
        row = next(line.split() for line in newest.ok("get", "nodes").splitlines() if line.startswith("gpu-3 "))
        assert row[1] == "Ready,SchedulingDisabled"
        assert newest.ok("get", "nodes", "--field-selector", "spec.unschedulable=true", "-o", "name").split() == [
            "node/gpu-3"]
    finally:
        newest.ok("uncordon", "gpu-3")
        newest.ok("label", "node", "gpu-3", "accelerator-")
    assert "accelerator" not in newest.ok("get", "node", "gpu-3", "-o", "jsonpath={.metadata.labels}")


def test_apply_removes_what_was_dropped_from_the_manifest(newest):
    """The three-way patch deletes keys that the last-applied configuration had and the new manifest lacks."""
    first = """apiVersion: v1
kind: ConfigMap
metadata:
  name: knobs
  labels: {team: ml, stage: dev}
data: {batch: "32", lr: "0.1"}
"""
    second = first.replace(", stage: dev", "").replace(', lr: "0.1"', "")
    try:
        assert newest.ok("apply", "-f", "-", stdin=first).strip() == "configmap/knobs created"
        newest.ok("label", "configmap", "knobs", "owner=someone-else")  # not in any manifest: must survive
        assert newest.ok("apply", "-f", "-", stdin=second).strip() == "configmap/knobs configured"
        got = json.loads(newest.ok("get", "configmap", "knobs", "-o", "json"))
        assert got["data"] == {"batch": "32"}
        assert got["metadata"]["labels"] == {"team": "ml", "owner": "someone-else"}
        assert newest.ok("apply", "-f", "-", stdin=second).strip() == "configmap/knobs unchanged"
    finally:
        newest("delete", "configmap", "knobs")


def test_get_nodes_wide_columns(newest):
    lines = newest.ok("get", "nodes", "-o", "wide").strip().splitlines()
    assert re.split(r"\s{2,}", lines[0]) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP",
                                             "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    assert len(lines) == 5 and all(re.split(r"\s{2,}", line)[1] == "Ready" for line in lines[1:])


def test_drain_evicts_bound_pods_then_uncordon(newest, core):
    core.create_namespaced_pod("default", {"metadata": {"name": "drained"}, "spec": {
        "nodeName": "gpu-1", "schedulerName": "nobody", "containers": [{"name": "c", "image": "busybox:1.36"}]}})
    try:
        out = newest.ok("drain", "gpu-1", "--force", "--grace-period=0", "--timeout=30s")
        assert out.strip().splitlines() == ["node/gpu-1 cordoned", "evicting pod default/drained",
                                            "pod/drained evicted", "node/gpu-1 drained"]
        r = newest("get", "pod", "drained")
        assert r.returncode == 1 and 'pods "drained" not found' in r.stderr
    finally:
        newest.ok("uncordon", "gpu-1")
        _cleanup(core, "drained")


def test_explain_reads_the_served_openapi(newest):
    out = newest.ok("explain", "pod.spec.containers.resources")
    assert re.search(r"^FIELD: resources <ResourceRequirements>$", out, re.M)
    assert re.search(r"^  limits\s+<map\[string\]Quantity>$", out, re.M)
    assert "Limits describes the maximum amount of compute resources allowed." in out
    assert re.search(r"^  allocatable\s+<map\[string\]Quantity>$", newest.ok("explain", "node.status"), re.M)


# ---- named groups: leases, events.k8s.io, auth can-i ------------------------------------------------------------

def test_describe_node_shows_its_lease(newest, cluster):
    from kubernetes import client

    from mockgpu.control.apiserver.coordination import node_lease

    api = cluster.api_client()
    coord = client.CoordinationV1Api(api)
    before = newest.ok("describe", "node", "gpu-3")
    assert "Failed to get lease: leases.coordination.k8s.io \"gpu-3\" not found" in before
    coord.create_namespaced_lease("kube-node-lease", node_lease("gpu-3"))
    try:
        out = newest.ok("describe", "node", "gpu-3")
        assert "Failed to get lease" not in out
        assert re.search(r"^Lease:\n  HolderIdentity:  gpu-3\n  AcquireTime:     <unset>\n  RenewTime:       \w{3}, ",
                         out, re.M)
        lines = newest.ok("get", "leases", "-n", "kube-node-lease").strip().splitlines()
        assert lines[0].split() == ["NAME", "HOLDER", "AGE"] and lines[1].split()[:2] == ["gpu-3", "gpu-3"]
    finally:
        coord.delete_namespaced_lease("gpu-3", "kube-node-lease")
        api.close()


def test_apply_lease_with_a_bad_duration_is_refused(newest):
    r = newest("apply", "-f", "-", stdin="apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l1}\n"
                                          "spec: {holderIdentity: me, leaseDurationSeconds: 0}\n")
    assert r.returncode == 1
    assert 'The Lease "l1" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0' in r.stderr


def test_kubectl_events_and_events_k8s_io(newest, cluster):
    from kubernetes import client

    api = cluster.api_client()
    events = client.EventsV1Api(api)
    events.create_namespaced_event("default", {
        "metadata": {"name": "evented.1"}, "eventTime": "2026-12-02T15:00:00.000001Z", "type": "Warning",
        "reportingController": "default-scheduler", "reportingInstance": "default-scheduler-mockgpu",
        "action": "Scheduling", "reason": "FailedScheduling", "note": "0/4 nodes are available: 4 Insufficient gpu.",
        "regarding": {"kind": "Pod", "name": "evented", "namespace": "default", "apiVersion": "v1"}})
    try:
        lines = newest.ok("events", "--for", "pod/evented").strip().splitlines()
        assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
        assert len(lines) == 2 and "FailedScheduling" in lines[1] and "Pod/evented" in lines[1]
        lines = newest.ok("events", "--types", "Normal").strip().splitlines()
        assert all("evented" not in line for line in lines)
        out = newest.ok("get", "events.events.k8s.io", "--field-selector", "regarding.name=evented", "-o", "json")
        items = json.loads(out)["items"]
        assert [i["note"] for i in items] == ["0/4 nodes are available: 4 Insufficient gpu."]
        assert items[0]["apiVersion"] == "events.k8s.io/v1"
    finally:
        events.delete_namespaced_event("evented.1", "default")
        api.close()


@pytest.mark.parametrize("args", [("create", "pods"), ("delete", "nodes"), ("get", "/healthz"), ("*", "*")],
                         ids=["create-pods", "delete-nodes", "non-resource", "everything"])
def test_auth_can_i_answers_yes_for_the_cluster_token(newest, args):
    r = newest("auth", "can-i", *args)
    assert (r.returncode, r.stdout.strip()) == (0, "yes"), r.stderr


# ---- small kubectl commands: get all, cluster-info, top, version --------------------------------------------

def test_get_all_lists_pods_and_the_kubernetes_service(newest, core, request):
    request.addfinalizer(lambda: _cleanup(core, "everything"))
    newest.ok("create", "-f", "-", stdin=gpu_pod("everything", "1"))
    out = newest.ok("get", "all")
    assert re.search(r"^pod/everything\s+0/1\s+Pending", out, re.M)
    assert re.search(r"^service/kubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443/TCP\s", out, re.M)


def test_cluster_info_names_the_control_plane(newest, cluster):
    out = newest.ok("cluster-info")
    assert re.sub(r"\x1b\[[0-9;]*m", "", out).splitlines()[0] == f"Kubernetes control plane is running at {cluster.url}"


def test_top_is_a_clean_error_without_a_metrics_api(newest):
    r = newest("top", "nodes")
    assert r.returncode == 1 and r.stderr.strip() == "error: Metrics API not available"


def test_version_reports_the_modelled_server(newest):
    from mockgpu.control.apiserver.discovery import GIT_VERSION

    r = newest("version", "-o", "json")
    assert r.returncode == 0 and "WARNING" not in r.stderr  # inside kubectl's supported version skew
    assert json.loads(r.stdout)["serverVersion"]["gitVersion"] == GIT_VERSION


def test_create_service_sends_protobuf_and_gets_an_address(newest, core, request):
    request.addfinalizer(lambda: core.delete_namespaced_service("web", "default"))
    r = newest("create", "service", "clusterip", "web", "--tcp=80:8080")
    assert r.returncode == 0 and r.stdout.strip() == "service/web created", r.stderr
    svc = core.read_namespaced_service("web", "default")
    assert svc.spec.cluster_ip.startswith("10.96.") and svc.spec.selector == {"app": "web"}
    assert (svc.spec.ports[0].port, svc.spec.ports[0].target_port, svc.spec.ports[0].name) == (80, 8080, "80-8080")


def test_gated_pod_shows_scheduling_gated_until_its_gate_is_removed(newest, core, request):
    request.addfinalizer(lambda: _cleanup(core, "gated"))
    manifest = gpu_pod("gated", "1").replace("spec:\n", "spec:\n  schedulingGates:\n  - name: example.com/quota\n", 1)
    newest.ok("create", "-f", "-", stdin=manifest)
    assert newest.ok("get", "pod", "gated").splitlines()[1].split()[2] == "SchedulingGated"
    r = newest("patch", "pod", "gated", "--type=json", "-p",
               '[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"late"}}]')
    assert r.returncode == 1 and "only deletion is allowed, but found new scheduling gate 'late'" in r.stderr
    newest.ok("patch", "pod", "gated", "--type=json", "-p", '[{"op":"remove","path":"/spec/schedulingGates"}]')
    assert core.read_namespaced_pod("gated", "default").spec.scheduling_gates is None


@pytest.mark.parametrize(("args", "lines"), [
    (("lease.spec",), ["GROUP:      coordination.k8s.io", "KIND:       Lease", "FIELD: spec <LeaseSpec>"]),
    (("events", "--api-version=events.k8s.io/v1"), ["GROUP:      events.k8s.io", "KIND:       Event"]),
    (("svc.spec.clusterIP",), ["KIND:       Service", "FIELD: clusterIP <string>"]),
], ids=["lease", "events-k8s-io", "service"])
def test_explain_named_group_kinds(newest, args, lines):
    out = newest.ok("explain", *args).splitlines()
    assert all(line in out for line in lines), out[:8]


def test_apply_lease_with_unknown_field_is_refused_by_the_server(newest):
    r = newest("apply", "-f", "-", stdin="apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l2}\n"
                                          "spec: {holderIdentity: me, bogus: 1}\n")
    assert r.returncode == 1
    assert ('Lease in version "v1" cannot be handled as a Lease: strict decoding error: unknown field "spec.bogus"'
            in r.stderr)


def test_auth_can_i_list_and_whoami(newest):
    lines = newest.ok("auth", "can-i", "--list").strip().splitlines()
    assert [line.split() for line in lines] == [["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"],
                                                ["*.*", "[]", "[]", "[*]"], ["[*]", "[]", "[*]"]]
    lines = newest.ok("auth", "whoami").strip().splitlines()
    assert lines[1].split() == ["Username", "mockgpu-admin"]
    assert lines[2].split(None, 1) == ["Groups", "[system:masters system:authenticated]"]
