"""PATCH: RFC 7386 merge, RFC 6902 JSON patch, and strategic merge as kubectl apply/patch send it."""

from __future__ import annotations

import json

import pytest

from mockgpu.control.apiserver.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    apply_patch,
)
from mockgpu.control.apiserver.status import StatusError


def pod():
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "a", "tier": "gpu"}, "finalizers": ["x"]},
            "spec": {"containers": [
                {"name": "main", "image": "img:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                {"name": "side", "image": "side:1"}],
                "tolerations": [{"key": "a", "operator": "Exists"}]},
            "status": {"conditions": [{"type": "PodScheduled", "status": "True"},
                                      {"type": "Ready", "status": "False"}]}}


MERGE_CASES = [
    ("set-label", {"metadata": {"labels": {"x": "1"}}},
     lambda o: o["metadata"]["labels"] == {"app": "a", "tier": "gpu", "x": "1"}),
    ("null-deletes", {"metadata": {"labels": {"app": None}}}, lambda o: o["metadata"]["labels"] == {"tier": "gpu"}),
    ("list-replaced", {"spec": {"containers": [{"name": "only"}]}},
     lambda o: o["spec"]["containers"] == [{"name": "only"}]),
    ("scalar-over-object", {"status": "x"}, lambda o: o["status"] == "x"),
]


@pytest.mark.parametrize(("patch", "check"), [c[1:] for c in MERGE_CASES], ids=[c[0] for c in MERGE_CASES])
def test_merge_patch(patch, check):
    original = pod()
    out = apply_patch(original, json.dumps(patch).encode(), MERGE_PATCH)
    assert check(out)
    assert original == pod()  # the input is not modified


JSON_CASES = [
    ("add-label", [{"op": "add", "path": "/metadata/labels/new", "value": "v"}],
     lambda o: o["metadata"]["labels"]["new"] == "v"),
    ("escaped", [{"op": "add", "path": "/metadata/labels/example.com~1gpu", "value": "1"}],
     lambda o: o["metadata"]["labels"]["example.com/gpu"] == "1"),
    ("append", [{"op": "add", "path": "/spec/tolerations/-", "value": {"key": "b"}}],
     lambda o: o["spec"]["tolerations"][-1] == {"key": "b"}),
    ("insert", [{"op": "add", "path": "/spec/containers/0", "value": {"name": "first"}}],
     lambda o: [c["name"] for c in o["spec"]["containers"]] == ["first", "main", "side"]),
    ("remove", [{"op": "remove", "path": "/metadata/labels/app"}], lambda o: "app" not in o["metadata"]["labels"]),
    ("replace", [{"op": "replace", "path": "/spec/containers/0/image", "value": "img:2"}],
     lambda o: o["spec"]["containers"][0]["image"] == "img:2"),
    ("move", [{"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/moved"}],
     lambda o: o["metadata"]["labels"] == {"tier": "gpu", "moved": "a"}),
    ("copy", [{"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/copied"}],
     lambda o: o["metadata"]["labels"]["copied"] == "a" and o["metadata"]["labels"]["app"] == "a"),
    ("test-passes", [{"op": "test", "path": "/metadata/name", "value": "p"},
                     {"op": "replace", "path": "/metadata/name", "value": "q"}],
     lambda o: o["metadata"]["name"] == "q"),
]


@pytest.mark.parametrize(("ops", "check"), [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES])
def test_json_patch(ops, check):
    assert check(apply_patch(pod(), json.dumps(ops), JSON_PATCH))


JSON_ERRORS = [
    ("test-fails", [{"op": "test", "path": "/metadata/name", "value": "zzz"}], 422),
    ("replace-missing", [{"op": "replace", "path": "/metadata/nope", "value": 1}], 422),
    ("remove-missing", [{"op": "remove", "path": "/spec/x/y"}], 422),
    ("not-a-list", {"op": "add"}, 400),
    ("unknown-op", [{"op": "frobnicate", "path": "/a"}], 422),  # Apply's error: 422 upstream (patch.go)
]


@pytest.mark.parametrize(("ops", "code"), [c[1:] for c in JSON_ERRORS], ids=[c[0] for c in JSON_ERRORS])
def test_json_patch_errors_are_status_errors(ops, code):
    with pytest.raises(StatusError) as info:
        apply_patch(pod(), json.dumps(ops), JSON_PATCH)
    assert info.value.code == code
    if code == 422:
        assert info.value.status["message"] == "the server rejected our request due to an error in our request"
        assert "details" not in info.value.status and info.value.detail


def names(containers):
    return [c["name"] for c in containers]


SMP_CASES = [
    ("container-merged-by-name", {"spec": {"containers": [{"name": "side", "image": "side:2"}]}},
     lambda o: o["spec"]["containers"][1] == {"name": "side", "image": "side:2"} and len(o["spec"]["containers"]) == 2),
    ("container-added", {"spec": {"containers": [{"name": "new", "image": "n"}]}},
     lambda o: names(o["spec"]["containers"]) == ["main", "side", "new"]),
    ("container-deleted", {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}},
     lambda o: names(o["spec"]["containers"]) == ["main"]),
    ("env-by-name", {"spec": {"containers": [{"name": "main", "env": [{"name": "B", "value": "20"}]}]}},
     lambda o: o["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "20"}]),
    ("port-by-containerPort", {"spec": {"containers": [{"name": "main", "ports": [{"containerPort": 80,
                                                                                   "name": "http"}]}]}},
     lambda o: o["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP", "name": "http"}]),
    ("tolerations-replaced", {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}},
     lambda o: o["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]),
    ("condition-by-type", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
     lambda o: o["status"]["conditions"] == [{"type": "PodScheduled", "status": "True"},
                                             {"type": "Ready", "status": "True"}]),
    ("finalizers-unioned", {"metadata": {"finalizers": ["y", "x"]}},
     lambda o: o["metadata"]["finalizers"] == ["x", "y"]),
    ("delete-from-primitive-list", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}},
     lambda o: o["metadata"]["finalizers"] == []),
    ("map-replace", {"metadata": {"labels": {"$patch": "replace", "only": "1"}}},
     lambda o: o["metadata"]["labels"] == {"only": "1"}),
    ("map-delete", {"status": {"$patch": "delete"}}, lambda o: "status" not in o),
    ("list-replace", {"spec": {"containers": [{"$patch": "replace"}, {"name": "solo", "image": "s"}]}},
     lambda o: o["spec"]["containers"] == [{"name": "solo", "image": "s"}]),
    ("set-element-order", {"spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "main"}],
                                    "containers": [{"name": "main", "image": "img:2"}]}},
     lambda o: names(o["spec"]["containers"]) == ["side", "main"] and o["spec"]["containers"][1]["image"] == "img:2"),
    ("retain-keys", {"spec": {"$retainKeys": ["containers"], "containers": [{"name": "main"}]}},
     lambda o: list(o["spec"]) == ["containers"]),
    ("owner-reference-by-uid", {"metadata": {"ownerReferences": [{"uid": "u1", "name": "a", "kind": "Job",
                                                                  "apiVersion": "batch/v1"}]}},
     lambda o: o["metadata"]["ownerReferences"][0]["uid"] == "u1"),
]


