"""The e2e runner's pure parts (e2e_runner.py): the focus regex of a spec, reading ginkgo's JSON report and a crashed
process's log, and how a spec's two results count (judge). No cluster, no e2e.test."""

from __future__ import annotations

import json
import re

import pytest
from e2e_runner import KNOWN_OPEN, OUT_OF_SCOPE, OUT_OF_SCOPE_SPECS, Result, Spec, judge, parse_report

OPEN = "OPEN: "
TEXT = "[sig-api-machinery] ResourceQuota should be able to update and delete ResourceQuota. [Conformance]"


def test_focus_matches_the_spec_alone():
    spec = Spec(TEXT, "resource_quota")
    focus = re.compile(spec.focus)  # Python's re reads this subset of RE2 the same way
    assert focus.search("Kubernetes e2e suite " + TEXT)
    assert not focus.search("Kubernetes e2e suite " + TEXT.replace("update", "upgrade"))
    assert not focus.search("Kubernetes e2e suite x" + TEXT)
    assert "\\[Conformance\\]" in spec.focus and "\\ " not in spec.focus  # RE2 knows no escaped space


def _report(state: str, failure: dict | None = None, text: str = TEXT) -> list[dict]:
    containers, leaf = text.split(" should ", 1)
    return [{"SpecReports": [
        {"LeafNodeType": "SynchronizedBeforeSuite", "State": "passed", "LeafNodeText": ""},
        {"LeafNodeType": "It", "State": state, "ContainerHierarchyTexts": [containers],
         "LeafNodeText": "should " + leaf, "LeafNodeLocation": {"FileName": "x/resource_quota.go"},
         **({"Failure": failure} if failure else {})}]}]


@pytest.mark.parametrize(("report", "state", "failure"), [
    (_report("passed"), "passed", ""),
    (_report("failed", {"Message": "Unexpected error:\n    <*errors.StatusError>: the server could not find\nmore",
                        "Location": {"FileName": "a/resource_quota.go", "LineNumber": 42}}),
     "failed", "Unexpected error: <*errors.StatusError>: the server could not find (resource_quota.go:42)"),
    (_report("timedout", {"Message": "A suite timeout occurred", "Location": {"FileName": "b.go", "LineNumber": 1}}),
     "timedout", "A suite timeout occurred (b.go:1)"),
    ([{"SpecReports": [{"LeafNodeType": "SynchronizedBeforeSuite", "State": "failed", "Failure": {
        "Message": "there are currently no ready, schedulable nodes", "Location": {"FileName": "e2e.go",
                                                                                  "LineNumber": 9}}}]}],
     "error", "there are currently no ready, schedulable nodes (e2e.go:9)"),
])
def test_parse_report(tmp_path, report, state, failure):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    got = parse_report(Spec(TEXT, "resource_quota"), path, 1.0)
    assert (got.state, got.failure) == (state, failure)


def test_a_crash_names_the_specs_line(tmp_path):
    (tmp_path / "r.log").write_text("panic: boom\ngoroutine 1\nk8s.io/kubernetes@v1.37.2/test/e2e/apimachinery/"
                                    "chunking.go:68 +0x30a\n")
    got = parse_report(Spec(TEXT, "chunking"), tmp_path / "r.json", 2.0)
    assert got.state == "crashed" and got.failure.endswith("at chunking.go:68")


def _pair(name: str, group: str, up: str, emb: str) -> tuple[Result, Result]:
    spec = Spec(f"[sig-api-machinery] {name} [Conformance]", group)
    return Result(spec, up, "" if up == "passed" else "up: x", 1), Result(spec, emb, "" if emb == "passed" else
                                                                           "emb: y", 1)


def test_judge(monkeypatch):
    # the tables as they might be (they shrink as the embedded server catches up)
    listed, scoped, spec_scoped = "a listed spec", "a_group", "a spec out of scope"
    monkeypatch.setitem(KNOWN_OPEN, listed, "its cause")
    monkeypatch.setitem(OUT_OF_SCOPE, scoped, "its reason")
    monkeypatch.setitem(OUT_OF_SCOPE_SPECS, spec_scoped, "why")
    both = judge(*_pair("some spec", "watch", "passed", "passed"), OPEN)
    assert not both.reason and not both.open and not both.problem and not both.note
    regression = judge(*_pair("some spec", "watch", "passed", "failed"), OPEN)
    assert regression.problem.startswith("some spec: passes on upstream, failed on embedded") and regression.open
    known = judge(*_pair(listed, "x", "passed", "failed"), OPEN)
    assert known.open and not known.problem and known.reason == OPEN + KNOWN_OPEN[listed]
    assert judge(*_pair(listed, "x", "passed", "passed"), OPEN).problem.endswith("remove it from KNOWN_OPEN")
    out = judge(*_pair("any", scoped, "passed", "timedout"), OPEN)
    assert not out.open and not out.problem and out.reason == OUT_OF_SCOPE[scoped]
    assert not judge(*_pair(spec_scoped, "discovery", "passed", "failed"), OPEN).problem
    up_failed = judge(*_pair("some spec", "watch", "failed", "passed"), OPEN)
    assert up_failed.open and up_failed.reason == OPEN + "upstream did not pass" and not up_failed.problem
