"""ReplicationControllers and PodTemplates through their records: defaults (selector and labels from the template,
replicas 1, the template's pod defaults), validation and status validation, printing, the scale view and
discovery (upstream ``pkg/apis/core``, ``pkg/registry/core/{replicationcontroller,podtemplate}``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mockgpu.control.apiserver import discovery, workloads
from mockgpu.control.apiserver.registry.core import PODTEMPLATE, REPLICATIONCONTROLLER
from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.validation import default_and_validate, validate

TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def _rc(**spec):
    return {"metadata": {"name": "web"}, "spec": {"template": TEMPLATE, **spec}}


def test_defaults_from_the_template():
    rc = default_and_validate("ReplicationController", _rc(), namespace="default")
    assert rc["spec"]["selector"] == {"app": "web"} and rc["metadata"]["labels"] == {"app": "web"}
    assert rc["spec"]["replicas"] == 1 and rc["metadata"]["generation"] == 1 and rc["status"] == {"replicas": 0}
    pod = rc["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Always" and pod["dnsPolicy"] == "ClusterFirst"
    assert pod["containers"][0]["terminationMessagePolicy"] == "File"


def test_given_selector_and_labels_are_kept():
    body = _rc(selector={"app": "web"}, replicas=0)
    body["metadata"]["labels"] = {"team": "a"}
    rc = default_and_validate("ReplicationController", body, namespace="default")
    assert rc["metadata"]["labels"] == {"team": "a"} and rc["spec"]["replicas"] == 0


@pytest.mark.parametrize(("spec", "errors"), [
    ({"selector": {"app": "x"}}, [("spec.template.metadata.labels",
                                   '`selector` does not match template `labels`')]),
    ({"replicas": -1}, [("spec.replicas", "must be greater than or equal to 0")]),
    ({"minReadySeconds": -1}, [("spec.minReadySeconds", "must be greater than or equal to 0")]),
    ({"template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "OnFailure"}}},
     [("spec.template.spec.restartPolicy", 'supported values: "Always"')]),
    ({"template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "activeDeadlineSeconds": 5}}},
     [("spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in ReplicationController is not Supported")]),
    ({"template": None, "selector": {"app": "x"}}, [("spec.template", "")]),
    ({"template": None}, [("spec.selector", ""), ("spec.template", "")]),
])
def test_validation(spec, errors):
    with pytest.raises(StatusError) as exc:
        default_and_validate("ReplicationController", _rc(**spec), namespace="default")
    causes = exc.value.status["details"]["causes"]
    assert [c["field"] for c in causes] == [f for f, _ in errors]
    for cause, (_, text) in zip(causes, errors, strict=True):
        assert text in cause["message"]


@pytest.mark.parametrize(("status", "fields"), [
    ({"replicas": 2, "readyReplicas": 2, "availableReplicas": 1}, []),
    ({"replicas": 1, "readyReplicas": 2}, ["status.readyReplicas"]),
    ({"replicas": 2, "readyReplicas": 1, "availableReplicas": 2}, ["status.availableReplicas"]),
    # as upstream, the counts left at 0 are then "greater than" the negative replicas
    ({"replicas": -1}, ["status.replicas", "status.fullyLabeledReplicas", "status.readyReplicas",
                        "status.availableReplicas"]),
])
def test_status_validation(status, fields):
    old = default_and_validate("ReplicationController", _rc(), namespace="default")
    new = {**old, "status": status}
    assert [e.field for e in validate("ReplicationController", new, old, "status")] == fields


def test_generation_moves_with_the_spec():
    old = {**default_and_validate("ReplicationController", _rc(), namespace="default"), "status": {"replicas": 1}}
    same = default_and_validate("ReplicationController", old, namespace="default", old=old)
    assert same["metadata"]["generation"] == 1 and same["status"] == {"replicas": 1}
    scaled = default_and_validate("ReplicationController", {**old, "spec": {**old["spec"], "replicas": 3}},
                                  namespace="default", old=old)
    assert scaled["metadata"]["generation"] == 2


def test_scale_view_and_selector():
    rc = default_and_validate("ReplicationController", _rc(replicas=2), namespace="default")
    scale = workloads.to_scale(rc, REPLICATIONCONTROLLER.label_selector)
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 0, "selector": "app=web"}


NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(("record", "obj", "cells"), [
    (REPLICATIONCONTROLLER, {"metadata": {"name": "web"}, "spec": {"replicas": 3, "selector": {"b": "2", "a": "1"},
                                                                   "template": TEMPLATE},
                             "status": {"replicas": 2, "readyReplicas": 1}},
     ["web", 3, 2, 1, "<unknown>", "c", "i", "a=1,b=2"]),
    (REPLICATIONCONTROLLER, {"metadata": {"name": "bare"}, "spec": {}},
     ["bare", 0, 0, 0, "<unknown>", "", "", "<none>"]),
    (PODTEMPLATE, {"metadata": {"name": "t"}, "template": TEMPLATE}, ["t", "c", "i", "app=web"]),
    (PODTEMPLATE, {"metadata": {"name": "t"}, "template": {"spec": {"containers": [
        {"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}}, ["t", "a,b", "x,y", "<none>"]),
])
def test_printing(record, obj, cells):
    columns, row = record.printer
    assert row(obj, NOW)["cells"] == cells and len(columns) == len(cells)


@pytest.mark.parametrize(("body", "errors"), [
    ({"metadata": {"name": "t"}, "template": TEMPLATE}, []),
    ({"metadata": {"name": "t"}}, ["template.spec.containers"]),
    ({"metadata": {"name": "t"}, "template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}},
     []),
    ({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"bad key!": "x"}}, "spec": TEMPLATE["spec"]}},
     ["template.metadata.labels"]),
])
def test_podtemplate_validation(body, errors):
    try:
        out = default_and_validate("PodTemplate", body, namespace="default")
    except StatusError as exc:
        assert [c["field"] for c in exc.status["details"]["causes"]] == errors
        return
    assert errors == [] and out["metadata"]["generation"] == 1
    assert out["template"]["spec"]["restartPolicy"] in ("Always", "Never")


def test_discovery_lists_them_as_upstream():
    resources = {r["name"]: r for r in discovery.api_resource_list_v1()["resources"]}
    rc = resources["replicationcontrollers"]
    assert rc["shortNames"] == ["rc"] and rc["categories"] == ["all"] and rc["namespaced"]
    assert "deletecollection" in rc["verbs"]
    assert resources["replicationcontrollers/scale"]["group"] == "autoscaling"
    assert resources["replicationcontrollers/status"]["kind"] == "ReplicationController"
    assert "shortNames" not in resources["podtemplates"] and resources["podtemplates"]["kind"] == "PodTemplate"
