"""core/v1 Secrets over HTTP (secretstrategy.py): defaults, stringData, validation of each built-in type, updates
of an immutable Secret, printing and field selectors. Texts as kube-apiserver v1.37.2 words them (the conformance
suite's client battery compares a few with it)."""

from __future__ import annotations

import base64
import json

import pytest

SECRETS = "/api/v1/namespaces/default/secrets"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(name: str, **fields: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def test_defaults_and_string_data(raw):
    code, out = raw.json("POST", SECRETS, secret("s1", data={"a": b64("x"), "b": b64("old")},
                                                 stringData={"b": "new", "c": "ç"}))
    assert code == 201, out
    assert out["type"] == "Opaque" and "stringData" not in out
    assert out["data"] == {"a": b64("x"), "b": b64("new"), "c": b64("ç")}
    code, got = raw.json("GET", f"{SECRETS}/s1")
    assert code == 200 and got["data"] == out["data"] and "stringData" not in got


@pytest.mark.parametrize(("name", "body", "message"), [
    ("bad-key", {"data": {"a b": b64("x")}},
     'Secret "bad-key" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric '
     "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
     "'[-._a-zA-Z0-9]+')"),
    ("tls", {"type": "kubernetes.io/tls", "data": {"tls.crt": b64("c")}},
     'Secret "tls" is invalid: data[tls.key]: Required value'),
    ("basic", {"type": "kubernetes.io/basic-auth"},
     'Secret "basic" is invalid: [data[username]: Required value, data[password]: Required value]'),
    ("ssh", {"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}},
     'Secret "ssh" is invalid: data[ssh-privatekey]: Required value'),
    ("sa", {"type": "kubernetes.io/service-account-token"},
     'Secret "sa" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value'),
    ("docker", {"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64("[1]")}},
     'Secret "docker" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: '
     "cannot unmarshal array into Go value of type map[string]interface {}"),
    ("docker2", {"type": "kubernetes.io/dockercfg", "data": {".dockercfg": b64("")}},
     'Secret "docker2" is invalid: data[.dockercfg]: Invalid value: "<secret contents redacted>": unexpected end '
     "of JSON input"),
    ("big", {"data": {"a": b64("x" * (1024 * 1024)), "b": b64("y")}},
     'Secret "big" is invalid: data: Too long: may not be more than 1048576 bytes'),
])
def test_validation_as_upstream(raw, name, body, message):
    code, out = raw.json("POST", SECRETS, secret(name, **body))
    assert code == 422, out
    assert out["message"] == message


def test_valid_typed_secrets_are_stored(raw):
    for name, body in [("t", {"type": "kubernetes.io/tls", "stringData": {"tls.crt": "c", "tls.key": "k"}}),
                       ("u", {"type": "kubernetes.io/basic-auth", "stringData": {"password": ""}}),
                       ("d", {"type": "kubernetes.io/dockerconfigjson",
                              "stringData": {".dockerconfigjson": '{"auths": {}}'}}),
                       ("custom", {"type": "example.com/anything"})]:
        code, out = raw.json("POST", SECRETS, secret(name, **body))
        assert code == 201, out


def test_type_and_an_immutable_secret_cannot_change(raw):
    code, out = raw.json("POST", SECRETS, secret("frozen", immutable=True, stringData={"k": "v"}))
    assert code == 201, out
    out["data"] = {"k": b64("w")}
    out["type"] = "example.com/other"
    out["immutable"] = False
    code, err = raw.json("PUT", f"{SECRETS}/frozen", out)
    assert code == 422
    assert err["message"] == (
        'Secret "frozen" is invalid: [type: Invalid value: "example.com/other": field is immutable, immutable: '
        "Forbidden: field is immutable when `immutable` is set, data: Forbidden: field is immutable when "
        "`immutable` is set]")
    code, out = raw.json("GET", f"{SECRETS}/frozen")
    out["metadata"]["labels"] = {"a": "b"}  # metadata may change
    code, out = raw.json("PUT", f"{SECRETS}/frozen", out)
    assert code == 200, out


def test_printed_and_selected_by_type(raw):
    raw.json("POST", SECRETS, secret("p1", stringData={"a": "1", "b": "2"}))
    raw.json("POST", SECRETS, secret("p2", type="example.com/x"))
    code, body, _ = raw.request("GET", f"{SECRETS}?fieldSelector=type%3Dexample.com%2Fx",
                                headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    table = json.loads(body)
    assert code == 200 and [c["name"] for c in table["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert [r["cells"][:3] for r in table["rows"]] == [["p2", "example.com/x", 0]]
