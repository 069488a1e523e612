"""ListOptions decoded and validated as kube-apiserver v1.37 does (``listoptions``), without HTTP.

Expected codes and messages are upstream's (``ValidateListOptions``, the parameter codec's ``strconv.ParseInt``
errors); ``tests/conformance/test_hostile.py`` sends the same kinds of query to both servers."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
from multidict import MultiDict

from mockgpu.control.apiserver import listoptions
from mockgpu.control.apiserver.status import StatusError

LIST_CASES = [  # (case, query, watch, expected: None (valid), or (code, message))
    ("empty list", "", False, None),
    ("limit", "limit=5", False, None),
    ("limit signed", "limit=%2B5", False, None),
    ("limit negative is no limit", "limit=-1", False, None),
    ("limit first value counts", "limit=1&limit=abc", False, None),
    ("limit not a number", "limit=abc", False, (400, 'strconv.ParseInt: parsing "abc": invalid syntax')),
    ("limit float", "limit=1.5", False, (400, 'strconv.ParseInt: parsing "1.5": invalid syntax')),
    ("limit empty", "limit=", False, (400, 'strconv.ParseInt: parsing "": invalid syntax')),
    ("limit spaces", "limit=%201", False, (400, 'strconv.ParseInt: parsing " 1": invalid syntax')),
    ("limit overflow", "limit=99999999999999999999", False,
     (400, 'strconv.ParseInt: parsing "99999999999999999999": value out of range')),
    ("timeout before limit", "limit=x&timeoutSeconds=y", False, (400, 'strconv.ParseInt: parsing "y": invalid syntax')),
    ("match with rv", "resourceVersion=1&resourceVersionMatch=NotOlderThan", False, None),
    ("exact", "resourceVersion=5&resourceVersionMatch=Exact", False, None),
    ("match without rv", "resourceVersionMatch=NotOlderThan", False,
     (422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is '
           "forbidden unless resourceVersion is provided")),
    ("match bogus", "resourceVersion=1&resourceVersionMatch=Bogus", False,
     (422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Bogus": supported '
           'values: "Exact", "NotOlderThan", ""')),
    ("exact at 0", "resourceVersion=0&resourceVersionMatch=Exact", False,
     (422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" '
           'is forbidden for resourceVersion "0"')),
    ("match with continue", "resourceVersion=1&resourceVersionMatch=Exact&continue=x", False,
     (422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is '
           "forbidden when continue is provided")),
    ("two errors joined", "resourceVersionMatch=Bogus", False,
     (422, 'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is '
           'forbidden unless resourceVersion is provided, resourceVersionMatch: Unsupported value: "Bogus": '
           'supported values: "Exact", "NotOlderThan", ""]')),
    ("initial events on a list", "sendInitialEvents=false", False,
     (422, 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden '
           "for list")),
    ("plain watch", "", True, None),
    ("watch from a version", "resourceVersion=7", True, None),
    ("watch list", "sendInitialEvents=true&resourceVersionMatch=NotOlderThan", True, None),
    ("watch initial events without match", "sendInitialEvents=true", True,
     (422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires '
           "setting resourceVersionMatch to NotOlderThan")),
    ("watch match without initial events", "resourceVersion=3&resourceVersionMatch=NotOlderThan", True,
     (422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is '
           "forbidden for watch unless sendInitialEvents is provided")),
    ("watch exact", "sendInitialEvents=true&resourceVersionMatch=Exact", True,
     (422, 'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires '
           'setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "Exact": '
           'supported values: "NotOlderThan"]')),
    ("watch timeout not a number", "timeoutSeconds=abc", True,
     (400, 'strconv.ParseInt: parsing "abc": invalid syntax')),
]


def _query(text: str) -> MultiDict:
    return MultiDict(parse_qsl(text, keep_blank_values=True))


@pytest.mark.parametrize("query,watch,expected", [c[1:] for c in LIST_CASES], ids=[c[0] for c in LIST_CASES])
def test_list_options_as_upstream(query, watch, expected):
    if expected is None:
        listoptions.decode(_query(query), watch)
        return
    with pytest.raises(StatusError) as err:
        listoptions.decode(_query(query), watch)
    code, message = expected
    assert (err.value.code, err.value.status["message"]) == (code, message)
    assert err.value.status["reason"] == ("BadRequest" if code == 400 else "Invalid")


@pytest.mark.parametrize("value,expected", [(None, False), ("", True), ("true", True), ("bogus", True), ("1", True),
                                            ("0", False), ("false", False), ("FALSE", False), ("f", True)])
def test_go_bool_is_false_only_for_absent_0_and_false(value, expected):
    assert listoptions.go_bool(value) is expected


def test_values_decoded():
    o = listoptions.decode(_query("limit=3&timeoutSeconds=9&allowWatchBookmarks=yes&sendInitialEvents=0"
                                  "&resourceVersionMatch=NotOlderThan"), True)
    assert (o.limit, o.timeout_seconds, o.allow_bookmarks, o.send_initial_events) == (3, 9, True, False)
