"""The namespace controller: its pure rules (conditions, estimates, messages) table-driven, then on an in-process
embedded cluster: a namespace's deletion waits for its pods (a pod with a finalizer keeps everything else), objects
with finalizers keep it Terminating with upstream's conditions, and it is finalized once the contents are gone;
with fake kubelets, a running pod is stopped and removed by its kubelet."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polling
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.control.controllers import namespace as nc

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"
NOW = "2026-03-03T00:00:00Z"
pytestmark = pytest.mark.timeout(120)


def _ok(conditions):
    return [(c["type"], c["status"], c["reason"]) for c in conditions]


ALL_OK = [(t, "False", r) for t, r, _ in nc.CONDITIONS]


@pytest.mark.parametrize(("remaining", "errors", "expected"), [
    (nc.Remaining(), [], ALL_OK),
    (nc.Remaining({("", "v1", "configmaps"): 1}, {"x.io/keep": 1}), [],
     ALL_OK[:3] + [("NamespaceContentRemaining", "True", "SomeResourcesRemain"),
                   ("NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain")]),
    (nc.Remaining(), ["boom"], ALL_OK[:2] + [("NamespaceDeletionContentFailure", "True", "ContentDeletionFailed")]
     + ALL_OK[3:]),
])
def test_conditions(remaining, errors, expected):
    failures = nc.content_failures(remaining, NOW) + nc.delete_failure(errors, NOW)
    conditions, changed = nc.conditions_after([], failures, NOW)
    assert changed and _ok(conditions) == expected
    again, changed = nc.conditions_after(conditions, failures, "2026-03-03T00:01:00Z")
    assert not changed and again == conditions  # unchanged conditions are not rewritten


def test_condition_messages_are_upstreams():
    remaining = nc.Remaining({("", "v1", "configmaps"): 2, ("apps", "v1", "deployments"): 1},
                             {"x.io/keep": 2, "b.io/z": 1})
    msgs = {c["type"]: c["message"] for c in nc.content_failures(remaining, NOW) + nc.delete_failure(["b", "a"], NOW)}
    assert msgs == {
        "NamespaceContentRemaining": "Some resources are remaining: configmaps. has 2 resource instances, "
                                     "deployments.apps has 1 resource instances",
        "NamespaceFinalizersRemaining": "Some content in the namespace has finalizers remaining: b.io/z in 1 resource "
                                        "instances, x.io/keep in 2 resource instances",
        "NamespaceDeletionContentFailure": "Failed to delete all resource types, 2 remaining: a, b"}
    assert nc.gvr_string(("apps", "v1", "deployments")) == "apps/v1, Resource=deployments"
    assert nc.gvr_string(("", "v1", "pods")) == "/v1, Resource=pods"


def test_transition_time_moves_with_the_status_only():
    first, _ = nc.conditions_after([], [], NOW)
    later = "2026-03-03T00:05:00Z"
    failing, _ = nc.conditions_after(first, nc.delete_failure(["x"], later), later)
    times = {c["type"]: c["lastTransitionTime"] for c in failing}
    assert times["NamespaceDeletionContentFailure"] == later and times["NamespaceContentRemaining"] == NOW


def _pod(phase: str, grace: int | None) -> dict:
    return {"spec": {} if grace is None else {"terminationGracePeriodSeconds": grace}, "status": {"phase": phase}}


@pytest.mark.parametrize(("pods", "elapsed", "estimate"), [
    ([], 0, 0),
    ([_pod("Running", 30)], 1, 30),
    ([_pod("Running", 30), _pod("Pending", 60)], 1, 60),
    ([_pod("Succeeded", 60), _pod("Running", 5)], 1, 5),
    ([_pod("Running", 30)], 31, 0),  # the grace period has passed since the namespace's deletion
    ([_pod("Running", None)], 0, 0),
])
def test_pod_estimate(pods, elapsed, estimate):
    now = datetime(2026, 3, 3, tzinfo=UTC)
    assert nc.pod_estimate(pods, rfc3339(now - timedelta(seconds=elapsed)), now) == estimate


# ---- on a cluster -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    with EmbeddedCluster(SEED, home=tmp_path_factory.mktemp("home"), controllers=True, delete_on_exit=True) as c:
        yield client.CoreV1Api(c.api_client())


def _gone(core: client.CoreV1Api, name: str) -> bool:
    try:
        core.read_namespace(name)
    except ApiException as exc:
        return exc.status == 404
    return False


def _conditions(core: client.CoreV1Api, name: str) -> dict[str, tuple[str, str, str]]:
    ns = core.read_namespace(name)
    return {c.type: (c.status, c.reason, c.message) for c in ns.status.conditions or []}


def test_pods_go_first_and_a_pod_finalizer_holds_the_rest(core):
    core.create_namespace({"metadata": {"name": "ordered"}})
    core.create_namespaced_pod("ordered", {"metadata": {"name": "held", "finalizers": ["x.io/keep"]}, "spec": {
        "schedulerName": "none", "terminationGracePeriodSeconds": 0, "containers": [{"name": "c", "image": "i"}]}})
    core.create_namespaced_config_map("ordered", {"metadata": {"name": "cm"}})
    deleted = core.delete_namespace("ordered")
    assert deleted["status"]["phase"] == "Terminating" and deleted["spec"]["finalizers"] == ["kubernetes"]
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("ordered", {"metadata": {"name": "late"}})
    assert exc.value.status == 403 and "because it is being terminated" in exc.value.body
    # the controller marks the pod and writes its conditions (all well: the totals wait until pods are gone)
    polling.wait_for(lambda: len(_conditions(core, "ordered")) == 5, timeout=10)
    pod = core.read_namespaced_pod("held", "ordered")
    assert pod.metadata.deletion_timestamp is not None
    assert {t: s for t, (s, _, _) in _conditions(core, "ordered").items()} == {t: "False" for t, _, _ in
                                                                                nc.CONDITIONS}
    assert [c.metadata.name for c in core.list_namespaced_config_map("ordered").items] == ["cm", "kube-root-ca.crt"]
    core.patch_namespaced_pod("held", "ordered", {"metadata": {"finalizers": None}})
    polling.wait_for(lambda: _gone(core, "ordered"), timeout=30)


def test_content_with_a_finalizer_keeps_the_namespace_terminating(core):
    core.create_namespace({"metadata": {"name": "kept"}})
    core.create_namespaced_config_map("kept", {"metadata": {"name": "held", "finalizers": ["x.io/keep"]}})
    core.delete_namespace("kept")
    polling.wait_for(lambda: _conditions(core, "kept").get("NamespaceFinalizersRemaining", ("",))[0] == "True",
                     timeout=10)
    conds = _conditions(core, "kept")
    assert conds["NamespaceContentRemaining"] == (
        "True", "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances")
    assert conds["NamespaceFinalizersRemaining"] == (
        "True", "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: x.io/keep in 1 resource instances")
    assert core.read_namespace("kept").status.phase == "Terminating"
    core.patch_namespaced_config_map("held", "kept", {"metadata": {"finalizers": None}})
    polling.wait_for(lambda: _gone(core, "kept"), timeout=30)  # the next pass, 15 s later (upstream's estimate)


def test_everything_goes_with_the_namespace(core):
    core.create_namespace({"metadata": {"name": "full"}})
    core.create_namespaced_config_map("full", {"metadata": {"name": "cm"}})
    core.create_namespaced_service("full", {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}})
    client.CoordinationV1Api(core.api_client).create_namespaced_lease("full", {"metadata": {"name": "lock"}})
    core.delete_namespace("full")
    polling.wait_for(lambda: _gone(core, "full"), timeout=10)
    assert core.list_config_map_for_all_namespaces(field_selector="metadata.namespace=full").items == []
    assert client.CoordinationV1Api(core.api_client).list_lease_for_all_namespaces(
        field_selector="metadata.namespace=full").items == []


def test_a_running_pod_is_stopped_by_its_kubelet(tmp_path):
    with EmbeddedCluster(SEED, home=tmp_path / "home", kubelets=True, scheduler=True) as c:
        core = client.CoreV1Api(c.api_client())
        core.create_namespace({"metadata": {"name": "run"}})
        core.create_namespaced_pod("run", {"metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "c", "image": "mockgpu/workload", "command": ["sleep", "600"]}]}})
        polling.wait_for(lambda: core.read_namespaced_pod("p", "run").status.phase == "Running", timeout=30)
        core.delete_namespace("run")
        polling.wait_for(lambda: _gone(core, "run"), timeout=40)
