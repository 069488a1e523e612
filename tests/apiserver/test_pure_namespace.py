"""The Namespace strategy (``namespacestrategy``): what create, update, /status and /finalize keep and change, the
validation of each, and the storage's first DELETE (upstream ``pkg/registry/core/namespace``)."""

from __future__ import annotations

import pytest

from mockgpu.control.apiserver import namespacestrategy as nss
from mockgpu.control.apiserver.validation import default_and_validate

OLD = {"apiVersion": "v1", "kind": "Namespace",
       "metadata": {"name": "team", "resourceVersion": "5", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z"},
       "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


@pytest.mark.parametrize(("sent", "old", "sub", "finalizers", "phase"), [
    ({"metadata": {"name": "team"}}, None, "", ["kubernetes"], "Active"),
    ({"metadata": {"name": "team"}, "spec": {"finalizers": ["example.com/x"]}}, None, "",
     ["example.com/x", "kubernetes"], "Active"),
    ({"metadata": {"name": "team"}, "status": {"phase": "Terminating"}}, None, "", ["kubernetes"], "Active"),
    # a main-resource update keeps spec.finalizers and the status
    ({"metadata": {"name": "team"}, "spec": {"finalizers": []}, "status": {"phase": "Terminating"}}, OLD, "",
     ["kubernetes"], "Active"),
    # /finalize sets spec.finalizers only
    ({"metadata": {"name": "team"}, "spec": {"finalizers": []}, "status": {"phase": "Terminating"}}, OLD,
     "finalize", None, "Active"),
    ({"metadata": {"name": "team"}, "spec": {"finalizers": ["example.com/y"]}}, OLD, "finalize",
     ["example.com/y"], "Active"),
    # /status keeps the spec; an empty phase defaults to Active
    ({"metadata": {"name": "team"}, "spec": {}, "status": {}}, OLD, "status", ["kubernetes"], "Active"),
])
def test_prepare(sent, old, sub, finalizers, phase):
    out = nss.prepare_namespace(sent, old, sub)
    assert out["spec"].get("finalizers") == finalizers
    assert out["status"]["phase"] == phase
    assert out["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team"


@pytest.mark.parametrize(("finalizers", "indexed", "errors"), [
    (["kubernetes"], False, []),
    (["example.com/x"], True, []),
    (["bogus"], False, [("spec.finalizers", "name is neither a standard finalizer name nor is it fully qualified")]),
    (["ok.io/a", "bogus"], True,
     [("spec.finalizers[1]", "name is neither a standard finalizer name nor is it fully qualified")]),
])
def test_finalizer_validation(finalizers, indexed, errors):
    ns = {"spec": {"finalizers": finalizers}}
    errs = nss.validate_namespace_finalize(ns, OLD) if indexed else nss.validate_namespace(ns, None)
    assert [(e.field, e.detail) for e in errs] == errors


@pytest.mark.parametrize(("deleted", "phase", "detail"), [
    (False, "Active", None),
    (False, "Terminating", "may only be 'Active' if `deletionTimestamp` is empty"),
    (True, "Terminating", None),
    (True, "Active", "may only be 'Terminating' if `deletionTimestamp` is not empty"),
])
def test_status_phase_follows_deletion(deleted, phase, detail):
    meta = {"name": "team", **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleted else {})}
    errs = nss.validate_namespace_status({"metadata": meta, "status": {"phase": phase}}, OLD)
    assert [(e.field, e.detail) for e in errs] == ([("status.Phase", detail)] if detail else [])


@pytest.mark.parametrize(("finalizers", "policy", "expected"), [
    (None, None, None),
    (None, "Background", None),
    (None, "Orphan", ["orphan"]),
    (None, "Foreground", ["foregroundDeletion"]),
    (["example.com/x", "orphan"], None, ["example.com/x", "orphan"]),
    (["example.com/x", "orphan"], "Foreground", ["example.com/x", "foregroundDeletion"]),
    (["orphan"], "Background", None),
])
def test_first_delete_marks_terminating(finalizers, policy, expected):
    ns = {**OLD, "metadata": {**OLD["metadata"], **({"finalizers": finalizers} if finalizers else {})}}
    out = nss.mark_terminating(ns, "2026-02-02T00:00:00Z", policy)
    assert out["metadata"]["deletionTimestamp"] == "2026-02-02T00:00:00Z"
    assert out["status"]["phase"] == "Terminating"
    assert out["metadata"].get("finalizers") == expected
    assert out["spec"]["finalizers"] == ["kubernetes"] and nss.held(out)


def test_terminating_forbidden_is_upstreams_403():
    err = nss.terminating_forbidden("pods", "", "p", "team")
    assert err.code == 403
    assert err.status["message"] == ('pods "p" is forbidden: unable to create new content in namespace team because '
                                     "it is being terminated")
    assert err.status["details"]["causes"] == [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                                "message": "namespace team is being terminated"}]
    assert nss.terminating_forbidden("configmaps", "", "", "t").status["message"].startswith("configmaps is forbidden")


def test_finalize_update_through_the_record():
    terminating = nss.mark_terminating(OLD, "2026-02-02T00:00:00Z", None)
    out = default_and_validate("Namespace", {**terminating, "spec": {"finalizers": []}}, namespace=None,
                               old=terminating, subresource="finalize")
    assert "finalizers" not in out["spec"] and out["status"]["phase"] == "Terminating"
