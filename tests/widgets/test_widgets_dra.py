"""The lab client's DRA calls (``resource.k8s.io/v1`` through the official ``ResourceV1Api``) against a real
API-only embedded cluster: DeviceClasses applied twice, ResourceSlices by node and driver, claims made, found
from a pod and cleaned up. No scheduler, kubelet or driver runs here; the test writes the slices and the pod
status the way those do. Lab 09 runs the same calls against the whole control plane."""

from __future__ import annotations

import pytest

from mockgpu.widgets import LabCluster
from mockgpu.widgets.client import ApiRefused
from mockgpu.widgets.submit import LAB_LABEL, Submission, claim_manifest, pod_manifest

GPU_CLASS = 'device.driver == "gpu.mockgpu.io" && device.attributes["gpu.mockgpu.io"].type == "gpu"'


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with LabCluster("clusters/dra.yaml", name="widgets-dra", home=tmp_path_factory.mktemp("home"),
                    control_plane=False) as lab:
        yield lab


@pytest.fixture(autouse=True)
def clean(lab):
    yield
    lab.client.delete_pods("default")
    for c in lab.client.list_claims("default"):
        lab.client.delete_claim("default", c["metadata"]["name"])


def _slice(name: str, node: str, driver: str, devices: list[str]) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": d} for d in devices]}}


def _request(name: str = "gpu", count: int = 1, cel: str | None = None) -> dict:
    spec: dict = {"deviceClassName": "gpu.mockgpu.io", "count": count}
    if cel:
        spec["selectors"] = [{"cel": {"expression": cel}}]
    return {"name": name, "exactly": spec}


def test_device_classes_are_created_then_replaced_as_kubectl_apply_leaves_them(lab):
    assert lab.apply_device_classes() == ["gpu.mockgpu.io", "mig.gpu.mockgpu.io"]
    classes = {c["metadata"]["name"]: c for c in lab.client.list_device_classes()}
    assert classes["gpu.mockgpu.io"]["spec"]["selectors"][0]["cel"]["expression"] == GPU_CLASS
    changed = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.mockgpu.io"},
               "spec": {"selectors": [{"cel": {"expression": 'device.driver == "other"'}}]}}
    assert lab.client.apply_device_classes([changed]) == ["gpu.mockgpu.io"]
    classes = {c["metadata"]["name"]: c for c in lab.client.list_device_classes()}
    assert classes["gpu.mockgpu.io"]["spec"]["selectors"][0]["cel"]["expression"] == 'device.driver == "other"'
    lab.apply_device_classes()  # back as the file says, for the other tests


def test_an_invalid_device_class_is_refused_with_the_servers_422(lab):
    bad = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "bad"},
           "spec": {"selectors": [{"cel": {"expression": "device.driver =="}}]}}
    with pytest.raises(ApiRefused) as err:
        lab.client.apply_device_classes([bad])
    assert err.value.code == 422 and "spec.selectors[0].cel.expression" in str(err.value)


@pytest.mark.parametrize("node, driver, names", [
    (None, None, ["a-gpu", "a-other", "b-gpu"]),
    ("dra-0", None, ["a-gpu", "a-other"]),
    (None, "gpu.mockgpu.io", ["a-gpu", "b-gpu"]),
    ("both-0", "gpu.mockgpu.io", ["b-gpu"]),
    ("nowhere", None, []),
])
def test_resource_slices_are_listed_by_node_and_driver(lab, node, driver, names):
    have = {s["metadata"]["name"] for s in lab.client.list_resource_slices()}
    for s in (_slice("a-gpu", "dra-0", "gpu.mockgpu.io", ["gpu-0"]), _slice("a-other", "dra-0", "other.example.com",
              ["x"]), _slice("b-gpu", "both-0", "gpu.mockgpu.io", ["gpu-2", "gpu-3"])):
        if s["metadata"]["name"] not in have:
            lab.client.resource.create_resource_slice(s, _preload_content=False)
    assert [s["metadata"]["name"] for s in lab.client.list_resource_slices(node, driver)] == names


