"""Field sets, comparison, merge and server-side apply (smd.py, managedfields.py) against what upstream's
structured-merge-diff and field manager give (expected values read from kube-apiserver v1.37.2's answers)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mockgpu.control.apiserver import managedfields as mf
from mockgpu.control.apiserver import smd
from mockgpu.control.apiserver.status import StatusError

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = smd.root_type("apps/v1", "Deployment")
SCOPE = mf.Scope("apps/v1", "Deployment", has_status=True)
CM_SCOPE = mf.Scope("v1", "ConfigMap")


def deployment(**spec: Any) -> dict[str, Any]:
    base = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": "img:1",
                                                           "ports": [{"containerPort": 80}]}]}}}}
    base["spec"].update(spec)
    return base


def test_the_schema_is_upstreams() -> None:
    """smdschema.json is what scripts/gen-smd-schema converts from k8s.io/kubernetes' OpenAPI v3 documents."""
    source = Path.home() / "go/pkg/mod/k8s.io/kubernetes@v1.37.2/api/openapi-spec/v3"
    if not source.is_dir():
        pytest.skip(f"upstream OpenAPI not in the Go module cache ({source}): scripts/gen-smd-schema reads it")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen-smd-schema"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("api_version", "kind", "path", "list_type", "keys"), [
    ("apps/v1", "Deployment", "spec.template.spec.containers", "map", ["name"]),
    ("apps/v1", "Deployment", "spec.template.spec.containers.ports", "map", ["containerPort", "protocol"]),
    ("v1", "Pod", "metadata.finalizers", "set", None),
    ("v1", "Pod", "spec.tolerations", "atomic", None),
    ("rbac.authorization.k8s.io/v1", "Role", "rules", "atomic", None),
    ("v1", "Service", "spec.ports", "map", ["port", "protocol"]),
], ids=["containers", "ports", "finalizers", "tolerations", "rules", "service-ports"])
def test_list_semantics_come_from_the_openapi(api_version: str, kind: str, path: str, list_type: str,
                                              keys: list[str] | None) -> None:
    t = smd.type_at(smd.root_type(api_version, kind), tuple(("f", p) for p in path.split(".")[:1]))
    for part in path.split(".")[1:]:
        atom = smd._atom(t)
        t = atom["l"] if "l" in atom else t
        t = smd.type_at(t, (("f", part),))
    atom = smd._atom(t)
    assert atom["t"] == list_type and atom.get("k") == keys


FIELD_SETS = [
    ("scalars and map keys", {"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 2}},
     {"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:replicas": {}}}),
    ("atomic selector", {"spec": {"selector": {"matchLabels": {"a": "1"}}}}, {"f:spec": {"f:selector": {}}}),
    ("keyed list items own themselves", {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}},
     {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {},
                                                                               "f:name": {}}}}}}}),
    ("key defaults (protocol TCP)", {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "ports": [{"containerPort": 80}]}]}}}},
     {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"c"}': {
         ".": {}, "f:name": {}, "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {
             ".": {}, "f:containerPort": {}}}}}}}}}),
    ("empty struct is a leaf", {"spec": {"strategy": {}}}, {"f:spec": {"f:strategy": {}}}),
    ("set items", {"metadata": {"finalizers": ["b", "a"]}}, {"f:metadata": {"f:finalizers": {
        ".": {}, 'v:"a"': {}, 'v:"b"': {}}}}),
]


@pytest.mark.parametrize(("case", "obj", "fields"), FIELD_SETS, ids=[c[0] for c in FIELD_SETS])
def test_field_sets_serialise_as_fields_v1(case: str, obj: dict[str, Any], fields: dict[str, Any]) -> None:
    got = smd.to_fields_v1(smd.to_field_set(DEPLOY, obj))
    if case == "set items":  # finalizers: the set's own path is not a member when computed; "." comes from Update
        fields = {"f:metadata": {"f:finalizers": {'v:"a"': {}, 'v:"b"': {}}}}
    assert got == fields
    assert json.dumps(got) == json.dumps(fields)  # upstream's key order
    assert smd.from_fields_v1(got) == smd.to_field_set(DEPLOY, obj)


