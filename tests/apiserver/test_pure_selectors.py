"""Label and field selectors: grammar, matching and upstream error texts."""

from __future__ import annotations

import pytest

from mockgpu.control.apiserver.selectors import parse_field_selector, parse_label_selector
from mockgpu.control.apiserver.status import StatusError

LABELS = {"app": "train", "tier": "gpu", "gen": "5"}

MATCH_CASES = [
    ("", True), ("app=train", True), ("app==train", True), ("app!=train", False), ("app!=serve", True),
    ("missing!=x", True), ("app in (train,serve)", True), ("app in (serve)", False), ("app notin (serve)", True),
    ("missing notin (x)", True), ("tier", True), ("missing", False), ("!missing", True), ("!tier", False),
    ("app=train,tier=gpu", True), ("app=train,tier=cpu", False), ("gen>4", True), ("gen<4", False),
    ("app in (train), !missing, tier notin (cpu)", True), ("  app = train  ", True), ("app=", False),
]


@pytest.mark.parametrize(("text", "expected"), MATCH_CASES, ids=[c[0] or "empty" for c in MATCH_CASES])
def test_label_selector_matches(text, expected):
    assert parse_label_selector(text).matches(LABELS) is expected


ERROR_CASES = [
    ("a in", "unable to parse requirement: found '' expected: '('"),
    ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a=b,", "found '', expected: identifier after ','"),
    (",a", "found ',', expected: !, identifier, or 'end of string'"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("-a=b", "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of alphanumeric "
             "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
             "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("a>x", "unable to parse requirement: <nil>: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be "
            "an integer"),
]


@pytest.mark.parametrize(("text", "message"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_label_selector_errors_are_400_with_upstream_text(text, message):
    with pytest.raises(StatusError) as info:
        parse_label_selector(text)
    assert info.value.code == 400 and info.value.status["message"] == message


POD = {"metadata": {"name": "p", "namespace": "ml"}, "spec": {"nodeName": "gpu-1", "schedulerName": "default-scheduler",
                                                             "restartPolicy": "Never"},
       "status": {"phase": "Running", "podIP": "10.0.0.5"}}
EVENT = {"metadata": {"name": "p.1", "namespace": "ml"}, "reason": "FailedScheduling", "type": "Warning",
         "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ml"},
         "source": {"component": "default-scheduler"},
         "reportingComponent": "default-scheduler"}
FIELD_CASES = [
    ("pods", POD, "spec.nodeName=gpu-1", True), ("pods", POD, "spec.nodeName==gpu-2", False),
    ("pods", POD, "spec.nodeName!=gpu-2", True), ("pods", POD, "spec.nodeName=", False),
    ("pods", POD, "status.phase=Running,metadata.namespace=ml", True), ("pods", POD, "status.podIP=10.0.0.5", True),
    ("pods", POD, "status.nominatedNodeName=", True), ("pods", POD, "spec.restartPolicy=Never", True),
    ("Pod", POD, "metadata.name=p", True),
    ("pods", POD, "=", True), ("configmaps", {"metadata": {"name": "c"}}, "=,metadata.name=c", True),
    ("events", EVENT, "involvedObject.name=p,involvedObject.kind=Pod", True),
    ("events", EVENT, "reason=FailedScheduling,type=Warning", True),
    ("events", EVENT, "source=default-scheduler", True),
    ("events", EVENT, "reportingComponent=kubelet", False),
    ("nodes", {"metadata": {"name": "n"}, "spec": {}}, "spec.unschedulable=false", True),
    ("nodes", {"metadata": {"name": "n"}, "spec": {"unschedulable": True}}, "spec.unschedulable!=true", False),
]


@pytest.mark.parametrize(("resource", "obj", "text", "expected"), FIELD_CASES,
                         ids=[f"{c[0]}:{c[2]}" for c in FIELD_CASES])
def test_field_selector_matches(resource, obj, text, expected):
    assert parse_field_selector(text, resource).matches(obj) is expected


@pytest.mark.parametrize(("resource", "text", "message"), [
    ("pods", "foo=bar", "field label not supported: foo"),
    ("nodes", "spec.nodeName=x", "field label not supported: spec.nodeName"),
    ("configmaps", "data.x=1", "field label not supported: data.x"),
    ("pods", "spec.nodeName", "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"),
    ("configmaps", "metadata.name!===", "invalid field selector: unescaped character in value: 61"),
    ("configmaps", "metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
    ("pods", "spec.nodeName=x!=y", "invalid field selector: unescaped character in value: 61"),
    ("pods", "spec.nodeName=a\\", "invalid field selector: invalid escape sequence: \\"),
    ("pods", "spec.nodeName=a\\q", "invalid field selector: invalid escape sequence: \\q"),
    ("pods", "zz=1,spec.nodeName=a=b", "invalid field selector: unescaped character in value: 61"),  # sorted first
    ("pods", "=x", "field label not supported: "),
], ids=["unknown", "node-has-no-nodeName", "configmap", "no-operator", "bare-equals-after-not-equal",
        "bare-equals-in-value", "first-operator-wins", "trailing-backslash", "unknown-escape", "terms-sorted",
        "empty-label"])
def test_field_selector_errors(resource, text, message):
    with pytest.raises(StatusError) as info:
        parse_field_selector(text, resource)
    assert info.value.code == 400 and info.value.status["message"] == message


def test_field_selector_escapes_and_value_of():
    sel = parse_field_selector(r"metadata.name=a\,b,spec.nodeName=gpu-0", "pods")
    assert sel.value_of("spec.nodeName") == "gpu-0"
    assert sel.matches({"metadata": {"name": "a,b"}, "spec": {"nodeName": "gpu-0"}})
