"""Issue 17's hostile-input answers, one row each, against the pure modules: media types and Accept as
upstream negotiates them, bodies as Go decodes them (BOM, invalid UTF-8, null, YAML's first document and
unknown tags), ``[]byte`` fields as standard base64, and JSON patches as evanphx/json-patch v4 applies them.
The same requests sent to both control planes are in ``tests/conformance/test_hostile.py``."""

from __future__ import annotations

import pytest

from mockgpu.control.apiserver import limits, request
from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.fieldvalidation import base64_error_at
from mockgpu.control.apiserver.patch import json_patch


@pytest.mark.parametrize(("header", "media"), [
    ("application/json", "application/json"),
    ("Application/JSON", "application/json"),
    ("application/json;", "application/json"),  # one trailing semicolon: Go ignores it
    ("application/json; charset=utf-8", "application/json"),
    ('application/json ; charset="a b" ;', "application/json"),
    ("application/json;;;", None),  # ErrInvalidMediaParameter: upstream 415
    ("application/json;x", None),
    ("application/json;=x", None),
    ("json", None),
    ("/json", None),
])
def test_media_type_as_go_parses_it(header, media):
    assert request.media_type(header) == media


def test_malformed_content_type_is_415():
    with pytest.raises(st.StatusError) as exc:
        request.decode_body(b"{}", "application/json;;;")
    assert exc.value.status["code"] == 415


@pytest.mark.parametrize(("accept", "ok"), [
    ("", True),
    ("*/*", True),
    ("application/*", True),
    ("application/json", True),
    ("application/yaml", True),
    ("application/vnd.kubernetes.protobuf, */*", True),
    ("application/json;stream=watch", True),
    ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
     "application/json", True),  # kubectl get
    ("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", True),
    ("text/html,application/xhtml+xml,*/*;q=0.8", True),  # a browser
    ("text/html", False),
    ("application/xml", False),
    ("application/json;as=Bogus;g=meta.k8s.io;v=v1", False),
    ("application/json;as=Table;g=example.com;v=v1", False),
    ("application/json;stream=bogus", False),
    ("*/*;q=0", False),
])
def test_accept_negotiation(accept, ok):
    if ok:
        request.check_accept(accept)
    else:
        with pytest.raises(st.StatusError) as exc:
            request.check_accept(accept)
        assert exc.value.status["code"] == 406 and exc.value.status["reason"] == "NotAcceptable"


def test_json_bodies_as_go_decodes_them():
    # invalid UTF-8 inside a string becomes U+FFFD (encoding/json), not a 400
    assert request.decode_body(b'{"data":{"k":"\xff\xfe"}}', "application/json") == {"data": {"k": "\ufffd\ufffd"}}
    # a byte-order mark is not JSON
    with pytest.raises(st.StatusError) as exc:
        request.decode_body(b'\xef\xbb\xbf{"kind":"ConfigMap"}', "application/json", "ConfigMap")
    assert exc.value.status["code"] == 400 and "invalid character 'ï'" in exc.value.status["message"]
    assert request.decode_body(b"null", "application/json", "ConfigMap") is None  # the app reads it as {}


@pytest.mark.parametrize(("text", "value"), [
    ("apiVersion: v1\nkind: ConfigMap\n---\na: 1\n", {"apiVersion": "v1", "kind": "ConfigMap"}),
    ("metadata: {name: !!python/name:os.system NAME}\n", {"metadata": {"name": "NAME"}}),
    ("a: !foo {b: [1, !bar x]}\n", {"a": {"b": [1, "x"]}}),
    ("a: !!binary aGk=\n", {"a": "hi"}),  # goyaml: the decoded bytes as a string
    ("", None),
    ("---\n---\na: 1\n", None),
])
def test_yaml_first_document_unknown_tags_ignored(text, value):
    assert limits.load_yaml(text) == value


@pytest.mark.parametrize(("text", "at"), [
    ("", None), ("eA==", None), ("eHk=", None), ("eHl6", None), ("eA\n==", None), ("abcd\r\nefgh", None),
    ("x", 0),        # a quantum cut short: where it began
    ("eHl6eA", 4),
    ("e!==", 1),     # outside the alphabet: where it stands
    ("a===", 1),     # '=' may not close a quantum of one
    ("eA=", 3),      # not enough padding: at the end
    ("ab=c", 2),     # wrong padding: at its first '='
    ("eA==x", 4),    # trailing garbage
])
def test_base64_as_go_std_encoding(text, at):
    assert base64_error_at(text) == at


CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}}}


@pytest.mark.parametrize(("ops", "code"), [
    ([None], 422),                                                   # an empty operation: kind "unknown"
    ([{"path": "/metadata/labels/x", "value": "y"}], 422),           # op missing
    ([{"op": "frob", "path": "/metadata/labels/x", "value": "y"}], 422),
    ([{"op": 1, "path": "/x"}], 400),                                # op of the wrong type: a decode error
    ([1], 400),
    ([{"op": "copy", "from": "/nope/deeper", "path": "/metadata/labels/x"}], 422),  # no parent: does not apply
])
def test_json_patch_errors(ops, code):
    with pytest.raises(st.StatusError) as exc:
        json_patch(CM, ops)
    assert exc.value.status["code"] == code


def test_json_patch_copy_from_a_missing_key_adds_null():
    out = json_patch(CM, [{"op": "copy", "from": "/nope", "path": "/metadata/labels/x"}])
    assert out["metadata"]["labels"] == {"a": "1", "x": None}
