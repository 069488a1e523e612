"""Namespaces over HTTP without a namespace controller: the two-phase DELETE, ``namespaces/<name>/finalize`` and
its validation, what an update may change, dry runs, and discovery of the subresource."""

from __future__ import annotations

import pytest

NS = "/api/v1/namespaces"
PENDING = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def _make(raw, name, **spec):
    code, ns = raw.json("POST", NS, {"metadata": {"name": name}, **({"spec": spec} if spec else {})})
    assert code == 201, ns
    return ns


def test_two_phase_delete_and_finalize(raw):
    ns = _make(raw, "two")
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}
    code, dry = raw.json("DELETE", f"{NS}/two?dryRun=All")
    assert code == 200 and dry["status"]["phase"] == "Terminating"
    assert raw.json("GET", f"{NS}/two")[1]["status"]["phase"] == "Active"  # a dry run writes nothing
    code, marked = raw.json("DELETE", f"{NS}/two", {"propagationPolicy": "Orphan"})
    assert code == 200 and marked["status"]["phase"] == "Terminating" and marked["metadata"]["finalizers"] == [
        "orphan"] and marked["metadata"]["deletionTimestamp"]
    code, again = raw.json("DELETE", f"{NS}/two")
    assert code == 200 and again == raw.json("GET", f"{NS}/two")[1]  # held by spec.finalizers: unchanged
    code, err = raw.json("POST", f"{NS}/two/pods", PENDING)
    assert code == 403 and err["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    # an update cannot drop spec.finalizers; /finalize can
    current = raw.json("GET", f"{NS}/two")[1]
    code, updated = raw.json("PUT", f"{NS}/two", {**current, "spec": {}})
    assert code == 200 and updated["spec"]["finalizers"] == ["kubernetes"]
    code, finalized = raw.json("PUT", f"{NS}/two/finalize", {**updated, "spec": {"finalizers": []}})
    assert code == 200 and "finalizers" not in finalized["spec"]
    assert raw.json("GET", f"{NS}/two")[0] == 200  # the orphan finalizer (the garbage collector's) still holds it
    code, out = raw.json("PUT", f"{NS}/two", {**finalized, "metadata": {**finalized["metadata"], "finalizers": []}})
    assert code == 200
    assert raw.json("GET", f"{NS}/two")[0] == 404


@pytest.mark.parametrize(("finalizers", "code", "message"), [
    (["bogus"], 422, 'Namespace "fin" is invalid: spec.finalizers[0]: Invalid value: "bogus": name is neither a '
                     "standard finalizer name nor is it fully qualified"),
    (["example.com/x", "kubernetes"], 200, None),
])
def test_finalize_validation(raw, finalizers, code, message):
    ns = _make(raw, "fin")
    got, out = raw.json("PUT", f"{NS}/fin/finalize", {**ns, "spec": {"finalizers": finalizers}})
    assert got == code
    if message:
        assert out["message"] == message
    else:
        assert out["spec"]["finalizers"] == finalizers


def test_finalize_is_update_only_and_listed(raw):
    _make(raw, "verbs")
    assert raw.json("GET", f"{NS}/verbs/finalize")[0] == 405
    resources = {r["name"]: r for r in raw.json("GET", "/api/v1")[1]["resources"]}
    assert resources["namespaces/finalize"]["verbs"] == ["update"]


def test_status_phase_must_follow_deletion(raw):
    ns = _make(raw, "phase")
    code, out = raw.json("PUT", f"{NS}/phase/status", {**ns, "status": {"phase": "Terminating"}})
    assert code == 422 and "may only be 'Active' if `deletionTimestamp` is empty" in out["message"]


def test_create_in_missing_namespace_is_404(raw):
    code, out = raw.json("POST", f"{NS}/nowhere/pods", PENDING)
    assert code == 404 and out["message"] == 'namespaces "nowhere" not found'