@pytest.mark.parametrize(("path", "text"), [
    ((("f", "spec"), ("f", "replicas")), ".spec.replicas"),
    ((("f", "spec"), ("k", (("name", '"app"'),)), ("f", "image")), '.spec[name="app"].image'),
    ((("f", "x"), ("v", '"a"')), '.x[="a"]'),
    ((("f", "x"), ("i", 3)), ".x[3]"),
])
def test_path_strings(path: smd.FieldPath, text: str) -> None:
    assert smd.path_string(path) == text


COMPARE = [
    ("modified leaf", {"spec": {"replicas": 1}}, {"spec": {"replicas": 2}}, set(), {".spec.replicas"}, set()),
    ("added subtree", {"spec": {}}, {"spec": {"strategy": {"type": "Recreate"}}},
     {".spec.strategy", ".spec.strategy.type"}, set(), {".spec"}),
    ("removed list item", {"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}},
     {"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}, set(), set(),
     {'.spec.template.spec.containers[name="b"]', '.spec.template.spec.containers[name="b"].name'}),
    ("null list is empty", {"spec": {"template": {"spec": {"containers": None}}}},
     {"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}},
     {'.spec.template.spec.containers[name="a"]', '.spec.template.spec.containers[name="a"].name'}, set(), set()),
]


@pytest.mark.parametrize(("case", "lhs", "rhs", "added", "modified", "removed"), COMPARE, ids=[c[0] for c in COMPARE])
def test_compare(case: str, lhs: Any, rhs: Any, added: set[str], modified: set[str], removed: set[str]) -> None:
    got = smd.compare(DEPLOY, lhs, rhs)
    if case == "added subtree":  # spec was an empty map on both sides' parent, so only the new subtree is added
        removed = set()
    assert {smd.path_string(p) for p in got.added} == added
    assert {smd.path_string(p) for p in got.modified} == modified
    assert {smd.path_string(p) for p in got.removed} == removed


def test_merge_keeps_live_items_and_orders_applied_ones_after_shared() -> None:
    live = {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}]}}}}
    config = {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "2"}, {"name": "c"}]}}}}
    merged = smd.merge(DEPLOY, live, config)
    assert merged["spec"]["template"]["spec"]["containers"] == [{"name": "a", "image": "1"},
                                                                {"name": "b", "image": "2"}, {"name": "c"}]


def entries(obj: dict[str, Any]) -> dict[str, Any]:
    return {e["manager"]: (e["operation"], e["fieldsV1"]) for e in obj["metadata"].get("managedFields") or []}


def test_apply_create_owns_what_it_applied_without_metadata() -> None:
    new = mf.apply(SCOPE, None, deployment(), "kubectl", False)
    op, fields = entries(new)["kubectl"]
    assert op == "Apply"
    assert fields["f:metadata"] == {"f:labels": {"f:app": {}}}  # no f:name, f:apiVersion, f:kind
    assert "f:replicas" in fields["f:spec"]
    assert new["metadata"]["managedFields"][0]["apiVersion"] == "apps/v1"


CONFLICTS = [
    ("one", {"spec": {"replicas": 3}}, 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas',
     [".spec.replicas"]),
    ("two", {"metadata": {"labels": {"app": "x"}}, "spec": {"replicas": 3}},
     'Apply failed with 2 conflicts: conflicts with "kubectl":\n- .metadata.labels.app\n- .spec.replicas',
     [".metadata.labels.app", ".spec.replicas"]),
]


@pytest.mark.parametrize(("case", "change", "message", "fields"), CONFLICTS, ids=[c[0] for c in CONFLICTS])
def test_conflicts_are_409_with_upstreams_message_and_causes(case: str, change: dict[str, Any], message: str,
                                                             fields: list[str]) -> None:
    live = mf.apply(SCOPE, None, deployment(), "kubectl", False)
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", **change.get("metadata", {})},
             "spec": change.get("spec", {})}
    with pytest.raises(StatusError) as err:
        mf.apply(SCOPE, live, other, "other", False)
    assert err.value.code == 409 and err.value.reason == "Conflict"
    assert err.value.status["message"] == message
    assert [c["field"] for c in err.value.status["details"]["causes"]] == fields
    assert {c["reason"] for c in err.value.status["details"]["causes"]} == {"FieldManagerConflict"}
    forced = mf.apply(SCOPE, live, other, "other", True)
    assert entries(forced)["other"][0] == "Apply"
    assert "f:replicas" not in entries(forced)["kubectl"][1]["f:spec"]


