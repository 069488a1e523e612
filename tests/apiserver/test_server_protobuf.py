"""Protobuf on the wire against the embedded API server: raw requests (bodies, responses, Status errors, the watch
stream, what stays JSON) and a real client-go program (tests/goclient), which speaks protobuf by default."""

from __future__ import annotations

import json
import ssl
import struct
import urllib.request

import pytest
from goclient_build import require_goclient, run_scenario

from mockgpu.control.apiserver import protobuf

PB = protobuf.CONTENT_TYPE
CLIENT_GO_ACCEPT = "application/vnd.kubernetes.protobuf, */*"


def _configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"a": "b"}},
            "data": {"k": "v"}, "binaryData": {"bin": "AAEC"}, "immutable": False}


def test_a_protobuf_create_answers_in_protobuf_what_a_json_get_reads(raw):
    code, body, headers = raw.request("POST", "/api/v1/namespaces/default/configmaps",
                                      protobuf.encode(_configmap("pb")), content_type=PB,
                                      headers={"Accept": CLIENT_GO_ACCEPT})
    assert code == 201 and headers["Content-Type"] == PB and body.startswith(protobuf.MAGIC)
    created = protobuf.decode_object(body)
    code, as_json = raw.json("GET", "/api/v1/namespaces/default/configmaps/pb")
    assert code == 200 and created == as_json
    assert created["binaryData"] == {"bin": "AAEC"} and created["immutable"] is False


def test_lists_and_errors_are_protobuf_too(raw):
    raw.request("POST", "/api/v1/namespaces/default/configmaps", protobuf.encode(_configmap("listed")),
                content_type=PB)
    code, body, headers = raw.request("GET", "/api/v1/namespaces/default/configmaps?labelSelector=a%3Db",
                                      headers={"Accept": CLIENT_GO_ACCEPT})
    assert code == 200 and headers["Content-Type"] == PB
    listed = protobuf.decode_object(body)
    assert listed["kind"] == "ConfigMapList" and [i["metadata"]["name"] for i in listed["items"]] == ["listed"]
    code, body, headers = raw.request("GET", "/api/v1/namespaces/default/configmaps/missing",
                                      headers={"Accept": CLIENT_GO_ACCEPT})
    assert code == 404 and headers["Content-Type"] == PB
    assert protobuf.decode_object(body) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                     "message": 'configmaps "missing" not found', "reason": "NotFound",
                                     "details": {"name": "missing", "kind": "configmaps"}, "code": 404}


