"""Server-side apply and managedFields through HTTP on the embedded API server."""

from __future__ import annotations

import json
from typing import Any

APPLY = "application/apply-patch+yaml"
CM = "/api/v1/namespaces/default/configmaps"


def apply(raw: Any, name: str, body: str, query: str = "fieldManager=m") -> tuple[int, Any]:
    code, data, _ = raw.request("PATCH", f"{CM}/{name}?{query}", body.encode(), content_type=APPLY)
    return code, json.loads(data)


def test_apply_creates_then_updates_and_conflicts(raw):
    code, obj = apply(raw, "c", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '1'}\n")
    assert code == 201
    assert [(e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"]] == [("m", "Apply")]
    code, obj = apply(raw, "c", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '2'}\n",
                      "fieldManager=other")
    assert code == 409
    assert obj["message"] == 'Apply failed with 1 conflict: conflict with "m": .data.a'
    assert obj["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "m"',
                                         "field": ".data.a"}]
    code, obj = apply(raw, "c", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '2'}\n",
                      "fieldManager=other&force=true&dryRun=All")
    assert code == 200 and obj["data"] == {"a": "2"}
    code, stored = raw.json("GET", f"{CM}/c")
    assert stored["data"] == {"a": "1"}  # the dry run wrote nothing
    code, obj = apply(raw, "c", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '2'}\n",
                      "fieldManager=other&force=true")
    assert code == 200 and obj["data"] == {"a": "2"}
    assert {e["manager"] for e in obj["metadata"]["managedFields"]} == {"other"}


def test_every_write_records_its_manager(raw):
    code, obj = raw.json("POST", f"{CM}?fieldManager=creator", {"metadata": {"name": "w"}, "data": {"a": "1"}})
    assert code == 201
    assert [(e["manager"], e["operation"], e["fieldsV1"]) for e in obj["metadata"]["managedFields"]] == [
        ("creator", "Update", {"f:data": {".": {}, "f:a": {}}})]
    code, data, _ = raw.request("PATCH", f"{CM}/w", b'{"data":{"b":"2"}}', content_type="application/merge-patch+json",
                                headers={"User-Agent": "kubectl-patch/v1.37.2 (linux/amd64)"})
    managers = {e["manager"]: e["fieldsV1"] for e in json.loads(data)["metadata"]["managedFields"]}
    assert managers["kubectl-patch"] == {"f:data": {"f:b": {}}}


def test_apply_needs_a_field_manager_and_refuses_force_elsewhere(raw):
    code, obj = apply(raw, "x", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "")
    assert code == 422 and obj["details"]["causes"][0]["field"] == "fieldManager"
    code, data, _ = raw.request("PATCH", f"{CM}/x?force=true", b"{}", content_type="application/merge-patch+json")
    assert code == 422 and b"may not be specified for non-apply patch" in data


def test_apply_checks_the_name(raw):
    # (not `y`: goyaml v2, which reads apply bodies upstream, takes y for the boolean true)
    code, obj = apply(raw, "x", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: z}\n")
    assert code == 400 and obj["message"] == "the name of the object (z) does not match the name on the URL (x)"
