"""DRA device taints, side by side (issue 21 item 2): the real kube-scheduler and kube-controller-manager's device
taint eviction controller against the embedded ones, on the slices our driver publishes. A ``NoSchedule`` or
``NoExecute`` taint (in the slice or from a DeviceTaintRule) keeps an untolerating claim off a device; a toleration
lets it on (and is copied into the allocation result); a ``NoExecute`` DeviceTaintRule made after the pod was
scheduled evicts it (``DisruptionTarget``, ``DeviceTaintManagerEviction`` events, the rule's
``EvictionInProgress`` condition), unless the request tolerates it (forever, or for ``tolerationSeconds``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dra_harness import DRIVER, DraCase, DraRunner, claim, devices_of, dra_pod, request
from kubernetes import client

ROOT = Path(__file__).resolve().parents[2]
A100 = "A100-SXM4-80GB"
KEY = "gpu.mockgpu.io/xid"


def pool(name: str, count: int = 1, nodes: int = 1) -> dict:
    return {"name": name, "count": nodes, "gpu": {"model": A100, "count": count}}


def taint(effect: str, value: str = "79") -> dict:
    return {"key": KEY, "value": value, "effect": effect}


def rule(name: str, effect: str, **selector: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": selector, "taint": taint(effect)}}


def one_gpu(name: str, pod: str, **exactly) -> tuple[list[dict], list[dict]]:
    return [claim(name, request("gpu", **exactly))], [dra_pod(pod, gpu={"resourceClaimName": name})]


TOLERATE = [{"key": KEY, "operator": "Exists", "effect": "NoExecute"}]

CASES = [
    DraCase("t01 NoSchedule taint in the slice: the other GPU", [pool("t01-a", count=2)],
            *one_gpu("c", "t01-p"), taints={"gpu-0": [taint("NoSchedule")]},
            predicate=lambda req, d: d["attributes"]["index"]["int"] == 1, section="dra-taints"),
    DraCase("t02 NoExecute taint on the only GPU: unschedulable", [pool("t02-a")], *one_gpu("c", "t02-p"),
            taints={"gpu-0": [taint("NoExecute")]}, expect=(False,), section="dra-taints"),
    DraCase("t03 a toleration lets the claim have the tainted GPU", [pool("t03-a")],
            *one_gpu("c", "t03-p", tolerations=[{"key": KEY, "operator": "Exists"}]),
            taints={"gpu-0": [taint("NoSchedule")]}, section="dra-taints"),
    DraCase("t04 NoSchedule DeviceTaintRule on one node's pool: the other node", [pool("t04-a", nodes=2)],
            *one_gpu("c", "t04-p"), rules=[rule("t04-r", "NoSchedule", driver=DRIVER, pool="t04-a-0")],
            predicate=lambda req, d: True, section="dra-taints"),
    DraCase("t05 NoExecute DeviceTaintRule evicts the pod of a claim on the device", [pool("t05-a")],
            *one_gpu("c", "t05-p"), evict_rule=rule("t05-r", "NoExecute", driver=DRIVER, pool="t05-a-0",
                                                    device="gpu-0"),
            expect_evicted=(True,), rule_reason="Completed", section="dra-taints"),
    DraCase("t06 a NoExecute toleration keeps the pod", [pool("t06-a")], *one_gpu("c", "t06-p", tolerations=TOLERATE),
            evict_rule=rule("t06-r", "NoExecute", driver=DRIVER), expect_evicted=(False,), rule_reason="NotStarted",
            section="dra-taints"),
    DraCase("t07 tolerationSeconds 3: evicted after it", [pool("t07-a")],
            *one_gpu("c", "t07-p", tolerations=[{**TOLERATE[0], "tolerationSeconds": 3}]),
            evict_rule=rule("t07-r", "NoExecute", pool="t07-a-0"), expect_evicted=(True,), rule_reason="Completed",
            section="dra-taints"),
    DraCase("t08 effect None: nothing evicted, the rule says what NoExecute would do", [pool("t08-a", count=2)],
            *one_gpu("c", "t08-p"), evict_rule=rule("t08-r", "None", pool="t08-a-0"), expect_evicted=(False,),
            rule_reason="NoEffect", section="dra-taints"),
]


@pytest.fixture(scope="module")
def device_classes(upstream_cluster, embedded_cluster):
    docs = list(yaml.safe_load_all((ROOT / "clusters" / "dra" / "deviceclasses.yaml").read_text()))
    for c in (upstream_cluster, embedded_cluster):
        res = client.ResourceV1Api(c.api_client())
        for d in docs:
            res.create_device_class(d)
    return [d["metadata"]["name"] for d in docs]


@pytest.mark.parametrize("case", CASES, ids=[c.name.split()[0] for c in CASES])
def test_device_taints(report, sides, device_classes, case):
    emb, up = sides
    runner = DraRunner(emb, up)
    diffs = runner.run(case)
    open_ = report.add("dra-taints", case.name, diffs)
    for side, alloc in runner.last.items():
        for pod, d in alloc.decisions.items():
            print(f"{case.name}: {side} {pod} -> {d.node or d.event}; claims "
                  f"{[devices_of(alloc.claims[c]) for c in alloc.pod_claims.get(pod, []) if c in alloc.claims]}")
    for side, seen in runner.last_eviction.items():
        print(f"{case.name}: {side} after {case.evict_rule['metadata']['name']}: {seen}")  # type: ignore[index]
    assert not open_, "\n".join(f"{k}: {d}" for k, d in open_)
    for side, alloc in runner.last.items():
        got = tuple(alloc.decisions[p["metadata"]["name"]].node is not None for p in case.pods)
        assert got == case.expect, f"{side}: scheduled {got}, the case expects {case.expect}"


# -- the API battery: taints, tolerations and DeviceTaintRules judged by both API servers ------------------------
def api_rule(name: str, selector: dict | None = None, **taint_fields) -> dict:
    spec: dict = {"taint": {"key": KEY, "value": "79", "effect": "NoExecute", **taint_fields}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name}, "spec": spec}


def api_slice(name: str, taints: list[dict]) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": "nowhere", "pool": {"name": "nowhere", "generation": 1,
                                                                        "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "taints": taints}]}}


def api_claim(name: str, tolerations: list[dict]) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.mockgpu.io", "tolerations": tolerations}}]}}}


def _without(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


TAINT_API_CASES = [
    ("rule: valid (control)", "rule", api_rule("ok-rule", {"driver": DRIVER, "pool": "p", "device": "gpu-0"})),
    ("rule: effect PreferNoSchedule", "rule", api_rule("r1", {}, effect="PreferNoSchedule")),
    ("rule: no effect", "rule", {**api_rule("r2", {}), "spec": {"taint": {"key": KEY}}}),
    ("rule: no key", "rule", {**api_rule("r3", {}), "spec": {"taint": {"effect": "NoSchedule"}}}),
    ("rule: key not a label name", "rule", api_rule("r4", {}, key="a/b/c")),
    ("rule: value not a label value", "rule", api_rule("r5", {}, value="-79-")),
    ("rule: bad driver, pool and device names", "rule",
     api_rule("r6", {"driver": "GPU_driver", "pool": "Bad Pool", "device": "gpu.0"})),
    ("rule: invalid name", "rule", api_rule("Bad_Rule", {})),
    ("rule status: bad conditions", "rule-status", {"conditions": [
        {"type": "EvictionInProgress", "status": "Maybe", "reason": "1x"},
        {"type": "EvictionInProgress", "status": "True", "reason": "R", "lastTransitionTime": "2026-01-01T00:00:00Z",
         "message": ""}]}),
    ("rule status: nine conditions", "rule-status", {"conditions": [
        {"type": f"T{i}", "status": "True", "reason": "R", "lastTransitionTime": "2026-01-01T00:00:00Z",
         "message": ""} for i in range(9)]}),
    ("slice: taint effect PreferNoSchedule", "slice", api_slice("s1", [{"key": KEY, "effect": "PreferNoSchedule"}])),
    ("slice: taint without effect", "slice", api_slice("s2", [{"key": KEY}])),
    ("slice: 17 taints", "slice", api_slice("s3", [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(17)])),
    ("claim: toleration Exists with a value", "claim", api_claim("c1", [{"key": KEY, "operator": "Exists",
                                                                         "value": "79"}])),
    ("claim: toleration operator In", "claim", api_claim("c2", [{"key": KEY, "operator": "In"}])),
    ("claim: toleration effect PreferNoSchedule", "claim", api_claim("c3", [{"operator": "Exists",
                                                                             "effect": "PreferNoSchedule"}])),
    ("claim: toleration key not a label name", "claim", api_claim("c4", [{"key": "a b", "operator": "Exists"}])),
    ("claim: 17 tolerations", "claim", api_claim("c5", [{"key": f"k{i}", "operator": "Exists"} for i in range(17)])),
    ("claim: valid tolerations (control)", "claim", api_claim("c6", [
        {"key": KEY, "value": "79"}, {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}])),
]


def _send_taint(api, kind: str, body: dict) -> dict:
    from test_dra import raw

    base = "/apis/resource.k8s.io/v1"
    if kind == "rule":
        return raw(api, "POST", f"{base}/devicetaintrules", body)
    if kind == "slice":
        return raw(api, "POST", f"{base}/resourceslices", body)
    if kind == "claim":
        return raw(api, "POST", f"{base}/namespaces/dra-taints-api/resourceclaims", body)
    # rule-status: a PUT of the control rule's status (read first for its resourceVersion)
    rule = client.ResourceV1Api(api).read_device_taint_rule("ok-rule")
    current = api.sanitize_for_serialization(rule)
    return raw(api, "PUT", f"{base}/devicetaintrules/ok-rule/status", {**current, "status": body})


def test_device_taint_api_battery(report, upstream_cluster, embedded_cluster, device_classes):
    from test_api import _ns

    results = {}
    for name, c in (("embedded", embedded_cluster), ("upstream", upstream_cluster)):
        _ns(c.api_client(), "dra-taints-api")
        results[name] = [(case, _send_taint(c.api_client(), kind, body)) for case, kind, body in TAINT_API_CASES]
        client.ResourceV1Api(c.api_client()).delete_device_taint_rule("ok-rule")
    report.compare("dra-taints", results["embedded"], results["upstream"])