def test_a_protobuf_delete_options_body_is_honoured(raw):
    raw.request("POST", "/api/v1/namespaces/default/configmaps", protobuf.encode(_configmap("gone")),
                content_type=PB)
    opts = protobuf.encode({"apiVersion": "v1", "kind": "DeleteOptions", "dryRun": ["All"]})
    code, body, _ = raw.request("DELETE", "/api/v1/namespaces/default/configmaps/gone", opts, content_type=PB,
                                headers={"Accept": CLIENT_GO_ACCEPT})
    assert code == 200 and protobuf.decode_object(body)["status"] == "Success"
    assert raw.json("GET", "/api/v1/namespaces/default/configmaps/gone")[0] == 200  # dry run: still there
    opts = protobuf.encode({"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "not-its-uid"}})
    code, body, _ = raw.request("DELETE", "/api/v1/namespaces/default/configmaps/gone", opts, content_type=PB,
                                headers={"Accept": CLIENT_GO_ACCEPT})
    assert code == 409 and protobuf.decode_object(body)["reason"] == "Conflict"


@pytest.mark.parametrize("accept", ["application/json", "application/json, application/vnd.kubernetes.protobuf",
                                    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", ""])
def test_json_stays_the_answer_for_json_clients(raw, accept):
    code, _, headers = raw.request("GET", "/api/v1/namespaces", headers={"Accept": accept} if accept else None)
    assert code == 200 and headers["Content-Type"].startswith("application/json")


def test_discovery_and_tables_stay_json(raw):
    for path in ("/api", "/api/v1", "/apis", "/apis/apps/v1"):
        code, _, headers = raw.request("GET", path, headers={"Accept": CLIENT_GO_ACCEPT})
        assert code == 200 and headers["Content-Type"].startswith("application/json"), path
    code, body, headers = raw.request("GET", "/api/v1/nodes", headers={
        "Accept": "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json"})
    assert code == 200 and json.loads(body)["kind"] == "Table"


@pytest.mark.parametrize(("kind", "error"), [
    ("Secret", "converting (v1.Secret) to (core.ConfigMap): unknown conversion"),  # a kind the scheme has
    ("Nonsense", 'no kind "Nonsense" is registered for version "v1" in scheme "pkg/runtime/scheme.go:111"'),
])
def test_a_body_of_another_kind_gets_upstreams_error(raw, kind, error):
    unknown = protobuf.schema().message_class("k8s.io.apimachinery.pkg.runtime.Unknown")()
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = "v1", kind
    body = protobuf.MAGIC + unknown.SerializeToString()
    code, data, _ = raw.request("POST", "/api/v1/namespaces/default/configmaps", body, content_type=PB)
    assert code == 400
    assert json.loads(data)["message"] == f'{kind} in version "v1" cannot be handled as a ConfigMap: {error}'


def test_the_watch_stream_is_length_prefixed_watch_events(raw, cluster):
    raw.request("POST", "/api/v1/namespaces/default/configmaps", protobuf.encode(_configmap("watched")),
                content_type=PB)
    ctx = ssl.create_default_context(cafile=str(cluster.state.cert_file))
    req = urllib.request.Request(
        cluster.url + "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&labelSelector=a%3Db",
        headers={"Authorization": f"Bearer {cluster.token}", "Accept": CLIENT_GO_ACCEPT})
    with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
        assert resp.headers["Content-Type"] == protobuf.WATCH_CONTENT_TYPE
        data = resp.read()
    events = []
    event_class = protobuf.schema().message_class("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent")
    while data:
        (length,) = struct.unpack(">I", data[:4])
        event = event_class.FromString(data[4:4 + length])
        events.append((event.type, protobuf.decode_object(event.object.raw)))
        data = data[4 + length:]
    assert [(t, o["kind"], o["metadata"]["name"]) for t, o in events] == [("ADDED", "ConfigMap", "watched")]


def test_client_go_speaks_protobuf_to_the_embedded_server(cluster):
    """A real Go client (protobuf bodies, DeleteOptions, Accept and watch): every step does what it does on
    kube-apiserver (tests/conformance/test_protobuf.py compares the two)."""
    steps = run_scenario(require_goclient(), cluster.kubeconfig, "proto")
    failed = {s: v for s, v in steps.items() if "error" in v}
    assert not failed
    pod = steps["create pod"]["object"]
    assert steps["get pod"]["object"] == pod
    spec = pod["spec"]
    assert (spec["terminationGracePeriodSeconds"], spec["automountServiceAccountToken"]) == (0, False)
    assert spec["tolerations"][1]["tolerationSeconds"] == 0
    assert spec["volumes"][0]["emptyDir"] == {"sizeLimit": "1Gi"}
    assert spec["volumes"][1]["configMap"]["defaultMode"] == 0o440
    container = spec["containers"][0]
    assert container["livenessProbe"]["httpGet"]["port"] == 8080 and container["readinessProbe"]["tcpSocket"] == {
        "port": "http"}
    assert container["resources"]["requests"]["cpu"] == "250m"
    assert steps["create configmap"]["object"]["binaryData"] == {"b": "AAEC"}
    assert steps["list pods"]["object"]["items"] == 1
    assert steps["watch pods"]["object"] == {"name": "pb", "same": True, "type": "ADDED"}
    assert steps["update pod status"]["object"][0]["type"] == "Example"
    assert steps["get missing pod"]["status"] == {"code": 404, "reason": "NotFound",
                                                  "message": 'pods "missing" not found'}
    assert steps["create invalid pod"]["status"]["reason"] == "Invalid"
    deployment = steps["create deployment"]["object"]["spec"]
    assert deployment["replicas"] == 0 and deployment["strategy"]["rollingUpdate"] == {"maxSurge": "50%",
                                                                                        "maxUnavailable": 0}
    assert steps["get scale"]["object"]["status"] == {"replicas": 0, "selector": "app=web"}
    assert steps["self subject access review"]["object"] is True
    for step in ("evict pod", "delete pod with preconditions", "delete collection of deployments"):
        assert "status" not in steps[step], steps[step]
    assert steps["delete deleted pod"]["status"]["code"] == 404
    assert steps["list deployments after"]["object"] == 0
