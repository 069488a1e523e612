"""Named API groups without a server: discovery documents, Lease validation and MicroTime, the events.k8s.io
conversion and field labels, SelfSubjectAccessReview."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mockgpu.control.apiserver import access, coordination, discovery, eventsv1, microtime
from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.tables import to_table
from mockgpu.control.apiserver.validation import default_and_validate


def _err(fn, *args, **kw) -> dict:
    with pytest.raises(StatusError) as exc:
        fn(*args, **kw)
    return exc.value.status


# ---- discovery --------------------------------------------------------------------------------------------------

def test_group_list_names_each_group_with_its_preferred_version():
    groups = {g["name"]: g for g in discovery.api_group_list()["groups"]}
    assert set(groups) == {"coordination.k8s.io", "events.k8s.io", "authorization.k8s.io", "authentication.k8s.io",
                           "apps", "batch", "rbac.authorization.k8s.io", "resource.k8s.io",
                           "flowcontrol.apiserver.k8s.io"}
    assert groups["coordination.k8s.io"]["preferredVersion"] == {"groupVersion": "coordination.k8s.io/v1",
                                                                 "version": "v1"}
    assert "kind" not in groups["coordination.k8s.io"]  # entries of APIGroupList carry no TypeMeta


def test_group_resource_list_and_unknown_group():
    doc = discovery.group_resource_list("coordination.k8s.io/v1")
    assert doc["groupVersion"] == "coordination.k8s.io/v1" and doc["apiVersion"] == "v1"
    assert doc["resources"] == [{"name": "leases", "singularName": "lease", "namespaced": True, "kind": "Lease",
                                 "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                           "watch"]}]
    assert discovery.group_resource_list("policy/v1") is None
    assert discovery.api_group("policy") is None
    assert discovery.api_group("events.k8s.io")["versions"] == [{"groupVersion": "events.k8s.io/v1",
                                                                  "version": "v1"}]


def test_aggregated_discovery_lists_groups_with_their_group_in_response_kind():
    items = {i["metadata"]["name"]: i for i in discovery.aggregated_group_discovery()["items"]}
    lease = items["coordination.k8s.io"]["versions"][0]["resources"][0]
    assert lease["responseKind"] == {"group": "coordination.k8s.io", "version": "v1", "kind": "Lease"}
    assert lease["scope"] == "Namespaced"
    events = items["events.k8s.io"]["versions"][0]["resources"][0]
    assert events["shortNames"] == ["ev"]  # as upstream: one storage, so both groups carry "ev"
    core = discovery.aggregated_core_discovery()["items"][0]["versions"][0]["resources"]
    assert "leases" not in [r["resource"] for r in core]


def test_namespace_cleanup_covers_leases_once_per_store_key():
    assert discovery.stored_plurals().count("events") == 1
    assert "leases" in discovery.stored_plurals() and "bindings" not in discovery.stored_plurals()


# ---- MicroTime and Lease validation -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("2026-12-02T15:00:00.123456Z", datetime(2026, 12, 2, 15, 0, 0, 123456, tzinfo=UTC)),
    ("2026-12-02T17:30:00.000001+02:30", datetime(2026, 12, 2, 15, 0, 0, 1, tzinfo=UTC)),
], ids=["utc", "offset"])
def test_micro_time_parses_rfc3339_with_six_digits(text, want):
    assert microtime.parse_micro_time(text) == want


@pytest.mark.parametrize(("text", "message"), [
    ("2026-12-02T15:00:00Z", 'cannot parse "Z" as ".000000"'),
    ("2026-12-02T15:00:00.123Z", 'cannot parse ".123Z" as ".000000"'),
    ("yesterday", 'cannot parse "yesterday" as "2006"'),
    ("2026-13-02T15:00:00.000000Z", "month out of range"),
    ("2026-12-02T15:00:00.000000Zjunk", 'extra text: "junk"'),
], ids=["no-fraction", "millis", "words", "month", "trailing"])
def test_micro_time_refuses_what_go_refuses(text, message):
    with pytest.raises(microtime.MicroTimeError, match=message.replace(".", r"\.").replace("(", r"\(")):
        microtime.parse_micro_time(text)


def _lease(**spec) -> dict:
    return {"metadata": {"name": "gpu-0"}, "spec": spec}


def test_lease_defaults_its_group_and_stores_micro_times_in_utc():
    out = default_and_validate("Lease", _lease(holderIdentity="gpu-0", leaseDurationSeconds=40,
                                               renewTime="2026-12-02T17:00:00.500000+02:00"),
                               namespace="kube-node-lease")
    assert out["apiVersion"] == "coordination.k8s.io/v1" and out["metadata"]["namespace"] == "kube-node-lease"
    assert out["spec"]["renewTime"] == "2026-12-02T15:00:00.500000Z"


@pytest.mark.parametrize(("spec", "code", "message"), [
    ({"leaseDurationSeconds": 0}, 422, 'Lease.coordination.k8s.io "gpu-0" is invalid: spec.leaseDurationSeconds: '
                                       "Invalid value: 0: must be greater than 0"),
    ({"leaseTransitions": -1}, 422, "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"),
    ({"preferredHolder": "a"}, 422, "spec.preferredHolder: Forbidden: may only be specified if `strategy` is "
                                    "defined"),
    ({"leaseDurationSeconds": 2**31}, 400, "json: cannot unmarshal number 2147483648 into Go struct field "
                                           "LeaseSpec.spec.leaseDurationSeconds of type int32"),
    ({"holderIdentity": 5}, 400, "json: cannot unmarshal number into Go struct field LeaseSpec.spec.holderIdentity "
                                 "of type string"),
    ({"renewTime": "2026-12-02T15:00:00Z"}, 400, 'Lease in version "v1" cannot be handled as a Lease: parsing time '
                                                 '"2026-12-02T15:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": '
                                                 'cannot parse "Z" as ".000000"'),
], ids=["zero-duration", "negative-transitions", "holder-without-strategy", "int32-overflow", "holder-type",
        "renew-time-without-micros"])
def test_lease_refusals_as_upstream(spec, code, message):
    status = _err(default_and_validate, "Lease", _lease(**spec), namespace="kube-node-lease")
    assert status["code"] == code and message in status["message"]


def test_lease_of_another_group_or_kind_is_refused():
    status = _err(default_and_validate, "Lease", {**_lease(), "apiVersion": "v1"}, namespace="ns")
    assert status["message"] == ('Lease in version "v1" cannot be handled as a Lease: no kind "Lease" is registered '
                                 'for version "v1" in scheme "pkg/api/legacyscheme/scheme.go:30"')


def test_lease_table_has_name_holder_age():
    lease = {"metadata": {"name": "gpu-0", "creationTimestamp": "2026-12-02T15:00:00Z"},
             "spec": {"holderIdentity": "gpu-0"}}
    table = to_table("leases", [lease, {"metadata": {"name": "free"}, "spec": {}}],
                     now=datetime(2026, 12, 2, 15, 5, tzinfo=UTC))
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Holder", "Age"]
    assert [r["cells"] for r in table["rows"]] == [["gpu-0", "gpu-0", "5m"], ["free", "", "<unknown>"]]


def test_node_lease_contract():
    lease = coordination.node_lease("gpu-1", datetime(2026, 1, 1, tzinfo=UTC), node_uid="u1")
    assert lease["metadata"] == {"name": "gpu-1", "namespace": "kube-node-lease", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "gpu-1", "uid": "u1"}]}
    assert lease["spec"] == {"holderIdentity": "gpu-1", "leaseDurationSeconds": 40,
                             "renewTime": "2026-01-01T00:00:00.000000Z"}
    default_and_validate("Lease", lease, namespace="kube-node-lease")  # valid as built


# ---- events.k8s.io ----------------------------------------------------------------------------------------------

CORE_EVENT = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "p.1", "namespace": "default"},
              "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "FailedScheduling",
              "message": "0/4 nodes are available", "source": {"component": "default-scheduler"},
              "firstTimestamp": "2026-12-02T15:00:00Z", "lastTimestamp": "2026-12-02T15:01:00Z", "count": 3,
              "type": "Warning", "reportingComponent": "default-scheduler", "reportingInstance": "sched-1"}


def test_core_event_as_events_k8s_io():
    out = eventsv1.from_core(CORE_EVENT)
    assert out == {"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": CORE_EVENT["metadata"],
                   "eventTime": None, "reportingInstance": "sched-1", "reason": "FailedScheduling",
                   "type": "Warning", "regarding": CORE_EVENT["involvedObject"], "note": "0/4 nodes are available",
                   "reportingController": "default-scheduler", "deprecatedSource": {"component": "default-scheduler"},
                   "deprecatedFirstTimestamp": "2026-12-02T15:00:00Z",
                   "deprecatedLastTimestamp": "2026-12-02T15:01:00Z", "deprecatedCount": 3}


def test_conversion_round_trips():
    assert eventsv1.to_core(eventsv1.from_core(CORE_EVENT)) == CORE_EVENT  # a null eventTime stays absent


def test_events_body_of_another_kind_is_refused():
    status = _err(eventsv1.to_core, {"apiVersion": "v1", "kind": "Event"})
    assert status["code"] == 400 and 'no kind "Event" is registered for version "v1"' in status["message"]


NEW_EVENT = {"eventTime": "2026-12-02T15:00:00.000000Z", "reportingController": "mockgpu.io/kubelet",
             "reportingInstance": "gpu-0", "action": "Binding", "reason": "Scheduled", "type": "Normal"}


@pytest.mark.parametrize(("change", "want"), [
    ({}, []),
    ({"eventTime": None}, ["eventTime: Required value"]),
    ({"type": "Info"}, ['type: Invalid value: "": has invalid value: Info']),
    ({"deprecatedCount": 2}, ['deprecatedCount: Invalid value: "": needs to be unset']),
    ({"reportingController": "", "action": ""}, ["reportingController: Required value", "action: Required value"]),
    ({"reason": "r" * 129}, ['reason: Invalid value: "": can have at most 128 characters']),
    ({"note": "n" * 1025}, ['note: Invalid value: "": can have at most 1024 characters']),
], ids=["valid", "no-event-time", "bad-type", "deprecated-count", "no-controller-no-action", "long-reason",
        "long-note"])
def test_new_style_event_validation(change, want):
    assert [str(e) for e in eventsv1.validate_create({**NEW_EVENT, **change})] == want


@pytest.mark.parametrize(("given", "want"), [
    ("regarding.name=p,reason=FailedScheduling", "involvedObject.name=p,reason=FailedScheduling"),
    ("reportingController!=kubelet", "reportingComponent!=kubelet"),
    ("regarding.kind==Pod,type=Warning", "involvedObject.kind=Pod,type=Warning"),
    ("", ""),
], ids=["regarding-reason", "not-equal", "double-equals", "empty"])
def test_events_field_labels_map_to_core(given, want):
    assert eventsv1.translate_field_selector(given) == want


@pytest.mark.parametrize("label", ["involvedObject.name", "source", "message"])
def test_events_field_labels_this_group_lacks(label):
    status = _err(eventsv1.translate_field_selector, f"{label}=x")
    assert status["code"] == 400 and status["message"] == f"field label not supported: {label}"


# ---- SelfSubjectAccessReview ------------------------------------------------------------------------------------

def test_review_is_allowed_and_echoes_the_spec():
    spec = {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}}
    out = access.review({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": spec})
    assert out["spec"] == spec and out["status"]["allowed"] is True and "system:masters" in out["status"]["reason"]


@pytest.mark.parametrize(("spec", "message"), [
    ({}, "spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes "
         "must be specified"),
    ({"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x"}},
     "spec.nonResourceAttributes: Invalid value: "),
], ids=["neither", "both"])
def test_review_needs_exactly_one_attribute_set(spec, message):
    status = _err(access.review, {"spec": spec})
    assert status["code"] == 422 and message in status["message"]


# ---- OpenAPI v3 per group-version ---------------------------------------------------------------------------------

def test_openapi_root_lists_a_document_per_group_version():
    from mockgpu.control.apiserver import openapi

    paths = openapi.openapi_v3_root()["paths"]
    assert set(paths) == {"api/v1", "apis/coordination.k8s.io/v1", "apis/events.k8s.io/v1", "apis/apps/v1",
                          "apis/batch/v1", "apis/rbac.authorization.k8s.io/v1", "apis/resource.k8s.io/v1",
                          "apis/flowcontrol.apiserver.k8s.io/v1"}
    assert paths["apis/coordination.k8s.io/v1"]["serverRelativeURL"].startswith(
        "/openapi/v3/apis/coordination.k8s.io/v1?hash=")


def test_openapi_group_document_has_its_kind_with_group_and_no_core_kinds():
    from mockgpu.control.apiserver import openapi

    doc = openapi.openapi_v3_document("coordination.k8s.io/v1")
    schemas = doc["components"]["schemas"]
    assert schemas["io.k8s.api.coordination.v1.Lease"]["x-kubernetes-group-version-kind"] == [
        {"group": "coordination.k8s.io", "kind": "Lease", "version": "v1"}]
    assert "io.k8s.api.coordination.v1.LeaseSpec" in schemas and "io.k8s.api.core.v1.Pod" not in schemas
    ops = doc["paths"]["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"]
    assert set(ops) == {"get", "patch"} and ops["patch"]["parameters"][0]["name"] == "fieldValidation"
    events = openapi.openapi_v3_document("events.k8s.io/v1")["components"]["schemas"]
    assert "regarding" in events["io.k8s.api.events.v1.Event"]["properties"]
    core = openapi.openapi_v3_core()
    assert set(core["paths"]["/api/v1/namespaces/{namespace}/services/{name}"]) == {"get", "patch"}  # as pods


def test_rules_review_and_whoami():
    rules = access.answer("SelfSubjectRulesReview", {"spec": {"namespace": "default"}})
    assert rules["status"] == {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                               "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": False}
    who = access.answer("SelfSubjectReview", {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert who["status"]["userInfo"] == {"username": "mockgpu-admin",
                                         "groups": ["system:masters", "system:authenticated"]}
    status = _err(access.answer, "SelfSubjectReview", {"apiVersion": "authentication.k8s.io/v1beta1"})
    assert status["code"] == 400 and 'no kind "SelfSubjectReview" is registered for version ' in status["message"]


@pytest.mark.parametrize(("event", "want"), [
    ({"eventTime": "2026-12-02T17:00:00.000001+02:00"}, {"eventTime": "2026-12-02T15:00:00.000001Z"}),
    ({"series": {"count": 2, "lastObservedTime": "2026-12-02T15:00:00.250000-01:00"}},
     {"series": {"count": 2, "lastObservedTime": "2026-12-02T16:00:00.250000Z"}}),
    ({"firstTimestamp": "2026-12-02T15:00:00Z"}, {"firstTimestamp": "2026-12-02T15:00:00Z"}),
], ids=["event-time", "series", "legacy-time-untouched"])
def test_core_event_micro_times_are_stored_in_utc(event, want):
    out = default_and_validate("Event", {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod"}, **event},
                               namespace="default")
    assert {k: out[k] for k in want} == want


def test_core_event_with_a_second_precision_event_time_is_refused():
    status = _err(default_and_validate, "Event", {"metadata": {"name": "e"}, "eventTime": "2026-12-02T15:00:00Z"},
                  namespace="default")
    assert status["message"] == ('Event in version "v1" cannot be handled as a Event: parsing time '
                                 '"2026-12-02T15:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as '
                                 '".000000"')


@pytest.mark.parametrize(("change", "fields"), [
    ({"series": {"count": 2, "lastObservedTime": "2026-12-02T15:00:01.000000Z"}}, []),
    ({"metadata": {"name": "p.1", "namespace": "default", "labels": {"a": "b"}}}, []),
    ({"message": "other"}, ["message"]),
    ({"reportingComponent": "kubelet", "count": 4}, ["count", "reportingController"]),
    ({"involvedObject": {"kind": "Pod", "name": "q", "namespace": "default"}}, ["involvedObject"]),
], ids=["series", "labels", "message", "controller-and-count", "regarding"])
def test_events_k8s_io_update_may_only_change_series_and_metadata(change, fields):
    errs = eventsv1.validate_update({**CORE_EVENT, **change}, CORE_EVENT)
    assert [e.field for e in errs] == fields
    assert all(e.detail == "field is immutable" for e in errs)
