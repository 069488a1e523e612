"""The device taint eviction controller: its pure parts row by row (eviction times, tolerations, the rule's
condition texts of v1.37.2's ``maybeUpdateRuleStatus``), then end to end on the embedded control plane
(controllers only: the tests play the scheduler's part by binding pods and writing allocations)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polling
import pytest
from kubernetes import client

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.control.controllers.devicetainteviction import (
    Reason,
    claim_eviction,
    newest_devices,
    pod_eviction,
    rule_condition,
)
from mockgpu.control.controllers.resourceclaim import FINALIZER

ROOT = Path(__file__).resolve().parents[2]
EMPTY = ROOT / "clusters" / "empty.yaml"
wait_for = functools.partial(polling.wait_for, timeout=30.0)
pytestmark = pytest.mark.timeout(120)
DRIVER = "gpu.mockgpu.io"
KEY = "gpu.mockgpu.io/xid"
T0 = "2026-01-01T00:00:00Z"
T0_S = 1767225600.0


def _slice(taints: list[dict[str, Any]], generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": "n1-gpus"}, "spec": {"driver": DRIVER, "nodeName": "n1", "pool": {
        "name": "n1", "generation": generation, "resourceSliceCount": 1}, "devices": [
        {"name": "gpu-0", "taints": taints}, {"name": "gpu-1"}]}}


def _claim(device: str = "gpu-0", tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": device}
    if tolerations:
        result["tolerations"] = tolerations
    return {"metadata": {"name": "c", "namespace": "default"},
            "status": {"allocation": {"devices": {"results": [result]}}}}


def _rule(effect: str, **selector: str) -> dict[str, Any]:
    return {"metadata": {"name": "r", "uid": "u-r"},
            "spec": {"deviceSelector": selector, "taint": {"key": KEY, "value": "79", "effect": effect,
                                                           "timeAdded": T0}}}


NOEXEC = {"key": KEY, "value": "79", "effect": "NoExecute", "timeAdded": T0}
SLICE_TAINT = Reason(slice="n1-gpus", device="gpu-0")

EVICTION_ROWS: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], Any]] = [
    ("no taints", [], [], _claim(), None),
    ("NoSchedule does not evict", [{**NOEXEC, "effect": "NoSchedule"}], [], _claim(), None),
    ("NoExecute in the slice", [NOEXEC], [], _claim(), (T0_S, {SLICE_TAINT})),
    ("another device's taint", [NOEXEC], [], _claim("gpu-1"), None),
    ("tolerated forever", [NOEXEC], [], _claim(tolerations=[
        {"key": KEY, "operator": "Exists", "effect": "NoExecute"}]), None),
    ("a toleration without effect NoExecute does not count", [NOEXEC], [], _claim(tolerations=[
        {"key": KEY, "operator": "Exists"}]), (T0_S, {SLICE_TAINT})),
    ("tolerationSeconds: the smallest counts", [NOEXEC], [], _claim(tolerations=[
        {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
        {"key": KEY, "operator": "Equal", "value": "79", "effect": "NoExecute", "tolerationSeconds": 30}]),
     (T0_S + 30, {SLICE_TAINT})),
    ("negative tolerationSeconds is 0", [NOEXEC], [], _claim(tolerations=[
        {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -5}]), (T0_S, {SLICE_TAINT})),
    ("a NoExecute rule on the device", [], [_rule("NoExecute", device="gpu-0")], _claim(),
     (T0_S, {Reason(rule="r")})),
    ("a rule without a selector selects nothing", [], [{**_rule("NoExecute"), "spec": {"taint": NOEXEC}}],
     _claim(), None),
    ("a NoSchedule rule does not evict", [], [_rule("NoSchedule", pool="n1")], _claim(), None),
    ("a rule of another pool", [], [_rule("NoExecute", pool="n2")], _claim(), None),
    ("slice and rule both", [NOEXEC], [_rule("NoExecute", driver=DRIVER)], _claim(),
     (T0_S, {SLICE_TAINT, Reason(rule="r")})),
]


@pytest.mark.parametrize(("taints", "rules", "claim", "want"), [r[1:] for r in EVICTION_ROWS],
                         ids=[r[0] for r in EVICTION_ROWS])
def test_claim_eviction(taints: list[dict[str, Any]], rules: list[dict[str, Any]], claim: dict[str, Any],
                        want: Any) -> None:
    ev = claim_eviction(claim, newest_devices([_slice(taints)]), rules, now=T0_S + 1000)
    assert (None if ev is None else (ev.when, ev.reasons)) == want


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    devices = newest_devices([_slice([NOEXEC], generation=1), {**_slice([], generation=2),
                                                               "metadata": {"name": "n1-gpus-v2"}}])
    assert claim_eviction(_claim(), devices, [], now=0.0) is None


def test_pod_eviction_needs_a_node_and_joins_its_claims() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "resourceClaims": [
        {"name": "a", "resourceClaimName": "ca"}, {"name": "b", "resourceClaimName": "cb"}]}}
    claims = {"ca": claim_eviction(_claim(), newest_devices([_slice([NOEXEC])]), [], 0.0),
              "cb": claim_eviction(_claim(), newest_devices([_slice([])]), [_rule("NoExecute")], 0.0)}
    ev = pod_eviction(pod, claims)
    assert ev is not None and ev.reasons == {SLICE_TAINT, Reason(rule="r")}
    assert pod_eviction({**pod, "spec": {**pod["spec"], "nodeName": ""}}, claims) is None


CONDITION_ROWS = [
    (("NoExecute", 1, 1, 0, 0, 0), ("True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace.")),
    (("NoExecute", 3, 2, 1, 0, 0), ("True", "PodsPendingEviction", "3 pods need to be evicted in 2 different "
                                                                   "namespaces. 1 pod evicted since starting the "
                                                                   "controller.")),
    (("NoExecute", 0, 0, 2, 0, 0), ("False", "Completed", "2 pods evicted since starting the controller.")),
    (("NoExecute", 0, 0, 0, 0, 0), ("False", "NotStarted", "")),
    (("None", 1, 1, 0, 4, 1), ("False", "NoEffect", "4 published devices selected. 1 allocated device selected. "
                                                    "1 pod would be evicted in 1 namespace if the effect was "
                                                    "NoExecute. This information will not be updated again. "
                                                    "Recreate the DeviceTaintRule to trigger an update.")),
    (("NoSchedule", 0, 0, 0, 0, 0), ("False", "OtherEffect", "Eviction only happens for the NoExecute effect.")),
]


@pytest.mark.parametrize(("args", "want"), CONDITION_ROWS, ids=[f"{a[0]}-{w[1]}" for a, w in CONDITION_ROWS])
def test_rule_condition_texts(args: tuple[Any, ...], want: tuple[str, str, str]) -> None:
    assert rule_condition(*args) == want


# ---- end to end ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def apis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    with EmbeddedCluster(EMPTY, home=tmp_path_factory.mktemp("home"), controllers=True, delete_on_exit=True) as c:
        api = c.api_client()
        core = client.CoreV1Api(api)
        core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        res = client.ResourceV1Api(api)
        res.create_resource_slice({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                   "metadata": {"name": "n1-gpus"},
                                   "spec": {"driver": DRIVER, "nodeName": "n1",
                                            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                                            "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}})
        yield core, res
        api.close()


def _bound_pod_with_claim(core: Any, res: Any, name: str, device: str,
                          tolerations: list[dict[str, Any]] | None = None) -> Any:
    """A pod bound to n1 whose claim is allocated ``device`` and reserved for it (the scheduler's writes)."""
    res.create_namespaced_resource_claim("default", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "finalizers": [FINALIZER]},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.mockgpu.io"}}]}}})
    pod = core.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": "n1", "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                 "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]}})
    result: dict[str, Any] = {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": device}
    if tolerations:
        result["tolerations"] = tolerations
    claim = res.read_namespaced_resource_claim(name, "default")
    claim.status = {"allocation": {"devices": {"results": [result]}},
                    "reservedFor": [{"resource": "pods", "name": name, "uid": pod.metadata.uid}]}
    res.replace_namespaced_resource_claim_status(name, "default", claim)
    return pod


def _events(core: Any, name: str) -> list[tuple[str, str, str, str]]:
    return [(e.type, e.reason, e.message, e.source.component) for e in core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={name}").items]


def _condition(res: Any, rule: str) -> Any:
    conds = res.read_device_taint_rule(rule).status.conditions or []
    return next((c for c in conds if c.type == "EvictionInProgress"), None)


def test_no_execute_rule_evicts_the_pod_and_a_toleration_keeps_the_other(apis: tuple[Any, Any]) -> None:
    core, res = apis
    victim = _bound_pod_with_claim(core, res, "victim", "gpu-0")
    keeper = _bound_pod_with_claim(core, res, "keeper", "gpu-1", tolerations=[
        {"key": KEY, "operator": "Exists", "effect": "NoExecute"}])
    res.create_device_taint_rule({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
                                  "metadata": {"name": "xid-79"},
                                  "spec": {"deviceSelector": {"driver": DRIVER, "pool": "n1"},
                                           "taint": {"key": KEY, "value": "79", "effect": "NoExecute"}}})

    def deleted() -> Any:
        pod = core.read_namespaced_pod("victim", "default")
        return pod if pod.metadata.deletion_timestamp else None

    pod = wait_for(deleted)
    assert pod.metadata.uid == victim.metadata.uid
    cond = next(c for c in pod.status.conditions if c.type == "DisruptionTarget")
    assert (cond.status, cond.reason, cond.message) == (
        "True", "DeletionByDeviceTaintManager", "Device Taint manager: deleting due to NoExecute taint")
    assert ("Normal", "DeviceTaintManagerEviction", "Marking for deletion",
            "device-taint-eviction-controller") in _events(core, "victim")
    # the first status, written before any eviction; then, ruleStatusPeriod (10 s) later, the outcome
    first = wait_for(lambda: _condition(res, "xid-79"))
    assert (first.status, first.reason, first.message, first.observed_generation) == (
        "True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace.", 1)
    done = wait_for(lambda: (c := _condition(res, "xid-79")) is not None and c.reason == "Completed" and c)
    assert (done.status, done.message) == ("False", "1 pod evicted since starting the controller.")
    kept = core.read_namespaced_pod("keeper", "default")
    assert kept.metadata.deletion_timestamp is None and kept.metadata.uid == keeper.metadata.uid
    assert not [e for e in _events(core, "keeper") if e[1] == "DeviceTaintManagerEviction"]
    res.delete_device_taint_rule("xid-79")


def test_effect_none_reports_what_no_execute_would_do(apis: tuple[Any, Any]) -> None:
    core, res = apis
    _bound_pod_with_claim(core, res, "dry-run", "gpu-0")
    res.create_device_taint_rule({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
                                  "metadata": {"name": "dry"},
                                  "spec": {"deviceSelector": {"device": "gpu-0"},
                                           "taint": {"key": KEY, "value": "79", "effect": "None"}}})
    cond = wait_for(lambda: _condition(res, "dry"))
    assert (cond.status, cond.reason) == ("False", "NoEffect")
    assert cond.message.startswith("1 published device selected. ")
    assert "1 pod would be evicted in 1 namespace if the effect was NoExecute." in cond.message
    assert core.read_namespaced_pod("dry-run", "default").metadata.deletion_timestamp is None
    res.delete_device_taint_rule("dry")
