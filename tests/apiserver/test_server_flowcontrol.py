"""flowcontrol.apiserver.k8s.io/v1 over HTTP (apiserver/flowcontrol.py): upstream's bootstrap objects, defaults,
validation, the mandatory objects' fixed specs and kubectl's order. The conformance suite's client battery compares
the messages with kube-apiserver."""

from __future__ import annotations

import json

import pytest

BASE = "/apis/flowcontrol.apiserver.k8s.io/v1"
RULE = {"subjects": [{"kind": "User", "user": {"name": "u"}}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}


def test_bootstrap_objects_in_kubectls_order(raw):
    code, body, _ = raw.request("GET", f"{BASE}/flowschemas",
                                headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    table = json.loads(body)
    assert code == 200
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"]
    rows = [r["cells"][:4] for r in table["rows"]]
    assert rows[0] == ["exempt", "exempt", 1, "<none>"] and rows[-1] == ["catch-all", "catch-all", 10000, "ByUser"]
    assert [r[2] for r in rows] == sorted(r[2] for r in rows) and len(rows) == 11
    code, levels = raw.json("GET", f"{BASE}/prioritylevelconfigurations")
    assert sorted(i["metadata"]["name"] for i in levels["items"]) == [
        "catch-all", "exempt", "global-default", "leader-election", "node-high", "system", "workload-high",
        "workload-low"]


def test_defaults(raw):
    code, fs = raw.json("POST", f"{BASE}/flowschemas", {
        "metadata": {"name": "mine"}, "spec": {"priorityLevelConfiguration": {"name": "global-default"},
                                               "rules": [RULE]}})
    assert code == 201 and fs["spec"]["matchingPrecedence"] == 1000
    code, pl = raw.json("POST", f"{BASE}/prioritylevelconfigurations", {
        "metadata": {"name": "mine"}, "spec": {"type": "Limited", "limited": {
            "limitResponse": {"type": "Queue", "queuing": {}}}}})
    assert code == 201 and pl["spec"]["limited"] == {
        "nominalConcurrencyShares": 30, "lendablePercent": 0,
        "limitResponse": {"type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}}


@pytest.mark.parametrize(("plural", "body", "message"), [
    ("flowschemas", {"metadata": {"name": "one"}, "spec": {"matchingPrecedence": 1, "rules": [RULE],
                                                          "priorityLevelConfiguration": {"name": "x"}}},
     'FlowSchema.flowcontrol.apiserver.k8s.io "one" is invalid: spec.matchingPrecedence: Invalid value: 1: only the '
     "schema named 'exempt' may have matchingPrecedence 1"),
    ("prioritylevelconfigurations", {"metadata": {"name": "q"}, "spec": {"type": "Limited", "limited": {
        "limitResponse": {"type": "Queue", "queuing": {"queues": 100000, "handSize": 10}}}}},
     'PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io "q" is invalid: spec.limited.limitResponse.queuing.'
     "handSize: Invalid value: 10: required entropy bits of deckSize 100000 and handSize 10 should not be greater "
     "than 60"),
    ("prioritylevelconfigurations", {"metadata": {"name": "e"}, "spec": {"type": "Exempt", "limited": {}}},
     'PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io "e" is invalid: [spec.type: Invalid value: "Exempt": '
     "must be 'Exempt' if and only if `name` is 'exempt', spec.limited: Forbidden]"),
])
def test_validation(raw, plural, body, message):
    code, out = raw.json("POST", f"{BASE}/{plural}", body)
    assert code == 422 and out["message"] == message


def test_mandatory_specs_are_fixed(raw):
    code, body = raw.request("PATCH", f"{BASE}/flowschemas/catch-all", b'{"spec": {"matchingPrecedence": 9000}}',
                             content_type="application/merge-patch+json")[:2]
    message = json.loads(body)["message"]
    assert code == 422 and message.endswith("spec of 'catch-all' must equal the fixed value")
    # upstream prints the internal Go struct's JSON (untagged field names, nil as null)
    assert 'spec: Invalid value: {"PriorityLevelConfiguration":{"Name":"catch-all"},"MatchingPrecedence":9000,' \
        '"DistinguisherMethod":{"Type":"ByUser"},"Rules":[{"Subjects":[{"Kind":"Group","User":null,' in message
    code, _, _ = raw.request("PATCH", f"{BASE}/flowschemas/probes", b'{"spec": {"matchingPrecedence": 3}}',
                             content_type="application/merge-patch+json")
    assert code == 200  # a suggested object may change