def test_a_claim_is_created_labelled_as_the_labs_with_its_requests_and_constraints(lab):
    constraint = [{"matchAttribute": "gpu.mockgpu.io/nvlinkIsland"}]
    claim = lab.claim("pair", [_request("gpus", 2)], constraint)
    assert claim["metadata"]["labels"] == {LAB_LABEL: "true"}
    assert claim["spec"]["devices"]["constraints"] == constraint
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert [c["metadata"]["name"] for c in lab.client.list_claims("default", LAB_LABEL)] == ["pair"]
    assert lab.client.get_claim("default", "pair")["metadata"]["uid"] == claim["metadata"]["uid"]


def test_a_claim_with_bad_cel_is_refused_with_the_field_path(lab):
    with pytest.raises(ApiRefused) as err:
        lab.claim("bad", [_request(cel="device.capacity[")])
    assert err.value.code == 422 and "spec.devices.requests[0].exactly.selectors[0].cel.expression" in str(err.value)


def test_a_pod_with_claims_asks_for_no_extended_resource_and_names_each_claim():
    pod = pod_manifest(Submission("inspect", 0, name="p", claims=("one",), claim_templates=("tmpl",)))
    main = pod["spec"]["containers"][0]
    assert main["resources"] == {"claims": [{"name": "one"}, {"name": "tmpl"}]}
    assert pod["spec"]["resourceClaims"] == [{"name": "one", "resourceClaimName": "one"},
                                             {"name": "tmpl", "resourceClaimTemplateName": "tmpl"}]
    plain = pod_manifest(Submission("inspect", 1, name="q"))
    assert "resourceClaims" not in plain["spec"] and plain["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": "1"}}


def test_the_pods_claims_are_found_by_name_and_through_its_claim_statuses(lab):
    lab.claim("named", [_request()])
    lab.client.create_claim_template({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "tmpl", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [_request()]}}}})
    try:
        pod = lab.submit("p", claims=("named",), claim_templates=("tmpl",))
        assert pod["spec"]["containers"][0]["resources"] == {"claims": [{"name": "named"}, {"name": "tmpl"}]}
        assert list(lab.client.pod_claims(pod)) == ["named"]  # the template's claim is not made yet
        lab.claim("p-tmpl-abcde", [_request()])  # as the claim controller names it
        pod["status"] = {**(pod.get("status") or {}),
                         "resourceClaimStatuses": [{"name": "tmpl", "resourceClaimName": "p-tmpl-abcde"}]}
        pod = lab.client._json(lab.client.core.replace_namespaced_pod_status, "p", "default", pod)
        found = lab.client.pod_claims(pod)
        assert {k: v["metadata"]["name"] for k, v in found.items()} == {"named": "named", "tmpl": "p-tmpl-abcde"}
    finally:
        lab.client.delete_claim_template("default", "tmpl")
    assert lab.client.list_claim_templates("default") == []


def test_clear_deletes_the_labs_claims_and_leaves_the_others(lab):
    lab.claim("mine", [_request()])
    lab.client.create_claim({**claim_manifest("theirs", [_request()]), "metadata": {"name": "theirs"}})
    lab.clear()
    assert [c["metadata"]["name"] for c in lab.client.list_claims("default")] == ["theirs"]


def test_claim_manifest_is_a_resource_claim_without_constraints_unless_given():
    m = claim_manifest("c", [_request()], namespace="ns")
    assert m["apiVersion"] == "resource.k8s.io/v1" and m["kind"] == "ResourceClaim"
    assert m["metadata"] == {"name": "c", "namespace": "ns", "labels": {LAB_LABEL: "true"}}
    assert "constraints" not in m["spec"]["devices"]


@pytest.mark.parametrize("code, raises", [(404, False), (403, True), (500, True)])
def test_clear_on_a_cluster_without_the_resource_api_skips_claims_and_other_refusals_still_raise(lab, monkeypatch,
                                                                                                 code, raises):
    def refused(*_a, **_kw):
        raise ApiRefused(code, "NotFound" if code == 404 else "x", "the server could not find the requested resource")

    monkeypatch.setattr(lab.client, "list_claims", refused)
    if raises:
        with pytest.raises(ApiRefused):
            lab.clear()
    else:
        lab.clear()
