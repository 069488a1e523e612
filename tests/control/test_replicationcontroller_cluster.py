"""ReplicationControllers on an in-process embedded cluster with its controllers (no kubelets): the ReplicaSet
controller's code keeps ``spec.replicas`` pods owned by the RC, scaling through ``/scale`` follows, and the garbage
collector honours orphan, background and foreground deletion of an RC's pods; a namespace's deletion takes RCs and
pods with it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polling
import pytest
from kubernetes import client

from mockgpu.backends.embedded import EmbeddedCluster

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"
NS = "default"
pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    with EmbeddedCluster(SEED, home=tmp_path_factory.mktemp("home"), controllers=True, delete_on_exit=True) as c:
        yield client.CoreV1Api(c.api_client())


def _rc(name: str, replicas: int) -> dict:
    return {"metadata": {"name": name}, "spec": {"replicas": replicas, "template": {
        "metadata": {"labels": {"app": name}},
        "spec": {"schedulerName": "none", "containers": [{"name": "c", "image": "mockgpu/workload"}]}}}}


def _pods(core: client.CoreV1Api, app: str) -> list[client.V1Pod]:
    return core.list_namespaced_pod(NS, label_selector=f"app={app}").items


def _wait_pods(core: client.CoreV1Api, app: str, n: int) -> list[client.V1Pod]:
    def exactly() -> tuple[list[client.V1Pod]] | None:
        pods = _pods(core, app)
        return (pods,) if len(pods) == n else None
    return polling.wait_for(exactly, timeout=20, what=f"{n} pods of {app}")[0]


@pytest.mark.parametrize(("policy", "left"), [("Orphan", 2), ("Background", 0), ("Foreground", 0)])
def test_rc_pods_and_deletion(core, policy, left):
    name = f"rc-{policy.lower()}"
    rc = core.create_namespaced_replication_controller(NS, _rc(name, 2))
    pods = _wait_pods(core, name, 2)
    for p in pods:
        (ref,) = p.metadata.owner_references
        assert (ref.api_version, ref.kind, ref.name, ref.uid, ref.controller, ref.block_owner_deletion) == (
            "v1", "ReplicationController", name, rc.metadata.uid, True, True)
        assert p.metadata.generate_name == f"{name}-"
    def counted() -> client.V1ReplicationControllerStatus | None:
        s = core.read_namespaced_replication_controller(name, NS).status
        return s if s.replicas == 2 and s.observed_generation == 1 else None
    status = polling.wait_for(counted, timeout=10)
    assert status.fully_labeled_replicas == 2
    core.delete_namespaced_replication_controller(name, NS, propagation_policy=policy)
    polling.wait_for(lambda: not core.list_namespaced_replication_controller(
        NS, field_selector=f"metadata.name={name}").items, timeout=20)
    remaining = _wait_pods(core, name, left)
    assert all(not p.metadata.owner_references for p in remaining)  # the orphans are released
    core.delete_collection_namespaced_pod(NS, label_selector=f"app={name}")


def test_scale_and_adoption(core):
    core.create_namespaced_replication_controller(NS, _rc("scaled", 1))
    _wait_pods(core, "scaled", 1)
    core.patch_namespaced_replication_controller_scale("scaled", NS, {"spec": {"replicas": 3}})
    _wait_pods(core, "scaled", 3)
    assert core.read_namespaced_replication_controller_scale("scaled", NS).status.selector == "app=scaled"
    core.patch_namespaced_replication_controller_scale("scaled", NS, {"spec": {"replicas": 1}})
    _wait_pods(core, "scaled", 1)
    core.delete_namespaced_replication_controller("scaled", NS, propagation_policy="Orphan")
    orphan = polling.wait_for(lambda: (p := _pods(core, "scaled")) and not p[0].metadata.owner_references and p,
                              timeout=20)[0]
    rc = core.create_namespaced_replication_controller(NS, _rc("scaled", 1))  # a new RC adopts the orphan
    adopted = polling.wait_for(lambda: (p := core.read_namespaced_pod(orphan.metadata.name, NS)).metadata
                               .owner_references and p, timeout=20)
    assert adopted.metadata.owner_references[0].uid == rc.metadata.uid
    assert len(_pods(core, "scaled")) == 1


def test_namespace_deletion_takes_rcs_and_pods(core):
    core.create_namespace({"metadata": {"name": "rc-ns"}})
    core.create_namespaced_replication_controller("rc-ns", _rc("w", 2))
    polling.wait_for(lambda: len(core.list_namespaced_pod("rc-ns").items) == 2, timeout=20)

    def gone() -> bool:
        return "rc-ns" not in [n.metadata.name for n in core.list_namespace().items]
    core.delete_namespace("rc-ns")
    polling.wait_for(gone, timeout=30)
    assert core.list_replication_controller_for_all_namespaces(
        field_selector="metadata.namespace=rc-ns").items == []


def test_no_propagation_policy_orphans_an_rcs_pods(core):
    core.create_namespaced_replication_controller(NS, _rc("legacy", 1))
    _wait_pods(core, "legacy", 1)
    core.delete_namespaced_replication_controller("legacy", NS)  # v1's default: orphan, for compatibility
    polling.wait_for(lambda: not core.list_namespaced_replication_controller(
        NS, field_selector="metadata.name=legacy").items, timeout=20)
    assert [p.metadata.owner_references for p in _wait_pods(core, "legacy", 1)] == [None]
    core.delete_collection_namespaced_pod(NS, label_selector="app=legacy")


def test_a_pod_with_a_staying_owner_survives_foreground_deletion(core):
    """As the e2e spec "should not delete dependents that have both valid owner and owner that's waiting for
    dependents to be deleted": the reference to the deleting owner is removed, the pod stays."""
    rc1 = core.create_namespaced_replication_controller(NS, _rc("one", 2))
    rc2 = core.create_namespaced_replication_controller(NS, _rc("two", 0))
    pods = _wait_pods(core, "one", 2)
    shared = pods[0].metadata.name
    refs = [r.to_dict() for r in pods[0].metadata.owner_references] + [
        {"apiVersion": "v1", "kind": "ReplicationController", "name": "two", "uid": rc2.metadata.uid,
         "blockOwnerDeletion": True}]
    core.patch_namespaced_pod(shared, NS, {"metadata": {"ownerReferences": [
        {"apiVersion": r["api_version"], "kind": r["kind"], "name": r["name"], "uid": r["uid"],
         "controller": r["controller"], "blockOwnerDeletion": r["block_owner_deletion"]} if "api_version" in r else r
        for r in refs]}})
    core.delete_namespaced_replication_controller("one", NS, propagation_policy="Foreground")
    polling.wait_for(lambda: not core.list_namespaced_replication_controller(
        NS, field_selector="metadata.name=one").items, timeout=30)
    left = core.read_namespaced_pod(shared, NS)
    assert [r.uid for r in left.metadata.owner_references] == [rc2.metadata.uid]
    assert [p.metadata.name for p in _pods(core, "one")] == [shared]  # the other pod went in the foreground
    assert rc1.metadata.uid not in [r.uid for p in core.list_namespaced_pod(NS).items
                                    for r in p.metadata.owner_references or []]
    core.delete_namespaced_replication_controller("two", NS, propagation_policy="Background")
