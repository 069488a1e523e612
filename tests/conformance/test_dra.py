"""DRA, side by side (issue 12 item 5): the real kube-scheduler and the embedded one allocate the same claims
from the slices our driver publishes ("dra"), and both API servers judge the same invalid DeviceClasses,
claims, templates and CEL expressions ("dra-api"). One row per case; every difference is fixed or listed in
known_differences.py with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from dra_harness import DraCase, DraRunner, claim, devices_of, dra_pod, request
from kubernetes import client
from test_api import normalise

ROOT = Path(__file__).resolve().parents[2]
A100 = "A100-SXM4-80GB"
GI = 1024 ** 3
CEL_40GI = 'device.capacity["gpu.mockgpu.io"].memory.compareTo(quantity("40Gi")) >= 0'
ISLAND = "gpu.mockgpu.io/nvlinkIsland"


def profile(p: str) -> str:
    return f'device.attributes["gpu.mockgpu.io"].profile == "{p}"'


def pool(name: str, model: str = A100, count: int = 4, nodes: int = 1, **gpu) -> dict:
    return {"name": name, "count": nodes, "gpu": {"model": model, "count": count, **gpu}}


def memory(d: dict) -> int:
    q = d["capacity"]["memory"]["value"]
    return int(q[:-2]) * {"Gi": GI, "Mi": 1024 ** 2}[q[-2:]]


def profile_is(want: dict[str, str]):
    return lambda req, d: d["attributes"]["profile"]["string"] == want[req]


ISLANDS = {"topology": {"nvlink": [[0, 1], [2, 3]]}}
TEMPLATE = {"resourceClaimTemplateName": "t"}

CASES = [
    DraCase("d01 whole GPU (template)", [pool("d01-a", nodes=2, **ISLANDS)],
            [claim("t", request("gpu"), template=True)], [dra_pod("d01-p", gpu=TEMPLATE)]),
    DraCase("d02 CEL memory >= 40Gi (T4 node infeasible)", [pool("d02-t4", "T4", 2), pool("d02-a100", count=2)],
            [claim("t", request("gpu", "gpu.mockgpu.io", CEL_40GI), template=True)],
            [dra_pod("d02-p", gpu=TEMPLATE)], predicate=lambda req, d: memory(d) >= 40 * GI),
    DraCase("d03 count 2 + matchAttribute nvlinkIsland (feasible)", [pool("d03-a", **ISLANDS)],
            [claim("pair", request("gpus", count=2), constraints=[{"matchAttribute": ISLAND}])],
            [dra_pod("d03-p", gpu={"resourceClaimName": "pair"})]),
    DraCase("d04 count 2 + matchAttribute nvlinkIsland (no NVLink: infeasible)", [pool("d04-a", count=2)],
            [claim("pair", request("gpus", count=2), constraints=[{"matchAttribute": ISLAND}])],
            [dra_pod("d04-p", gpu={"resourceClaimName": "pair"})], expect=(False,)),
    DraCase("d05 count 3 + matchAttribute nvlinkIsland (islands of 2: infeasible)", [pool("d05-a", **ISLANDS)],
            [claim("trio", request("gpus", count=3), constraints=[{"matchAttribute": ISLAND}])],
            [dra_pod("d05-p", gpu={"resourceClaimName": "trio"})], expect=(False,)),
    DraCase("d06 count 5 (infeasible)", [pool("d06-a", nodes=2, **ISLANDS)],
            [claim("five", request("gpus", count=5))], [dra_pod("d06-p", gpu={"resourceClaimName": "five"})],
            expect=(False,)),
    DraCase("d07 MIG 1g.10gb + 3g.40gb in one claim", [pool("d07-a", count=1)],
            [claim("migs", request("small", "mig.gpu.mockgpu.io", profile("1g.10gb")),
                   request("large", "mig.gpu.mockgpu.io", profile("3g.40gb")))],
            [dra_pod("d07-p", gpu={"resourceClaimName": "migs"})],
            predicate=profile_is({"small": "1g.10gb", "large": "3g.40gb"})),
    DraCase("d08 MIG 1g.10gb, then the whole GPU of the same card", [pool("d08-a", count=1)],
            [claim("mig", request("small", "mig.gpu.mockgpu.io", profile("1g.10gb"))),
             claim("whole", request("gpu"))],
            [dra_pod("d08-p1", gpu={"resourceClaimName": "mig"}),
             dra_pod("d08-p2", gpu={"resourceClaimName": "whole"})], expect=(True, False)),
    DraCase("d09 MIG 7g.80gb twice on one card (counters: infeasible)", [pool("d09-a", count=1)],
            [claim("m1", request("big", "mig.gpu.mockgpu.io", profile("7g.80gb"))),
             claim("m2", request("big", "mig.gpu.mockgpu.io", profile("7g.80gb")))],
            [dra_pod("d09-p1", gpu={"resourceClaimName": "m1"}), dra_pod("d09-p2", gpu={"resourceClaimName": "m2"})],
            predicate=profile_is({"big": "7g.80gb"}), expect=(True, False)),
    DraCase("d10 allocationMode All", [pool("d10-a", count=2)],
            [claim("all", request("gpus", allocationMode="All"))],
            [dra_pod("d10-p", gpu={"resourceClaimName": "all"})]),
    DraCase("d11 a claim that does not exist", [pool("d11-a", count=1)], [],
            [dra_pod("d11-p", gpu={"resourceClaimName": "no-such-claim"})], settle=8.0, expect=(False,)),
    DraCase("d12 a DeviceClass that does not exist", [pool("d12-a", count=1)],
            [claim("c", request("gpu", "no-such-class.mockgpu.io"))],
            [dra_pod("d12-p", gpu={"resourceClaimName": "c"})], expect=(False,)),
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
def test_dra_scheduling(report, sides, device_classes, case):
    emb, up = sides
    runner = DraRunner(emb, up)
    diffs = runner.run(case)
    open_ = report.add("dra", case.name, diffs)
    for side, alloc in runner.last.items():
        for pod, d in alloc.decisions.items():
            print(f"{case.name}: {side} {pod} -> {d.node or d.event}; claims "
                  f"{[devices_of(alloc.claims[c]) for c in alloc.pod_claims.get(pod, []) if c in alloc.claims]}")
    assert not open_, "\n".join(f"{k}: {d}" for k, d in open_)
    for side, alloc in runner.last.items():  # the case itself: what upstream's semantics make of it
        got = tuple(alloc.decisions[p["metadata"]["name"]].node is not None for p in case.pods)
        assert got == case.expect, f"{side}: scheduled {got}, the case expects {case.expect}"


# -- the API battery ------------------------------------------------------------------------------------
def device_class(name: str, *cel: str, **spec) -> dict:
    body = {"selectors": [{"cel": {"expression": e}} for e in cel], **spec}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": body}


def raw_claim(name: str, devices: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": devices}}


def raw_template(name: str, devices: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name},
            "spec": {"spec": {"devices": devices}}}


def req(name: str = "gpu", **exactly) -> dict:
    return {"name": name, "exactly": {"deviceClassName": "gpu.mockgpu.io", **exactly}}


def cel(*exprs: str) -> dict:
    return {"selectors": [{"cel": {"expression": e}} for e in exprs]}


API_CASES = [
    ("DeviceClass: CEL syntax error", "class", device_class("bad-syntax", "device.driver ==")),
    ("DeviceClass: CEL not a bool", "class", device_class("bad-type", "device.driver")),
    ("DeviceClass: CEL unknown field", "class", device_class("bad-field", "device.nosuch == 1")),
    ("DeviceClass: CEL undeclared reference", "class", device_class("bad-ref", "pod.name == 'x'")),
    ("DeviceClass: CEL attribute domain lookup of a string", "class",
     device_class("bad-attr", 'device.attributes["gpu.mockgpu.io"].type > 1')),
    ("DeviceClass: invalid name", "class", device_class("Bad_Name", "true")),
    ("DeviceClass: empty selector", "class", {**device_class("empty-sel"), "spec": {"selectors": [{}]}}),
    ("DeviceClass: extendedResourceName not extended", "class",
     device_class("ext", "true", extendedResourceName="cpu")),
    ("claim: no deviceClassName", "claim", raw_claim("c1", {"requests": [{"name": "gpu", "exactly": {}}]})),
    ("claim: exactly and firstAvailable", "claim", raw_claim("c2", {"requests": [{
        "name": "gpu", "exactly": {"deviceClassName": "gpu.mockgpu.io"},
        "firstAvailable": [{"name": "a", "deviceClassName": "gpu.mockgpu.io"}]}]})),
    ("claim: neither exactly nor firstAvailable", "claim", raw_claim("c3", {"requests": [{"name": "gpu"}]})),
    ("claim: invalid request name", "claim", raw_claim("c4", {"requests": [req("Bad Name")]})),
    ("claim: duplicate request names", "claim", raw_claim("c5", {"requests": [req(), req()]})),
    ("claim: count 0", "claim", raw_claim("c6", {"requests": [req(count=0)]})),
    ("claim: allocationMode Some", "claim", raw_claim("c7", {"requests": [req(allocationMode="Some")]})),
    ("claim: allocationMode All with a count", "claim",
     raw_claim("c8", {"requests": [req(allocationMode="All", count=2)]})),
    ("claim: CEL syntax error", "claim", raw_claim("c9", {"requests": [req(**cel("device.driver =="))]})),
    ("claim: CEL syntax error inside the expression", "claim", raw_claim("c9b", {"requests": [req(**cel(
        'device.driver "gpu.mockgpu.io"'))]})),
    ("claim: CEL not a bool", "claim", raw_claim("c10", {"requests": [req(**cel("device.capacity"))]})),
    ("claim: CEL quantity compared to an int", "claim", raw_claim("c11", {"requests": [req(**cel(
        'device.capacity["gpu.mockgpu.io"].memory > 1'))]})),
    ("claim: matchAttribute not qualified", "claim", raw_claim("c12", {
        "requests": [req()], "constraints": [{"matchAttribute": "nvlinkIsland"}]})),
    ("claim: constraint names an unknown request", "claim", raw_claim("c13", {
        "requests": [req()], "constraints": [{"requests": ["nope"], "matchAttribute": ISLAND}]})),
    ("claim: constraint without matchAttribute", "claim", raw_claim("c14", {
        "requests": [req()], "constraints": [{"requests": ["gpu"]}]})),
    ("claim: invalid deviceClassName", "claim", raw_claim("c15", {"requests": [{
        "name": "gpu", "exactly": {"deviceClassName": "Bad_Class"}}]})),
    ("claim: adminAccess with count All", "claim", raw_claim("c16", {"requests": [req(
        allocationMode="All", count=1, adminAccess=True)]})),
    ("template: CEL syntax error", "template", raw_template("t1", {"requests": [req(**cel("("))]})),
    ("template: no deviceClassName", "template", raw_template("t2", {"requests": [{"name": "g", "exactly": {}}]})),
    ("template: invalid name", "template", raw_template("Bad_T", {"requests": [req()]})),
    ("valid template (control)", "template", raw_template("tok", {"requests": [req(**cel(CEL_40GI))]})),
    ("update a template's spec (immutable)", "template-update", raw_template("tok", {"requests": [req(count=2)]})),
    ("valid claim (control)", "claim", raw_claim("ok", {"requests": [req(**cel(CEL_40GI))],
                                                         "constraints": [{"matchAttribute": ISLAND}]})),
    ("update a claim's spec (immutable)", "update", raw_claim("ok", {"requests": [req(count=2)]})),
    ("pod: claim with both claim name and template", "pod", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "both"},
        "spec": {"resourceClaims": [{"name": "g", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}],
                 "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "g"}]}}]}}),
    ("pod: container uses an undeclared claim", "pod", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "undeclared"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "g"}]}}]}}),
]


def raw(api, method: str, path: str, body: dict | None = None) -> dict:
    """One REST call, past the client's own model validation (it would refuse some bodies before sending):
    what a user can observe of it, as ``test_api.outcome`` reports it."""
    m, url, headers, data, _ = api.param_serialize(
        method=method, resource_path=path, body=body, auth_settings=["BearerToken"],
        header_params={"Content-Type": "application/json", "Accept": "application/json"})
    resp = api.call_api(m, url, headers, data)
    resp.read()
    doc = json.loads(resp.data or b"{}")
    if resp.status >= 400:
        causes = sorted((c.get("reason"), c.get("field")) for c in (doc.get("details") or {}).get("causes") or [])
        return {"code": resp.status, "reason": doc.get("reason"), "message": normalise(doc.get("message") or ""),
                "causes": causes}
    return {"code": resp.status, "name": (doc.get("metadata") or {}).get("name")}


def _send(api, kind: str, body: dict) -> dict:
    ns = "dra-api"
    name = body["metadata"]["name"]
    if kind == "class":
        return raw(api, "POST", "/apis/resource.k8s.io/v1/deviceclasses", body)
    if kind == "claim":
        return raw(api, "POST", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims", body)
    if kind == "template":
        return raw(api, "POST", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", body)
    if kind in ("update", "template-update"):
        plural = "resourceclaims" if kind == "update" else "resourceclaimtemplates"
        path = f"/apis/resource.k8s.io/v1/namespaces/{ns}/{plural}/{name}"
        cur = json.loads(api.call_api(*api.param_serialize(method="GET", resource_path=path,
                                                           auth_settings=["BearerToken"])[:3]).read() or b"{}")
        rv = (cur.get("metadata") or {}).get("resourceVersion")
        return raw(api, "PUT", path, {**body, "metadata": {**body["metadata"], "resourceVersion": rv}})
    pod = {**body, "spec": {**body["spec"], "schedulerName": "no-such-scheduler"}}
    return raw(api, "POST", f"/api/v1/namespaces/{ns}/pods", pod)


def test_dra_api_battery(report, upstream_cluster, embedded_cluster, device_classes):
    from test_api import _ns

    results = {}
    for name, c in (("embedded", embedded_cluster), ("upstream", upstream_cluster)):
        _ns(c.api_client(), "dra-api")
        results[name] = [(case, _send(c.api_client(), kind, body)) for case, kind, body in API_CASES]
    report.compare("dra-api", results["embedded"], results["upstream"])
