"""resource.k8s.io/v1 served by the embedded API server, through the official client's ``ResourceV1Api``
(and raw requests for discovery and bodies the client would not send)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mockgpu.control.apiserver.discovery import AGGREGATED_CONTENT_TYPE

G = "resource.k8s.io/v1"
SELECTOR = 'device.driver == "gpu.mockgpu.io" && device.attributes["gpu.mockgpu.io"].type == "gpu"'


@pytest.fixture
def res(cluster: Any) -> Any:
    api = cluster.api_client()
    yield client.ResourceV1Api(api)
    api.close()


def slice_body(name: str, node: str, driver: str = "gpu.mockgpu.io", count: int = 2) -> dict[str, Any]:
    return {"apiVersion": G, "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 0,
                                                                  "resourceSliceCount": count},
                     "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}, "index": {"int": 0}},
                                  "capacity": {"memory": {"value": "40Gi"}}}]}}


def claim_body(name: str, expression: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.mockgpu.io"}
    if expression is not None:
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    return {"apiVersion": G, "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def test_discovery_lists_the_group_and_its_resources(raw: Any) -> None:
    code, doc = raw.json("GET", "/apis/resource.k8s.io/v1")
    assert code == 200
    by_name = {r["name"]: r for r in doc["resources"]}
    assert set(by_name) == {"deviceclasses", "devicetaintrules", "devicetaintrules/status", "resourceclaims",
                            "resourceclaims/status", "resourceclaimtemplates", "resourceslices"}
    assert (by_name["deviceclasses"]["namespaced"], by_name["resourceslices"]["namespaced"],
            by_name["resourceclaims"]["namespaced"]) == (False, False, True)
    assert by_name["resourceclaims/status"]["verbs"] == ["get", "patch", "update"]
    code, data, headers = raw.request("GET", "/apis", headers={"Accept": AGGREGATED_CONTENT_TYPE})
    groups = {g["metadata"]["name"]: g for g in json.loads(data)["items"]}
    (version,) = groups["resource.k8s.io"]["versions"]
    assert version["version"] == "v1"
    scopes = {r["resource"]: r["scope"] for r in version["resources"]}
    assert scopes == {"deviceclasses": "Cluster", "devicetaintrules": "Cluster", "resourceclaims": "Namespaced",
                      "resourceclaimtemplates": "Namespaced", "resourceslices": "Cluster"}


def test_device_taint_rule_through_the_official_client(res: Any, raw: Any) -> None:
    """DeviceTaintRule (v1.37 GA): create, the ``/status`` subresource, the generation, DELETE answering with a
    Status (v1's store), the table's taint columns."""
    body = {"apiVersion": G, "kind": "DeviceTaintRule", "metadata": {"name": "gpu-0-xid"},
            "spec": {"deviceSelector": {"driver": "gpu.mockgpu.io", "device": "gpu-0"},
                     "taint": {"key": "gpu.mockgpu.io/xid", "value": "79", "effect": "NoExecute"}}}
    made = res.create_device_taint_rule(body)
    try:
        assert (made.metadata.generation, made.spec.taint.effect) == (1, "NoExecute")
        assert made.spec.taint.time_added is not None
        cond = {"type": "EvictionInProgress", "status": "False", "reason": "Completed",
                "message": "0 pods evicted since starting the controller.", "observedGeneration": 1,
                "lastTransitionTime": "2026-01-01T00:00:00Z"}
        got = res.patch_device_taint_rule_status("gpu-0-xid", {"status": {"conditions": [cond]}})
        assert got.status.conditions[0].reason == "Completed" and got.metadata.generation == 1
        got = res.patch_device_taint_rule("gpu-0-xid", {"spec": {"taint": {"effect": "NoSchedule"}}})
        assert got.metadata.generation == 2 and got.status.conditions[0].type == "EvictionInProgress"
        with pytest.raises(ApiException) as info:
            res.patch_device_taint_rule("gpu-0-xid", {"spec": {"taint": {"effect": "PreferNoSchedule"}}})
        assert info.value.status == 422
        assert json.loads(info.value.body)["details"]["causes"] == [{
            "reason": "FieldValueNotSupported", "field": "spec.taint.effect",
            "message": 'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"'}]
        code, data, _ = raw.request("GET", "/apis/resource.k8s.io/v1/devicetaintrules",
                                    headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
        table = json.loads(data)
        assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Key", "Value", "Effect", "TimeAdded",
                                                                   "Age"]
        assert table["rows"][0]["cells"][:4] == ["gpu-0-xid", "gpu.mockgpu.io/xid", "79", "NoSchedule"]
    finally:
        code, deleted = raw.json("DELETE", "/apis/resource.k8s.io/v1/devicetaintrules/gpu-0-xid")
    assert (code, deleted["kind"], deleted["status"]) == (200, "Status", "Success")


def test_crud_through_the_official_client(res: Any) -> None:
    dc = res.create_device_class({"apiVersion": G, "kind": "DeviceClass", "metadata": {"name": "gpu.mockgpu.io"},
                                  "spec": {"selectors": [{"cel": {"expression": SELECTOR}}]}})
    assert isinstance(dc, client.V1DeviceClass) and dc.metadata.generation == 1
    assert res.read_device_class("gpu.mockgpu.io").spec.selectors[0].cel.expression == SELECTOR
    tmpl = res.create_namespaced_resource_claim_template("default", {
        "apiVersion": G, "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu"},
        "spec": {"spec": claim_body("x")["spec"]}})
    assert tmpl.spec.spec.devices.requests[0].exactly.allocation_mode == "ExactCount"
    claim = res.create_namespaced_resource_claim("default", claim_body("c1", SELECTOR))
    assert isinstance(claim, client.ResourceV1ResourceClaim)
    exactly = claim.spec.devices.requests[0].exactly
    assert (exactly.allocation_mode, exactly.count) == ("ExactCount", 1)
    assert claim.status.allocation is None and claim.status.reserved_for is None
    assert [c.metadata.name for c in res.list_namespaced_resource_claim("default").items] == ["c1"]
    s = res.create_resource_slice(slice_body("node-1-gpus", "node-1"))
    assert s.spec.devices[0].attributes["type"].string == "gpu" and s.metadata.generation == 1
    s.spec.devices[0].attributes["index"] = client.V1DeviceAttribute(int=7)
    s = res.replace_resource_slice("node-1-gpus", s)
    assert s.metadata.generation == 2 and s.spec.devices[0].attributes["index"].int == 7

    claim.status = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.mockgpu.io", "pool": "node-1",
                                 "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                                 "values": ["node-1"]}]}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "4b8e2c1e-0000-4000-8000-000000000001"}]}
    claim = res.replace_namespaced_resource_claim_status("c1", "default", claim)
    assert claim.status.allocation.devices.results[0].device == "gpu-0"
    assert claim.status.reserved_for[0].name == "p"
    patched = res.patch_namespaced_resource_claim_status("c1", "default", {"status": {"reservedFor": None}})
    assert patched.status.reserved_for is None and patched.status.allocation is not None
    claim.status = None  # a main-resource update keeps the status
    claim.metadata.labels = {"a": "b"}
    claim.metadata.resource_version = patched.metadata.resource_version
    kept = res.replace_namespaced_resource_claim("c1", "default", claim)
    assert kept.metadata.labels == {"a": "b"} and kept.status.allocation is not None

    res.delete_namespaced_resource_claim("c1", "default")
    res.delete_resource_slice("node-1-gpus")
    res.delete_namespaced_resource_claim_template("one-gpu", "default")
    res.delete_device_class("gpu.mockgpu.io")
    assert not res.list_resource_slice().items and not res.list_device_class().items


def test_slice_field_selectors(res: Any) -> None:
    res.create_resource_slice(slice_body("n1", "node-1"))
    res.create_resource_slice(slice_body("n2", "node-2"))
    res.create_resource_slice(slice_body("other", "node-1", driver="other.example.com", count=1))
    try:
        def names(selector: str) -> list[str]:
            return [s.metadata.name for s in res.list_resource_slice(field_selector=selector).items]
        assert names("spec.nodeName=node-1") == ["n1", "other"]
        assert names("spec.driver=gpu.mockgpu.io") == ["n1", "n2"]
        assert names("spec.nodeName=node-1,spec.driver=gpu.mockgpu.io") == ["n1"]
        assert names("spec.pool.name=node-2") == ["n2"]
        with pytest.raises(ApiException) as info:
            res.list_resource_slice(field_selector="spec.devices=x")
        assert info.value.status == 400
        assert json.loads(info.value.body)["message"] == "field label not supported: spec.devices"
    finally:
        res.delete_collection_resource_slice()
    assert not res.list_resource_slice().items


def _invalid(exc: ApiException) -> dict[str, Any]:
    assert exc.status == 422
    body = json.loads(exc.body)
    assert (body["kind"], body["reason"], body["details"]["group"]) == ("Status", "Invalid", "resource.k8s.io")
    return body


def test_cel_compile_error_is_a_422_at_the_expression(res: Any) -> None:
    with pytest.raises(ApiException) as info:
        res.create_namespaced_resource_claim("default", claim_body("bad", "device.driver =="))
    body = _invalid(info.value)
    (cause,) = body["details"]["causes"]
    assert cause["field"] == "spec.devices.requests[0].exactly.selectors[0].cel.expression"
    assert cause["reason"] == "FieldValueInvalid"
    assert cause["message"].startswith('Invalid value: "device.driver ==": compilation failed: ERROR: <input>:1:')
    assert body["message"].startswith('ResourceClaim.resource.k8s.io "bad" is invalid: spec.devices.requests[0].'
                                      "exactly.selectors[0].cel.expression: Invalid value:")


def test_claim_spec_is_immutable(res: Any) -> None:
    claim = res.create_namespaced_resource_claim("default", claim_body("imm"))
    claim.spec.devices.requests[0].exactly.count = 2
    try:
        with pytest.raises(ApiException) as info:
            res.replace_namespaced_resource_claim("imm", "default", claim)
        ((cause),) = _invalid(info.value)["details"]["causes"]
        assert cause["field"] == "spec" and cause["message"].endswith(": field is immutable")
    finally:
        res.delete_namespaced_resource_claim("imm", "default")


BAD_BODIES = [
    ("slice-two-node-fields", "/apis/resource.k8s.io/v1/resourceslices",
     {**slice_body("x", "node-1"), "spec": {**slice_body("x", "node-1")["spec"], "allNodes": True}}, 422, "spec"),
    ("slice-counters-and-devices", "/apis/resource.k8s.io/v1/resourceslices",
     {**slice_body("x", "node-1"), "spec": {**slice_body("x", "node-1")["spec"],
                                            "sharedCounters": [{"name": "c", "counters": {"a": {"value": "1"}}}]}},
     422, "spec"),
    ("slice-attribute-not-object", "/apis/resource.k8s.io/v1/resourceslices",
     {**slice_body("x", "node-1"), "spec": {**slice_body("x", "node-1")["spec"],
                                            "devices": [{"name": "d", "attributes": {"a": 1}}]}},
     400, 'ResourceSlice in version "v1" cannot be handled as a ResourceSlice: json: cannot unmarshal number into '
          "Go struct field Device.spec.devices.attributes of type v1.DeviceAttribute"),  # a struct, as the decoder says
    ("claim-count-wrong-type", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
     {**claim_body("x"), "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
         "deviceClassName": "gpu.mockgpu.io", "count": "two"}}]}}}, 400,
     'ResourceClaim in version "v1" cannot be handled as a ResourceClaim: json: cannot unmarshal string into Go '
     "struct field ExactDeviceRequest.spec.devices.requests.exactly.count of type int64"),
    ("claim-requests-wrong-type", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
     {**claim_body("x"), "spec": {"devices": {"requests": "gpu"}}}, 400,
     'ResourceClaim in version "v1" cannot be handled as a ResourceClaim: json: cannot unmarshal string into Go '
     "struct field DeviceClaim.spec.devices.requests of type []v1.DeviceRequest"),
    ("device-class-selector-not-object", "/apis/resource.k8s.io/v1/deviceclasses",
     {"apiVersion": G, "kind": "DeviceClass", "metadata": {"name": "x"}, "spec": {"selectors": ["device"]}}, 400,
     'DeviceClass in version "v1" cannot be handled as a DeviceClass: json: cannot unmarshal string into Go struct '
     "field DeviceClassSpec.spec.selectors of type v1.DeviceSelector"),
]


@pytest.mark.parametrize(("path", "body", "code", "expect"), [r[1:] for r in BAD_BODIES],
                         ids=[r[0] for r in BAD_BODIES])
def test_bad_bodies_are_4xx_statuses_never_500(raw: Any, path: str, body: dict[str, Any], code: int,
                                               expect: str) -> None:
    got, out = raw.json("POST", path, body)
    assert (got, out["kind"]) == (code, "Status"), out
    if code == 422:
        assert expect in [c["field"] for c in out["details"]["causes"]]
    else:
        assert out["message"] == expect


def test_pod_claims_are_validated_and_status_records_written(cluster: Any, core: Any) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dra"},
           "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                    "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "tpu"}]}}]}}
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod)
    assert info.value.status == 422
    (cause,) = json.loads(info.value.body)["details"]["causes"]
    assert cause == {"reason": "FieldValueNotFound", "field": "spec.containers[0].resources.claims[0]",
                     "message": 'Not found: "tpu": must be one of the names in pod.spec.resourceClaims: gpu'}
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    created = core.create_namespaced_pod("default", pod)
    assert created.spec.resource_claims[0].resource_claim_template_name == "one-gpu"
    created.status.resource_claim_statuses = [{"name": "gpu", "resourceClaimName": "dra-gpu-abcde"}]
    out = core.replace_namespaced_pod_status("dra", "default", created)
    assert out.status.resource_claim_statuses[0].resource_claim_name == "dra-gpu-abcde"
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod_status("dra", "default", {"status": {"resourceClaimStatuses": [
            {"name": "other", "resourceClaimName": "x"}]}})
    assert info.value.status == 422
    core.delete_namespaced_pod("dra", "default")


def test_watch_resource_slices_and_claims(res: Any, raw: Any) -> None:
    from kubernetes import watch

    rv = res.list_resource_slice().metadata.resource_version
    res.create_resource_slice(slice_body("watched", "node-3"))
    res.create_namespaced_resource_claim("default", claim_body("watched"))
    try:
        events = [(e["type"], e["object"].metadata.name, type(e["object"]).__name__)
                  for e in watch.Watch().stream(res.list_resource_slice, resource_version=rv, timeout_seconds=1)]
        assert events == [("ADDED", "watched", "V1ResourceSlice")]
        # the client's watch cannot deserialize claims (it derives the model name V1ResourceClaim from
        # ResourceV1ResourceClaimList), so the claim watch is read raw
        code, data, _ = raw.request("GET", f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims?watch=1&"
                                           f"resourceVersion={rv}&timeoutSeconds=1")
        assert code == 200
        events = [json.loads(line) for line in data.splitlines() if line.strip()]
        assert [(e["type"], e["object"]["kind"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "ResourceClaim", "watched")]
    finally:
        res.delete_resource_slice("watched")
        res.delete_namespaced_resource_claim("watched", "default")
