"""The resource claim controller: pure helpers row by row, then end to end on the embedded control plane
(controllers only: no scheduler or kubelets, so the tests play the scheduler's part by writing allocations)."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polling
import pytest

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.control.controllers.resourceclaim import (
    FINALIZER,
    POD_CLAIM_ANNOTATION,
    claim_from_template,
    generate_name,
    is_pod_done,
    owning_pod,
)

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"
wait_for = functools.partial(polling.wait_for, timeout=30.0)
pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(("pod", "claim", "want"), [
    ("train", "gpu", "train-gpu-"),
    ("a" * 40, "b" * 20, "a" * 40 + "-" + "b" * 20 + "-"),  # 62 > 57: each part cut to its share
    ("p" * 50, "c", "p" * 50 + "-c-"),  # 54 characters: kept
], ids=["short", "cut-proportionally", "at-limit"])
def test_generate_name_as_upstream(pod: str, claim: str, want: str) -> None:
    if len(f"{pod}-{claim}-") > 57:
        n = len(f"{pod}-{claim}-")
        want = pod[:len(pod) * 57 // n] + "-" + claim[:len(claim) * 57 // n]
    assert generate_name(pod, claim) == want
    assert len(generate_name(pod, claim)) <= 58


@pytest.mark.parametrize(("phase", "deleted", "node", "done"), [
    ("Pending", False, "", False),
    ("Running", False, "n1", False),
    ("Succeeded", False, "n1", True),
    ("Failed", False, "n1", True),
    ("Pending", True, "", True),  # deleted before it was scheduled
    ("Running", True, "n1", False),  # deleted but still running on its node: terminating, not done
], ids=["pending", "running", "succeeded", "failed", "deleted-unscheduled", "deleted-running"])
def test_is_pod_done(phase: str, deleted: bool, node: str, done: bool) -> None:
    pod = {"metadata": {"name": "p", **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleted else {})},
           "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}
    assert is_pod_done(pod) is done


def test_claim_from_template_carries_template_metadata_owner_and_spec() -> None:
    pod = {"metadata": {"name": "train", "namespace": "ml", "uid": "u-1"}}
    template = {"spec": {"metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                             "deviceClassName": "gpu.mockgpu.io", "allocationMode": "ExactCount", "count": 1}}]}}}}
    claim = claim_from_template(pod, "gpu", template)
    assert claim["metadata"] == {
        "generateName": "train-gpu-", "labels": {"team": "a"},
        "annotations": {"note": "x", POD_CLAIM_ANNOTATION: "gpu"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "train", "uid": "u-1", "controller": True}]}
    assert claim["spec"] == template["spec"]["spec"] and claim["spec"] is not template["spec"]["spec"]
    assert owning_pod({"metadata": claim["metadata"]}) == ("train", "u-1")
    assert owning_pod({"metadata": {}}) == ("", "")


# ---- end to end ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(SEED, home=tmp_path_factory.mktemp("home"), controllers=True, delete_on_exit=True) as c:
        yield c


@pytest.fixture(scope="module")
def apis(cluster: EmbeddedCluster) -> Iterator[tuple[Any, Any]]:
    from kubernetes import client

    api = cluster.api_client()
    yield client.CoreV1Api(api), client.ResourceV1Api(api)
    api.close()


TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "spec": {"metadata": {"labels": {"app": "train"}},
                     "spec": {"devices": {"requests": [{"name": "gpu",
                                                        "exactly": {"deviceClassName": "gpu.mockgpu.io"}}]}}}}


def _pod(name: str, claims: list[dict[str, str]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"resourceClaims": claims,
                     "containers": [{"name": "c", "image": "x", "resources": {
                         "claims": [{"name": c["name"]} for c in claims]}}]}}


def _template(res: Any, name: str) -> None:
    res.create_namespaced_resource_claim_template("default", {**TEMPLATE, "metadata": {"name": name}})


def _claims_of(res: Any, pod_uid: str) -> list[Any]:
    return [c for c in res.list_namespaced_resource_claim("default").items
            if any(r.uid == pod_uid for r in c.metadata.owner_references or [])]


def _allocate(res: Any, claim: Any, pod: Any) -> Any:
    """What the scheduler writes: the delete-protection finalizer, an allocation and the pod's reservation."""
    claim.metadata.finalizers = [FINALIZER]
    claim = res.replace_namespaced_resource_claim(claim.metadata.name, "default", claim)
    claim.status = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.mockgpu.io", "pool": "node-1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": pod.metadata.name, "uid": pod.metadata.uid}]}
    return res.replace_namespaced_resource_claim_status(claim.metadata.name, "default", claim)