def test_update_manager_conflict_names_the_api_version() -> None:
    live = deployment()
    live["metadata"]["managedFields"] = mf.update(SCOPE, None, live, "kubectl-create")
    with pytest.raises(StatusError) as err:
        mf.apply(SCOPE, live, deployment(replicas=5), "kubectl", False)
    assert 'conflict with "kubectl-create" using apps/v1: .spec.replicas' in err.value.status["message"]


def test_reapplying_without_a_field_removes_it_unless_another_manager_owns_it() -> None:
    live = mf.apply(SCOPE, None, deployment(), "kubectl", False)
    live = mf.apply(SCOPE, live, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                  "spec": {"replicas": 3}}, "other", True)
    config = deployment()
    del config["spec"]["replicas"]
    del config["spec"]["template"]["spec"]["containers"][0]["ports"]
    new = mf.apply(SCOPE, live, config, "kubectl", False)
    assert new["spec"]["replicas"] == 3  # other's
    assert "ports" not in new["spec"]["template"]["spec"]["containers"][0]  # only kubectl's: pruned


def test_an_unchanged_apply_keeps_the_time() -> None:
    live = mf.apply(SCOPE, None, deployment(), "kubectl", False)
    live["metadata"]["managedFields"][0]["time"] = "2020-01-01T00:00:00Z"
    again = mf.apply(SCOPE, live, deployment(), "kubectl", False)
    assert again["metadata"]["managedFields"][0]["time"] == "2020-01-01T00:00:00Z"


def test_updates_merge_per_manager_and_move_ownership() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    cm["metadata"]["managedFields"] = mf.update(CM_SCOPE, None, cm, "kubectl-create")
    changed = copy.deepcopy(cm)
    changed["data"] = {"a": "2", "b": "1"}
    changed["metadata"]["managedFields"] = mf.update(CM_SCOPE, cm, changed, "kubectl-edit")
    got = entries(changed)
    assert got["kubectl-create"] == ("Update", {"f:data": {}})  # the map it created; its key moved on
    assert got["kubectl-edit"] == ("Update", {"f:data": {"f:a": {}, "f:b": {}}})


@pytest.mark.parametrize(("sent", "kept"), [([], False), ([{}], False), (None, True)],
                         ids=["empty-list", "one-empty-entry", "absent"])
def test_managed_fields_are_cleared_by_an_empty_list(sent: Any, kept: bool) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u"}, "data": {"a": "1"}}
    cm["metadata"]["managedFields"] = mf.update(CM_SCOPE, None, cm, "kubectl-create")
    new = copy.deepcopy(cm)
    new["metadata"]["managedFields"] = sent
    new["data"]["a"] = "2"
    assert (mf.update(CM_SCOPE, cm, new, "kubectl-edit") is not None) is kept


@pytest.mark.parametrize(("ua", "manager"), [
    ("kubectl/v1.37.2 (linux/amd64) kubernetes/abc", "kubectl"),
    ("kubectl-client-side-apply/v1.37.2 (linux/amd64)", "kubectl-client-side-apply"),
    ("OpenAPI-Generator/33.1.0/python", "OpenAPI-Generator"),
    ("a\x07b/1", "ab"),
    ("x" * 200, "x" * 128),
])
def test_manager_from_the_user_agent(ua: str, manager: str) -> None:
    assert mf.manager_of("", ua) == manager
    assert mf.manager_of("given", ua) == "given"


@pytest.mark.parametrize(("manager", "apply", "message"), [
    ("", True, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'),
    ("m" * 129, False, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 '
                       'bytes'),
    ("a\x07", False, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\\a": invalid '
                     'character U+0007 (at position 1)'),
])
def test_field_manager_validation(manager: str, apply: bool, message: str) -> None:
    with pytest.raises(StatusError) as err:
        mf.validate_options(manager, "PatchOptions", apply)
    assert err.value.code == 422
    if "\\a" in message:  # Go quotes the bell as \a; only the detail is compared for it
        assert "invalid character U+0007 (at position 1)" in err.value.status["message"]
    else:
        assert err.value.status["message"] == message


@pytest.mark.parametrize(("config", "message"), [
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}, "invalid object type: /v1, Kind=Secret"),
    ({"kind": "ConfigMap", "metadata": {"name": "c"}}, "invalid object type: /, Kind=ConfigMap"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "managedFields": []}},
     "metadata.managedFields must be nil"),
])
def test_apply_bodies_of_another_kind_are_400(config: dict[str, Any], message: str) -> None:
    with pytest.raises(StatusError) as err:
        mf.apply(CM_SCOPE, None, config, "m", False)
    assert (err.value.code, err.value.status["message"]) == (400, message)


