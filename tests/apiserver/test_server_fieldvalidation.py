"""Field validation over HTTP, as kube-apiserver does it: unknown and duplicate fields under each
``fieldValidation`` (default Warn: dropped with a ``Warning`` header; Strict: refused; Ignore: dropped silently;
anything else: 422), and values of the wrong type (400 on create/update, 422 on a patch's result) that would
otherwise be stored and break every client's list."""

from __future__ import annotations

import copy
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mockgpu.backends.embedded import EmbeddedCluster

ROOT = Path(__file__).resolve().parents[2]
PODS = "/api/v1/namespaces/default/pods"
BOGUS_CREATE = ('CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "bogus": supported '
                'values: "", "Ignore", "Strict", "Warn"')


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(ROOT / "clusters" / "seed-4x2.yaml", home=tmp_path_factory.mktemp("fv"),
                         delete_on_exit=True) as c:
        yield c


class Http:
    """Requests that keep every ``Warning`` header (the shared ``Raw`` keeps one header of each name)."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster
        self.ctx = ssl.create_default_context(cafile=str(cluster.state.cert_file))

    def __call__(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
                 content_type: str = "application/json") -> tuple[int, Any, list[str]]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.cluster.url + path, data=data, method=method, headers={
            "Content-Type": content_type, "Authorization": f"Bearer {self.cluster.token}"})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=10) as resp:
                return resp.status, json.loads(resp.read()), resp.headers.get_all("Warning") or []
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read()), err.headers.get_all("Warning") or []


@pytest.fixture(scope="module")
def http(cluster: EmbeddedCluster) -> Http:
    return Http(cluster)


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def _delete(http: Http, name: str) -> None:
    http("DELETE", f"{PODS}/{name}?gracePeriodSeconds=0")


def _warning(text: str) -> str:
    return "299 - " + json.dumps(text)


# where the unknown field goes: (id, setter, its strict path)
PLACES = [
    ("top-level", lambda p: p.update(bogus=1), "bogus"),
    ("in-spec", lambda p: p["spec"].update(foo={"x": 1}), "spec.foo"),
    ("in-a-list-item", lambda p: p["spec"]["containers"][0].update(imagee="x"), "spec.containers[0].imagee"),
    ("in-metadata", lambda p: p["metadata"].update(colour="red"), "metadata.colour"),
]
# each fieldValidation: (query, expected code, warned, stored)
MODES = [
    ("default", "", 201, True, True),
    ("Warn", "?fieldValidation=Warn", 201, True, True),
    ("Strict", "?fieldValidation=Strict", 400, False, False),
    ("Ignore", "?fieldValidation=Ignore", 201, False, True),
    ("bogus", "?fieldValidation=bogus", 422, False, False),
]


def _absent(obj: dict[str, Any], path: str) -> bool:
    cur: Any = obj
    for part in path.replace("[0]", ".0").split("."):
        if isinstance(cur, list):
            cur = cur[int(part)]
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return True
    return False


@pytest.mark.parametrize(("place", "mode"), [(p, m) for p in PLACES for m in MODES],
                         ids=[f"{p[0]}-{m[0]}" for p in PLACES for m in MODES])
def test_unknown_fields_on_create(http: Http, place: tuple, mode: tuple) -> None:
    (where, put, path), (how, query, code, warned, stored) = place, mode
    name = f"u-{where}-{how}".lower()
    body = pod(name)
    put(body)
    got, out, warnings = http("POST", PODS + query, body)
    assert got == code, out
    assert warnings == ([_warning(f'unknown field "{path}"')] if warned else [])
    if how == "Strict":
        assert out["reason"] == "BadRequest" and out["message"] == (
            f'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "{path}"')
    if how == "bogus":
        assert out["reason"] == "Invalid" and out["message"] == BOGUS_CREATE
    read, obj, _ = http("GET", f"{PODS}/{name}")
    assert read == (200 if stored else 404)
    if stored:
        assert _absent(obj, path) and _absent(out, path), obj
        _delete(http, name)


UPDATE_MODES = [
    ("default", "", 200, True),
    ("Strict", "?fieldValidation=Strict", 400, False),
    ("Ignore", "?fieldValidation=Ignore", 200, False),
    ("bogus", "?fieldValidation=bogus", 422, False),
]


@pytest.mark.parametrize(("how", "query", "code", "warned"), UPDATE_MODES, ids=[m[0] for m in UPDATE_MODES])
def test_unknown_fields_on_update(http: Http, how: str, query: str, code: int, warned: bool) -> None:
    name = f"put-{how}".lower()
    assert http("POST", PODS, pod(name))[0] == 201
    current = http("GET", f"{PODS}/{name}")[1]
    current["spec"]["containers"][0]["imagee"] = "x"
    got, out, warnings = http("PUT", f"{PODS}/{name}{query}", current)
    assert got == code, out
    assert warnings == ([_warning('unknown field "spec.containers[0].imagee"')] if warned else [])
    if how == "Strict":
        assert out["message"] == ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                                  'unknown field "spec.containers[0].imagee"')
    if how == "bogus":
        assert out["message"] == BOGUS_CREATE.replace("CreateOptions", "UpdateOptions")
    assert "imagee" not in http("GET", f"{PODS}/{name}")[1]["spec"]["containers"][0]
    _delete(http, name)


PATCH_MODES = [
    ("default", "", 200, True),
    ("Strict", "?fieldValidation=Strict", 422, False),
    ("Ignore", "?fieldValidation=Ignore", 200, False),
    ("bogus", "?fieldValidation=bogus", 422, False),
]


@pytest.mark.parametrize(("how", "query", "code", "warned"), PATCH_MODES, ids=[m[0] for m in PATCH_MODES])
def test_unknown_fields_in_a_patch_result(http: Http, how: str, query: str, code: int, warned: bool) -> None:
    name = f"patch-{how}".lower()
    assert http("POST", PODS, pod(name))[0] == 201
    got, out, warnings = http("PATCH", f"{PODS}/{name}{query}", {"metadata": {"labels": {"a": "b"}},
                                                                  "spec": {"foo": 1}},
                              content_type="application/merge-patch+json")
    assert got == code, out
    assert warnings == ([_warning('unknown field "spec.foo"')] if warned else [])
    if how == "Strict":  # upstream: Invalid on the patch, its value the patched object
        assert out["reason"] == "Invalid" and out["message"].startswith(' "" is invalid: patch: Invalid value: ')
        assert out["message"].endswith(': strict decoding error: unknown field "spec.foo"')
        assert out["details"]["causes"][0]["field"] == "patch"
    if how == "bogus":
        assert out["message"] == BOGUS_CREATE.replace("CreateOptions", "PatchOptions")
    stored = http("GET", f"{PODS}/{name}")[1]
    assert "foo" not in stored["spec"]
    assert stored["metadata"].get("labels") == ({"a": "b"} if code == 200 else None)
    _delete(http, name)


DUPLICATES = b'''{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s", "labels": {"a": "1", "a": "2"}},
 "spec": {"containers": [{"name": "main", "image": "busybox", "image": "busybox:1.37"}]}}'''


def test_duplicate_fields_in_a_json_body_warn_and_keep_the_last(http: Http) -> None:
    got, out, warnings = http("POST", PODS, raw=DUPLICATES % b"dup")
    assert got == 201, out
    assert warnings == [_warning('duplicate field "metadata.labels.a"'),
                        _warning('duplicate field "spec.containers[0].image"')]
    assert out["metadata"]["labels"] == {"a": "2"} and out["spec"]["containers"][0]["image"] == "busybox:1.37"
    got, out, _ = http("POST", PODS + "?fieldValidation=Strict", raw=DUPLICATES % b"dup-strict")
    assert got == 400 and out["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: duplicate field "metadata.labels.a", '
        'duplicate field "spec.containers[0].image"')
    _delete(http, "dup")


# e2e field_validation.go "should detect unknown and duplicate fields of a typed object": sigs.k8s.io/json reports
# each key where the document has it (unknown, then the repeat), an unknown key given twice once, as unknown only
ORDERED = b'''{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "%s", "labels": {"app": "x"}},
 "spec": {"unknownField": "foo", "replicas": 2, "replicas": 3, "bogus": 1, "bogus": 2,
  "selector": {"matchLabels": {"app": "x"}, "matchLabels": {"app": "x"}},
  "template": {"metadata": {"labels": {"app": "x"}, "extra": 1},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}'''


@pytest.mark.parametrize(("directive", "code", "warned"), [
    ("Strict", 400, []),
    ("Warn", 201, ['unknown field "spec.unknownField"', 'duplicate field "spec.replicas"', 'unknown field "spec.bogus"',
                   'duplicate field "spec.selector.matchLabels"', 'unknown field "spec.template.metadata.extra"']),
    ("Ignore", 201, []),
])
def test_strict_errors_come_in_document_order(http: Http, directive: str, code: int, warned: list[str]) -> None:
    name = f"ordered-{directive.lower()}"
    got, out, warnings = http("POST", f"/apis/apps/v1/namespaces/default/deployments?fieldValidation={directive}",
                              raw=ORDERED % name.encode())
    assert got == code, out
    assert warnings == [_warning(w) for w in warned]
    if code == 400:
        assert out["message"] == (
            'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field '
            '"spec.unknownField", duplicate field "spec.replicas", unknown field "spec.bogus", duplicate field '
            '"spec.selector.matchLabels", unknown field "spec.template.metadata.extra"')
    else:
        assert out["spec"]["replicas"] == 3 and "bogus" not in out["spec"]
        http("DELETE", f"/apis/apps/v1/namespaces/default/deployments/{name}")


def _set(path: str, value: Any) -> Any:
    def put(p: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        cur: Any = p
        for part in parents:
            cur = cur[int(part)] if isinstance(cur, list) else cur.setdefault(part, {})
        cur[last] = value
    return put


# (id, mutation, decoder's message after 'Pod in version "v1" cannot be handled as a Pod: ')
WRONG_TYPES = [
    ("list-of-strings-for-volumes", _set("spec.volumes", ["x"]),
     "json: cannot unmarshal string into Go struct field PodSpec.spec.volumes of type v1.Volume"),
    ("string-for-an-int", _set("spec.activeDeadlineSeconds", "10"),
     "json: cannot unmarshal string into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64"),
    ("int-for-a-string", _set("spec.containers.0.image", 5),
     "json: cannot unmarshal number into Go struct field Container.spec.containers.image of type string"),
    ("object-for-a-list", _set("spec.containers", {"name": "main"}),
     "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"),
    ("int32-out-of-range", _set("spec.containers.0.ports", [{"containerPort": 2**31}]),
     "json: cannot unmarshal number 2147483648 into Go struct field ContainerPort.spec.containers.ports.containerPort "
     "of type int32"),
    ("float-for-an-int", _set("spec.priority", 1.5),
     "json: cannot unmarshal number 1.5 into Go struct field PodSpec.spec.priority of type int32"),
    ("bool-in-a-string-map", _set("metadata.labels", {"a": True}),
     "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string"),
    ("string-for-a-bool", _set("spec.hostNetwork", "yes"),
     "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool"),
    ("array-for-an-object", _set("spec.securityContext", []),
     "json: cannot unmarshal array into Go struct field PodSpec.spec.securityContext of type v1.PodSecurityContext"),
    ("bad-time", _set("metadata.deletionTimestamp", "yesterday"),
     'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
    ("bool-for-an-int-or-string", _set("spec.containers.0.livenessProbe", {"tcpSocket": {"port": True}}),
     "json: cannot unmarshal bool into Go struct field TCPSocketAction.spec.containers.livenessProbe.ProbeHandler."
     "tcpSocket.port of type int32"),  # the Go struct inlined into Probe is named, as encoding/json does
    ("number-for-a-time", _set("metadata.creationTimestamp", 5),
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"),
    ("list-for-a-quantity", _set("spec.containers.0.resources", {"limits": {"cpu": [1]}}),
     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
]


@pytest.mark.parametrize(("mutate", "message"), [c[1:] for c in WRONG_TYPES], ids=[c[0] for c in WRONG_TYPES])
def test_wrong_types_are_refused_and_every_client_can_still_list(cluster: EmbeddedCluster, http: Http, mutate: Any,
                                                                 message: str) -> None:
    from kubernetes import client

    body = pod("typed")
    mutate(body)
    got, out, _ = http("POST", PODS, body)
    assert (got, out["reason"]) == (400, "BadRequest"), out
    assert out["message"] == 'Pod in version "v1" cannot be handled as a Pod: ' + message
    assert http("GET", f"{PODS}/typed")[0] == 404
    api = cluster.api_client()
    try:
        client.CoreV1Api(api).list_pod_for_all_namespaces()  # raised for everyone once such a pod was stored
    finally:
        api.close()


def test_wrong_types_in_an_update_and_a_patch(http: Http) -> None:
    assert http("POST", PODS, pod("typed-later"))[0] == 201
    current = http("GET", f"{PODS}/typed-later")[1]
    bad = copy.deepcopy(current)
    bad["spec"]["volumes"] = ["x"]
    got, out, _ = http("PUT", f"{PODS}/typed-later", bad)
    assert (got, out["message"]) == (400, 'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '
                                          "string into Go struct field PodSpec.spec.volumes of type v1.Volume")
    got, out, _ = http("PATCH", f"{PODS}/typed-later", {"spec": {"activeDeadlineSeconds": "10"}},
                       content_type="application/merge-patch+json")
    assert (got, out["reason"]) == (422, "Invalid"), out  # upstream: the patched object does not decode
    assert out["message"].endswith(": json: cannot unmarshal string into Go struct field "
                                   "PodSpec.spec.activeDeadlineSeconds of type int64")
    assert "activeDeadlineSeconds" not in http("GET", f"{PODS}/typed-later")[1]["spec"]
    _delete(http, "typed-later")


def test_other_groups_are_checked_from_their_models(http: Http) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}}, "replicas": "3",
                           "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod("x")["spec"]}}}
    got, out, _ = http("POST", "/apis/apps/v1/namespaces/default/deployments", deployment)
    assert (got, out["message"]) == (400, 'Deployment in version "v1" cannot be handled as a Deployment: json: '
                                          "cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas "
                                          "of type int32")
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
             "eventTime": "2026-12-03T10:00:00.000000Z", "reportingController": "me", "reportingInstance": "me-1",
             "action": "Test", "reason": "Test", "type": "Normal", "regarding": {"kind": "Pod", "name": "x"},
             "colour": "red"}
    got, out, warnings = http("POST", "/apis/events.k8s.io/v1/namespaces/default/events", event)
    assert got == 201 and warnings == [_warning('unknown field "colour"')] and "colour" not in out


YAML_DUP = (b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  name: %s-b\n"
            b"spec:\n  containers:\n  - name: main\n    image: busybox\n")


def test_duplicate_keys_in_a_yaml_body(http: Http) -> None:
    got, out, warnings = http("POST", PODS, raw=YAML_DUP % (b"ydup", b"ydup"), content_type="application/yaml")
    assert (got, out["metadata"]["name"]) == (201, "ydup-b"), out  # the last value, as sigs.k8s.io/yaml keeps it
    assert warnings == [_warning('line 5: key "name" already set in map')]
    got, out, _ = http("POST", PODS + "?fieldValidation=Strict", raw=YAML_DUP % (b"ys", b"ys"),
                       content_type="application/yaml")
    assert (got, out["message"]) == (400, 'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                                          'yaml: unmarshal errors:\n  line 5: key "name" already set in map')
    _delete(http, "ydup-b")


def test_a_strategic_merge_patch_result_is_worded_as_the_unstructured_converter(http: Http) -> None:
    assert http("POST", PODS, pod("smp"))[0] == 201
    got, out, _ = http("PATCH", f"{PODS}/smp", {"spec": {"activeDeadlineSeconds": "10"}},
                       content_type="application/strategic-merge-patch+json")
    assert (got, out["message"]) == (422, ' "" is invalid: patch: Invalid value: '
                                          '"map[spec:map[activeDeadlineSeconds:10]]": unrecognized type: int64')
    got, out, warnings = http("PATCH", f"{PODS}/smp", {"spec": {"foo": 1}},
                              content_type="application/strategic-merge-patch+json")
    assert (got, warnings) == (200, [_warning('unknown field "spec.foo"')]) and "foo" not in out["spec"]
    _delete(http, "smp")


def test_a_refused_write_still_carries_its_warnings(http: Http) -> None:
    body = pod("Not_A_Name")
    body["spec"]["foo"] = 1
    got, out, warnings = http("POST", PODS, body)
    assert (got, out["reason"]) == (422, "Invalid")
    assert warnings == [_warning('unknown field "spec.foo"')]