def test_template_claim_is_created_recorded_and_cleaned_when_the_pod_finishes(apis) -> None:
    core, res = apis
    _template(res, "one-gpu")
    pod = core.create_namespaced_pod("default", _pod("train", [{"name": "gpu",
                                                                 "resourceClaimTemplateName": "one-gpu"}]))
    claims = wait_for(lambda: _claims_of(res, pod.metadata.uid) or None, what="the generated claim")
    assert len(claims) == 1
    claim = claims[0]
    assert claim.metadata.name.startswith("train-gpu-") and len(claim.metadata.name) == len("train-gpu-") + 5
    assert claim.metadata.annotations == {POD_CLAIM_ANNOTATION: "gpu"}
    assert claim.metadata.labels == {"app": "train"}
    (ref,) = claim.metadata.owner_references
    assert (ref.api_version, ref.kind, ref.name, ref.uid, ref.controller) == ("v1", "Pod", "train", pod.metadata.uid,
                                                                              True)
    assert claim.spec.devices.requests[0].exactly.device_class_name == "gpu.mockgpu.io"
    assert claim.spec.devices.requests[0].exactly.count == 1  # defaulted by the server, not the controller

    def recorded() -> Any:
        st = core.read_namespaced_pod("train", "default").status.resource_claim_statuses
        return st or None
    (entry,) = wait_for(recorded, what="pod.status.resourceClaimStatuses")
    assert (entry.name, entry.resource_claim_name) == ("gpu", claim.metadata.name)

    claim = _allocate(res, claim, pod)
    assert claim.status.reserved_for[0].uid == pod.metadata.uid
    pod = core.read_namespaced_pod("train", "default")
    pod.status.phase = "Succeeded"
    core.replace_namespaced_pod_status("train", "default", pod)

    def claim_gone() -> bool:
        return not _claims_of(res, pod.metadata.uid)
    wait_for(claim_gone, what="the finished pod's generated claim deleted")
    core.delete_namespaced_pod("train", "default")


def test_deleting_the_pod_garbage_collects_its_generated_claim(apis) -> None:
    core, res = apis
    _template(res, "gc-gpu")
    pod = core.create_namespaced_pod("default", _pod("gcpod", [{"name": "gpu",
                                                                 "resourceClaimTemplateName": "gc-gpu"}]))
    wait_for(lambda: _claims_of(res, pod.metadata.uid) or None, what="the generated claim")
    core.delete_namespaced_pod("gcpod", "default")
    wait_for(lambda: not _claims_of(res, pod.metadata.uid), what="the claim collected with its pod")


def test_a_claim_waits_for_its_template_to_appear(apis) -> None:
    core, res = apis
    pod = core.create_namespaced_pod("default", _pod("late", [{"name": "gpu",
                                                               "resourceClaimTemplateName": "late-gpu"}]))
    time.sleep(1.0)  # the controller has seen the pod (and retries): no template, no claim
    assert not _claims_of(res, pod.metadata.uid)
    _template(res, "late-gpu")
    claims = wait_for(lambda: _claims_of(res, pod.metadata.uid) or None, what="the claim once the template exists")
    assert len(claims) == 1
    core.delete_namespaced_pod("late", "default")


def test_a_shared_claim_loses_a_deleted_pods_reservation_but_stays(apis) -> None:
    core, res = apis
    res.create_namespaced_resource_claim("default", {"metadata": {"name": "shared"}, "spec": TEMPLATE["spec"]["spec"]})
    pod = core.create_namespaced_pod("default", _pod("user", [{"name": "gpu", "resourceClaimName": "shared"}]))
    claim = _allocate(res, res.read_namespaced_resource_claim("shared", "default"), pod)
    assert claim.status.reserved_for
    core.delete_namespaced_pod("user", "default")

    def released() -> Any:
        c = res.read_namespaced_resource_claim("shared", "default")
        return c if not c.status.reserved_for else None
    claim = wait_for(released, what="the reservation removed")
    assert claim.status.allocation is None  # no reservation left and the finalizer was there: deallocated
    assert not claim.metadata.finalizers  # and the claim itself stays: it was not generated for the pod