@pytest.mark.parametrize(("patch", "check"), [c[1:] for c in SMP_CASES], ids=[c[0] for c in SMP_CASES])
def test_strategic_merge_patch(patch, check):
    assert check(apply_patch(pod(), json.dumps(patch), STRATEGIC_MERGE_PATCH))


def test_kubectl_apply_three_way_patch_updates_last_applied():
    """What `kubectl apply` sends the second time: a changed image, the new last-applied annotation and order."""
    live = pod()
    live["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": '{"old":1}'}
    patch = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"new":1}'}},
             "spec": {"$setElementOrder/containers": [{"name": "main"}, {"name": "side"}],
                      "containers": [{"image": "img:9", "name": "main"}]}}
    out = apply_patch(live, json.dumps(patch), "application/strategic-merge-patch+json; charset=utf-8")
    assert out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == '{"new":1}'
    assert out["spec"]["containers"][0]["image"] == "img:9"
    assert out["spec"]["containers"][0]["env"] == pod()["spec"]["containers"][0]["env"]


@pytest.mark.parametrize(("body", "ctype", "code"), [
    (b"{not json", MERGE_PATCH, 400), (b"[1]", MERGE_PATCH, 400), (b"{}", "text/plain", 415),
    (b"{}", "application/apply-patch+yaml", 415),
    (b'{"spec":{"containers":[{"image":"x"}]}}', STRATEGIC_MERGE_PATCH, 400),
    (b'{"spec":{"$patch":"bogus"}}', STRATEGIC_MERGE_PATCH, 400),
], ids=["bad-json", "merge-not-object", "unknown-type", "server-side-apply", "smp-missing-merge-key",
        "smp-bad-directive"])
def test_bad_patches_are_status_errors(body, ctype, code):
    with pytest.raises(StatusError) as info:
        apply_patch(pod(), body, ctype)
    assert info.value.code == code
