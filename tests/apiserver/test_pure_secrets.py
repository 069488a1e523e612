"""Secrets as kube-apiserver v1.37.2 converts, defaults and validates them (``secretstrategy``), without HTTP.

Table-driven: each row is a create (or an update of a stored Secret) and what upstream answers — the stored
fields, or the 4xx's message (``pkg/apis/core/validation`` ``ValidateSecret``/``ValidateSecretUpdate``);
tests/conformance's kubectl battery compares them with the real kube-apiserver live.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mockgpu.control.apiserver.discovery import RESOURCES
from mockgpu.control.apiserver.handlers import ResourceAPI
from mockgpu.control.apiserver.status import StatusError

SECRET = RESOURCES["secrets"]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def api(resource_api):
    return resource_api


def create(api: ResourceAPI, body: dict[str, Any]) -> dict[str, Any] | str:
    try:
        return api.create(SECRET, "default", {"metadata": {"name": "s"}, **body})
    except StatusError as exc:
        return f"{exc.status['code']} {exc.status['message']}"


CREATED = [  # (case, body, stored fields)
    ("type defaults to Opaque", {"data": {"a": b64("x")}}, {"type": "Opaque", "data": {"a": b64("x")}}),
    ("stringData merged into data, overwriting, never stored", {"data": {"a": b64("x")}, "stringData": {"a": "y"}},
     {"data": {"a": b64("y")}}),
    ("a tls Secret with both keys", {"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}},
     {"type": "kubernetes.io/tls"}),
    ("basic-auth: a username is enough", {"type": "kubernetes.io/basic-auth", "stringData": {"username": "u"}},
     {"data": {"username": b64("u")}}),
    ("a well-formed docker config", {"type": "kubernetes.io/dockerconfigjson",
                                     "data": {".dockerconfigjson": b64('{"auths":{}}')}}, {}),
]


@pytest.mark.parametrize(("case", "body", "want"), CREATED, ids=[c[0] for c in CREATED])
def test_stored(api, case, body, want):
    got = create(api, body)
    assert isinstance(got, dict), got
    assert "stringData" not in got
    for key, value in want.items():
        assert got[key] == value


REFUSED = [  # (case, body, upstream's message)
    ("a bad key", {"data": {"a b": ""}},
     'Secret "s" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric '
     "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
     "'[-._a-zA-Z0-9]+')"),
    ("tls without its keys", {"type": "kubernetes.io/tls"},
     'Secret "s" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]'),
    ("a service account token without its account", {"type": "kubernetes.io/service-account-token"},
     'Secret "s" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value'),
    ("basic-auth without username or password", {"type": "kubernetes.io/basic-auth"},
     'Secret "s" is invalid: [data[username]: Required value, data[password]: Required value]'),
    ("ssh-auth with an empty key", {"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}},
     'Secret "s" is invalid: data[ssh-privatekey]: Required value'),
    ("a docker config that is not JSON", {"type": "kubernetes.io/dockerconfigjson",
                                          "data": {".dockerconfigjson": b64("x")}},
     'Secret "s" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid '
     "character 'x' looking for beginning of value"),
    ("a docker config that is a list", {"type": "kubernetes.io/dockerconfigjson",
                                        "data": {".dockerconfigjson": b64("[]")}},
     'Secret "s" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot '
     "unmarshal array into Go value of type map[string]interface {}"),
    ("over 1 MiB", {"data": {"a": b64("x" * (1024 * 1024 + 1))}},
     'Secret "s" is invalid: data: Too long: may not be more than 1048576 bytes'),
]


@pytest.mark.parametrize(("case", "body", "want"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(api, case, body, want):
    got = create(api, body)
    assert got == f"422 {want}"


UPDATES = [  # (case, stored, change, upstream's message or None when allowed)
    ("data of a mutable Secret", {"data": {"a": b64("x")}}, {"data": {"a": b64("y")}}, None),
    ("type is immutable", {}, {"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}},
     'Secret "s" is invalid: type: Invalid value: "kubernetes.io/tls": field is immutable'),
    ("data of an immutable Secret", {"immutable": True, "data": {"a": b64("x")}}, {"data": {"a": b64("y")}},
     'Secret "s" is invalid: data: Forbidden: field is immutable when `immutable` is set'),
    ("immutable cannot be unset", {"immutable": True}, {"immutable": False},
     'Secret "s" is invalid: immutable: Forbidden: field is immutable when `immutable` is set'),
    ("labels of an immutable Secret", {"immutable": True}, {"metadata": {"name": "s", "labels": {"a": "b"}}}, None),
]


@pytest.mark.parametrize(("case", "stored", "change", "want"), UPDATES, ids=[c[0] for c in UPDATES])
def test_update(api, case, stored, change, want):
    old = create(api, stored)
    assert isinstance(old, dict), old
    new = {**old, **change, "metadata": {**old["metadata"], **change.get("metadata", {})}}
    try:
        api.update(SECRET, "default", "s", new)
        got = None
    except StatusError as exc:
        got = exc.status["message"]
    assert got == want