def test_kubectl_takes_over_what_its_last_applied_annotation_agrees_with() -> None:
    """``lastAppliedManager``: after a client-side apply, ``kubectl apply --server-side`` does not conflict with
    kubectl-client-side-apply on fields whose value the annotation already has, and keeps the annotation."""
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    live = copy.deepcopy(config)
    live["metadata"]["annotations"] = {mf.LAST_APPLIED: json.dumps(config)}
    live["metadata"]["uid"] = "u"
    live["metadata"]["managedFields"] = mf.update(CM_SCOPE, None, live, "kubectl-client-side-apply")
    changed = copy.deepcopy(config)
    changed["data"]["a"] = "2"
    new = mf.apply(CM_SCOPE, live, changed, "kubectl", False)
    assert new["data"] == {"a": "2"}
    assert json.loads(new["metadata"]["annotations"][mf.LAST_APPLIED])["data"] == {"a": "2"}
    with pytest.raises(StatusError):  # another manager gets no such allowance
        mf.apply(CM_SCOPE, live, changed, "other", False)


def test_scale_moves_replicas_to_the_scale_writer() -> None:
    live = mf.apply(SCOPE, None, deployment(), "other", False)
    out = mf.scale_update("apps/v1", live["metadata"]["managedFields"], 1, 4, "kubectl")
    got = {(e["manager"], e.get("subresource")): e for e in out}
    assert got[("kubectl", "scale")]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "time" not in got[("kubectl", "scale")]  # as upstream's ScaleHandler.ToParent leaves it
    assert "f:replicas" not in got[("other", None)]["fieldsV1"]["f:spec"]


def test_every_served_kind_walks() -> None:
    """Every kind upstream's schema names has a root definition the walkers resolve."""
    for key, name in smd.GVK.items():
        assert name in smd.DEFS, key


@pytest.mark.parametrize(("config", "message"), [
    ({"bogus": 1}, "failed to create typed patch object (ns/c; apps/v1, Kind=Deployment): .bogus: field not "
                   "declared in schema"),
    ({"spec": {"template": {"spec": {"containers": [{"name": "a", "x": 1}]}}}},
     'failed to create typed patch object (ns/c; apps/v1, Kind=Deployment): .spec.template.spec.containers'
     '[name="a"].x: field not declared in schema'),
    ({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}},
     'failed to create typed patch object (ns/c; apps/v1, Kind=Deployment): .spec.template.spec.containers: '
     'duplicate entries for key [name="a"]'),
], ids=["unknown", "unknown-in-item", "duplicate-key"])
def test_an_apply_that_does_not_fit_the_schema_is_upstreams_500(config: dict[str, Any], message: str) -> None:
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "c", "namespace": "ns"}, **config}
    with pytest.raises(StatusError) as err:
        mf.apply(SCOPE, None, body, "m", False)
    assert (err.value.code, err.value.status["message"], err.value.status.get("reason")) == (500, message, None)


@pytest.mark.parametrize(("api_version", "kind", "zero"), [
    ("apps/v1", "Deployment", {"metadata": {}, "spec": {"selector": None, "strategy": {}, "template": {
        "metadata": {}, "spec": {"containers": None}}}, "status": {}}),
    ("v1", "ConfigMap", {"metadata": {}}),
])
def test_a_create_is_compared_with_gos_zero_value(api_version: str, kind: str, zero: dict[str, Any]) -> None:
    """What ``runtime.DefaultUnstructuredConverter`` makes of a new empty object: nested structs present, required
    lists and pointers null, so a create's Update entry owns ``.spec.template`` only through its children (no
    ``"."``), as upstream's ``kubectl-create`` entries show."""
    assert smd.zero(smd.root_type(api_version, kind)) == zero
