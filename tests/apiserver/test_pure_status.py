"""Status errors, name syntax, generateName, discovery documents and the OpenAPI stub."""

from __future__ import annotations

import random

import pytest

from mockgpu.backends.upstream.binaries import versions
from mockgpu.control.apiserver import discovery, names, openapi
from mockgpu.control.apiserver import status as st

STATUS_CASES = [
    ("not-found", st.not_found("pods", "x"), 404, "NotFound", 'pods "x" not found'),
    ("not-found-group", st.not_found("leases", "x", "coordination.k8s.io"), 404, "NotFound",
     'leases.coordination.k8s.io "x" not found'),
    ("exists", st.already_exists("pods", "x"), 409, "AlreadyExists", 'pods "x" already exists'),
    ("conflict", st.conflict("pods", "x"), 409, "Conflict",
     'Operation cannot be fulfilled on pods "x": the object has been modified; please apply your changes to the '
     "latest version and try again"),
    ("bad-request", st.bad_request("nope"), 400, "BadRequest", "nope"),
    ("unauthorized", st.unauthorized(), 401, "Unauthorized", "Unauthorized"),
    ("forbidden-authz", st.forbidden("pods", user="bob", verb="list", namespace="default"), 403, "Forbidden",
     'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"'),
    ("forbidden", st.forbidden("namespaces", "default", "this namespace may not be deleted"), 403, "Forbidden",
     'namespaces "default" is forbidden: this namespace may not be deleted'),
    ("gone", st.too_old_resource_version(5, 120), 410, "Expired", "too old resource version: 5 (120)"),
    ("too-large", st.too_large(), 413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728"),
    ("method", st.method_not_allowed(), 405, "MethodNotAllowed",
     "the server does not allow this method on the requested resource"),
    ("method-on-kind", st.method_not_allowed("POST", "Binding"), 405, "MethodNotAllowed",
     'create is not supported on resources of kind "bindings"'),
    ("media", st.unsupported_media_type("text/plain"), 415, "UnsupportedMediaType",
     "the body of the request was in an unknown format - accepted media types include: application/json, "
     "application/yaml, application/json-patch+json, application/merge-patch+json, "
     "application/strategic-merge-patch+json, application/apply-patch+yaml"),
    ("not-acceptable", st.not_acceptable(), 406, "NotAcceptable",
     "only the following media types are accepted: application/json, application/yaml"),
]


@pytest.mark.parametrize(("err", "code", "reason", "message"), [c[1:] for c in STATUS_CASES],
                         ids=[c[0] for c in STATUS_CASES])
def test_status_errors_are_complete_v1_status(err, code, reason, message):
    assert isinstance(err, Exception) and err.code == code
    body = err.status
    assert (body["kind"], body["apiVersion"], body["metadata"], body["status"]) == ("Status", "v1", {}, "Failure")
    assert (body["code"], body["reason"], body["message"]) == (code, reason, message)


def test_not_found_details_and_success_status():
    assert st.not_found("pods", "x").status["details"] == {"name": "x", "kind": "pods"}
    ok = st.success_status({"name": "x", "kind": "pods", "uid": "u"})
    assert ok["status"] == "Success" and ok["details"]["uid"] == "u"


def test_invalid_accepts_tuples_and_field_errors():
    err = st.invalid("Pod", "x", [("FieldValueRequired", "Required value", "spec.containers"),
                                   st.field_not_supported("spec.dnsPolicy", "X", ["A", "B"])])
    assert err.status["message"] == ('Pod "x" is invalid: [spec.containers: Required value, spec.dnsPolicy: '
                                     'Unsupported value: "X": supported values: "A", "B"]')
    assert [c["reason"] for c in err.status["details"]["causes"]] == ["FieldValueRequired", "FieldValueNotSupported"]


def test_generate_name_uses_upstream_alphabet_and_length():
    rng = random.Random(7)
    name = names.generate_name("job-", rng)
    assert name.startswith("job-") and len(name) == 9
    assert set(name[4:]) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert names.generate_name("x" * 80, rng)[:58] == "x" * 58 and len(names.generate_name("x" * 80, rng)) == 63
    assert names.generate_name("job-", random.Random(7)) == name  # deterministic for a seeded rng


@pytest.mark.parametrize(("fn", "value", "ok"), [
    (names.dns1123_subdomain, "gpu-0.pool", True), (names.dns1123_subdomain, "Gpu", False),
    (names.dns1123_label, "gpu-0", True), (names.dns1123_label, "a.b", False), (names.dns1123_label, "a" * 64, False),
    (names.qualified_name, "nvidia.com/gpu.product", True), (names.qualified_name, "/x", False),
    (names.qualified_name, "a/b/c", False), (names.label_value, "", True), (names.label_value, "A100_80GB", True),
    (names.label_value, "x" * 64, False), (names.configmap_key, "gpu-0.json", True),
    (names.configmap_key, "a/b", False),
], ids=lambda v: getattr(v, "__name__", str(v))[:20])
def test_name_syntax(fn, value, ok):
    assert (fn(value) == []) is ok


def test_discovery_core_list_has_resources_short_names_and_subresources():
    doc = discovery.api_resource_list_v1()
    by_name = {r["name"]: r for r in doc["resources"]}
    assert doc["groupVersion"] == "v1"
    for plural, short in (("pods", "po"), ("nodes", "no"), ("namespaces", "ns"), ("events", "ev"),
                          ("configmaps", "cm"), ("serviceaccounts", "sa")):
        assert by_name[plural]["shortNames"] == [short]
        assert "watch" in by_name[plural]["verbs"]
    assert by_name["pods"]["namespaced"] is True and by_name["nodes"]["namespaced"] is False
    assert by_name["pods/binding"]["verbs"] == ["create"] and by_name["pods/log"]["kind"] == "Pod"
    assert by_name["pods/eviction"]["group"] == "policy" and by_name["nodes/status"]["verbs"] == ["get", "patch",
                                                                                                  "update"]
    assert by_name["pods"]["categories"] == ["all"]


def test_version_and_aggregated_discovery():
    info = discovery.version_info()
    # the release the server models is the one the upstream backend builds and runs (the oracle)
    assert info["gitVersion"] == f"{versions()['KUBERNETES_VERSION']}-mockgpu"
    assert info["gitVersion"].startswith(f"v{info['major']}.{info['minor']}.")
    agg = discovery.aggregated_core_discovery()
    resources = {r["resource"]: r for r in agg["items"][0]["versions"][0]["resources"]}
    assert resources["pods"]["scope"] == "Namespaced" and resources["nodes"]["scope"] == "Cluster"
    assert resources["pods"]["responseKind"] == {"group": "", "version": "v1", "kind": "Pod"}
    kubectl_accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                      "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
    assert discovery.wants_aggregated(kubectl_accept)
    assert not discovery.wants_aggregated("application/json, */*")
    assert discovery.resource_for("po").kind == "Pod" and discovery.resource_for("Node").plural == "nodes"


def test_openapi_advertises_field_validation_on_patch():
    doc = openapi.openapi_v3_core()
    op = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert op["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert any(p["name"] == "fieldValidation" for p in op["parameters"])
    assert openapi.openapi_v3_root()["paths"]["api/v1"]["serverRelativeURL"].startswith("/openapi/v3/api/v1?hash=")


def test_invalid_without_causes_does_not_crash():
    err = st.invalid("Pod", "x", [])
    assert err.code == 422 and err.status["message"] == 'Pod "x" is invalid: []'


def test_openapi_component_schemas_carry_gvk_descriptions_and_merge_keys():
    schemas = openapi.openapi_v3_core()["components"]["schemas"]
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert "collection of containers" in pod["description"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert (containers["x-kubernetes-patch-merge-key"], containers["x-kubernetes-patch-strategy"]) == ("name", "merge")
    assert schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["tolerations"].get("x-kubernetes-patch-strategy") \
        is None  # tolerations are replaced, as upstream
    limits = schemas["io.k8s.api.core.v1.ResourceRequirements"]["properties"]["limits"]
    assert limits["additionalProperties"] == {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource."
                                                      "Quantity"}
    for kind in ("Node", "Namespace", "ConfigMap", "ServiceAccount", "Event", "Binding"):
        assert schemas[f"io.k8s.api.core.v1.{kind}"]["x-kubernetes-group-version-kind"][0]["kind"] == kind
    refs = {v for s in schemas.values() for v in _refs(s)}
    assert {r.rsplit("/", 1)[1] for r in refs} <= set(schemas)  # every reference resolves


def _refs(node):
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"]
        for v in node.values():
            yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)
