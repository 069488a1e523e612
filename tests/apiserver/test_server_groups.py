"""The named groups over HTTP with the official client: Leases, events.k8s.io Events, SelfSubjectAccessReview."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from mockgpu.control.apiserver.coordination import node_lease
from mockgpu.control.apiserver.discovery import AGGREGATED_CONTENT_TYPE


@pytest.fixture
def coord(cluster):
    api = cluster.api_client()
    yield client.CoordinationV1Api(api)
    api.close()


@pytest.fixture
def events(cluster):
    api = cluster.api_client()
    yield client.EventsV1Api(api)
    api.close()


def _message(exc: pytest.ExceptionInfo) -> str:
    return json.loads(exc.value.body)["message"]


# ---- discovery --------------------------------------------------------------------------------------------------

def test_group_discovery_documents(raw):
    code, groups = raw.json("GET", "/apis")
    assert code == 200 and {g["name"] for g in groups["groups"]} >= {"coordination.k8s.io", "events.k8s.io"}
    code, group = raw.json("GET", "/apis/coordination.k8s.io")
    assert code == 200 and group["kind"] == "APIGroup" and group["preferredVersion"]["version"] == "v1"
    code, resources = raw.json("GET", "/apis/events.k8s.io/v1")
    assert code == 200 and [r["name"] for r in resources["resources"]] == ["events"]
    code, body, headers = raw.request("GET", "/apis", headers={"Accept": AGGREGATED_CONTENT_TYPE + ",application/json"})
    assert code == 200 and headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io")
    assert "coordination.k8s.io" in {i["metadata"]["name"] for i in json.loads(body)["items"]}


@pytest.mark.parametrize("path", ["/apis/policy", "/apis/policy/v1", "/apis/coordination.k8s.io/v2",
                                  "/apis/coordination.k8s.io/v1/namespaces/default/pods",
                                  "/apis/coordination.k8s.io/v2/namespaces/default/leases"],
                         ids=["group", "group-version", "version", "core-resource-in-group", "unserved-version"])
def test_unserved_group_paths_are_404(raw, path):
    code, status = raw.json("GET", path)
    assert code == 404 and status["reason"] == "NotFound"


# ---- leases -----------------------------------------------------------------------------------------------------

def test_lease_lifecycle(coord):
    ns = "kube-node-lease"
    # the official client re-serializes a datetime through isoformat(): with microsecond 0 the fraction that
    # MicroTime requires is dropped and the server refuses the body (as kube-apiserver does), hence 15:00:00.5
    created = coord.create_namespaced_lease(ns, node_lease("gpu-0", datetime(2026, 12, 2, 15, 0, 0, 500000, UTC)))
    assert created.spec.holder_identity == "gpu-0" and created.spec.lease_duration_seconds == 40
    assert created.metadata.uid and created.metadata.resource_version
    renewed = coord.patch_namespaced_lease("gpu-0", ns, {"spec": {"renewTime": "2026-12-02T15:00:10.000000Z"}})
    assert renewed.spec.renew_time == datetime(2026, 12, 2, 15, 0, 10, tzinfo=UTC)
    assert int(renewed.metadata.resource_version) > int(created.metadata.resource_version)
    stale = created
    stale.spec.holder_identity = "thief"
    stale.spec.renew_time = datetime(2026, 12, 2, 15, 0, 20, tzinfo=UTC)
    with pytest.raises(ApiException) as exc:  # whole seconds: see above; decoding fails before the conflict check
        coord.replace_namespaced_lease("gpu-0", ns, stale)
    assert exc.value.status == 400 and 'cannot parse "+00:00" as ".000000"' in _message(exc)
    stale.spec.renew_time = datetime(2026, 12, 2, 15, 0, 20, 1, tzinfo=UTC)
    with pytest.raises(ApiException) as exc:
        coord.replace_namespaced_lease("gpu-0", ns, stale)
    assert exc.value.status == 409 and "leases.coordination.k8s.io \"gpu-0\"" in _message(exc)
    assert [le.metadata.name for le in coord.list_lease_for_all_namespaces().items] == ["gpu-0"]
    coord.delete_namespaced_lease("gpu-0", ns)
    with pytest.raises(ApiException) as exc:
        coord.read_namespaced_lease("gpu-0", ns)
    assert exc.value.status == 404 and _message(exc) == 'leases.coordination.k8s.io "gpu-0" not found'


def test_invalid_lease_is_422_with_the_group_in_the_message(coord):
    body = node_lease("gpu-1")
    body["spec"]["leaseDurationSeconds"] = -5
    with pytest.raises(ApiException) as exc:
        coord.create_namespaced_lease("kube-node-lease", body)
    status = json.loads(exc.value.body)
    assert exc.value.status == 422 and status["details"]["group"] == "coordination.k8s.io"
    assert status["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.leaseDurationSeconds",
                                            "message": "Invalid value: -5: must be greater than 0"}]


def test_lease_watch_and_table(coord, raw):
    w = watch.Watch()
    seen = []
    coord.create_namespaced_lease("kube-node-lease", node_lease("gpu-2"))
    for ev in w.stream(coord.list_namespaced_lease, "kube-node-lease", timeout_seconds=2):
        seen.append((ev["type"], ev["object"].metadata.name, ev["object"].spec.holder_identity))
        w.stop()
    assert seen == [("ADDED", "gpu-2", "gpu-2")]
    code, table = raw.json("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                           headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert code == 200 and [c["name"] for c in table["columnDefinitions"]] == ["Name", "Holder", "Age"]
    assert table["rows"][0]["cells"][:2] == ["gpu-2", "gpu-2"]


# ---- events.k8s.io ----------------------------------------------------------------------------------------------

# microsecond 0 would be dropped by the official client (see test_lease_lifecycle), hence .000001
NEW_EVENT = {"metadata": {"name": "bound.1"}, "eventTime": "2026-12-02T15:00:00.000001Z",
             "reportingController": "default-scheduler", "reportingInstance": "default-scheduler-mockgpu",
             "action": "Binding", "reason": "Scheduled", "type": "Normal", "note": "Successfully assigned",
             "regarding": {"kind": "Pod", "name": "bound", "namespace": "default", "apiVersion": "v1"}}


def test_events_written_in_one_group_are_read_in_the_other(core, events, raw):
    events.create_namespaced_event("default", NEW_EVENT)
    as_core = core.read_namespaced_event("bound.1", "default")
    assert (as_core.involved_object.name, as_core.message, as_core.reporting_component) == \
        ("bound", "Successfully assigned", "default-scheduler")
    core.create_namespaced_event("default", {
        "metadata": {"name": "old.1"}, "involvedObject": {"kind": "Pod", "name": "old", "namespace": "default"},
        "reason": "Pulled", "message": "pulled", "source": {"component": "kubelet", "host": "gpu-0"}, "count": 2,
        "firstTimestamp": "2026-12-02T15:00:00Z", "type": "Normal"})
    # eventTime is null for an old-style event, as upstream serves it (the official client's EventsV1Event cannot
    # read that — a known client limitation — so this read is raw)
    code, as_new = raw.json("GET", "/apis/events.k8s.io/v1/namespaces/default/events/old.1")
    assert code == 200 and as_new["eventTime"] is None
    assert (as_new["regarding"]["name"], as_new["note"], as_new["deprecatedCount"],
            as_new["deprecatedSource"]["host"]) == ("old", "pulled", 2, "gpu-0")
    listed = events.list_namespaced_event("default", field_selector="regarding.name=bound,reason=Scheduled")
    assert [e.metadata.name for e in listed.items] == ["bound.1"]


def test_events_k8s_io_list_is_converted_on_the_wire(raw, events):
    events.create_namespaced_event("default", NEW_EVENT)
    code, body = raw.json("GET", "/apis/events.k8s.io/v1/namespaces/default/events")
    assert code == 200 and body["kind"] == "EventList" and body["apiVersion"] == "events.k8s.io/v1"
    item = body["items"][0]
    assert "involvedObject" not in item and item["regarding"]["name"] == "bound" and item["note"]
    code, status = raw.json("GET", "/apis/events.k8s.io/v1/events?fieldSelector=source%3Dkubelet")
    assert code == 400 and status["message"] == "field label not supported: source"


def test_new_style_event_needs_its_required_fields(events):
    with pytest.raises(ApiException) as exc:
        events.create_namespaced_event("default", {"metadata": {"name": "bare"}, "eventTime": NEW_EVENT["eventTime"],
                                                   "type": "Normal"})
    status = json.loads(exc.value.body)
    assert exc.value.status == 422 and status["details"]["group"] == "events.k8s.io"
    assert [c["field"] for c in status["details"]["causes"]] == ["reportingController", "reportingInstance",
                                                                 "action", "reason"]


def test_events_k8s_io_patch_and_watch(events):
    events.create_namespaced_event("default", NEW_EVENT)
    patched = events.patch_namespaced_event("bound.1", "default", {"series": {
        "count": 2, "lastObservedTime": "2026-12-02T15:00:05.500000Z"}})
    assert patched.note == "Successfully assigned" and patched.series.count == 2
    with pytest.raises(ApiException) as exc:  # a new-style event only grows its series
        events.patch_namespaced_event("bound.1", "default", {"note": "assigned again"})
    assert exc.value.status == 422 and _message(exc) == ('Event.events.k8s.io "bound.1" is invalid: message: Invalid '
                                                         'value: "assigned again": field is immutable')
    w = watch.Watch()
    for ev in w.stream(events.list_namespaced_event, "default", timeout_seconds=2):
        assert ev["object"].regarding.name == "bound" and ev["object"].series.count == 2
        w.stop()


def test_strict_unknown_field_in_events_k8s_io(raw):
    code, status = raw.json("POST", "/apis/events.k8s.io/v1/namespaces/default/events?fieldValidation=Strict",
                            {**NEW_EVENT, "message": "core name"})
    assert code == 400 and status["message"].endswith('strict decoding error: unknown field "message"')


# ---- SelfSubjectAccessReview ------------------------------------------------------------------------------------

def test_self_subject_access_review_allows_the_cluster_token(cluster):
    api = cluster.api_client()
    try:
        authz = client.AuthorizationV1Api(api)
        review = authz.create_self_subject_access_review({"spec": {"resourceAttributes": {
            "verb": "delete", "resource": "nodes"}}})
        assert review.status.allowed is True and review.spec.resource_attributes.resource == "nodes"
        with pytest.raises(ApiException) as exc:
            authz.create_self_subject_access_review({"spec": {}})
        assert exc.value.status == 422
    finally:
        api.close()


def test_self_subject_access_review_is_create_only(raw):
    code, status = raw.json("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
    assert code == 405 and status["message"] == ('list is not supported on resources of kind '
                                                 '"selfsubjectaccessreviews.authorization.k8s.io"')


def test_replace_through_events_k8s_io_keeps_the_core_view(raw, core):
    core.create_namespaced_event("default", {"metadata": {"name": "put.1"}, "message": "first", "reason": "R",
                                             "involvedObject": {"kind": "Pod", "name": "put"}})
    code, got = raw.json("GET", "/apis/events.k8s.io/v1/namespaces/default/events/put.1")
    assert code == 200 and got["eventTime"] is None
    code, status = raw.json("PUT", "/apis/events.k8s.io/v1/namespaces/default/events/put.1",
                            {**got, "note": "second"})
    assert code == 422 and status["details"]["causes"][0]["field"] == "message"
    code, put = raw.json("PUT", "/apis/events.k8s.io/v1/namespaces/default/events/put.1",
                         {**got, "metadata": {**got["metadata"], "labels": {"seen": "yes"}}})
    assert code == 200 and put["note"] == "first" and int(put["metadata"]["resourceVersion"]) > int(
        got["metadata"]["resourceVersion"])
    code, as_core = raw.json("GET", "/api/v1/namespaces/default/events/put.1")
    assert as_core["metadata"]["labels"] == {"seen": "yes"} and "eventTime" not in as_core and "note" not in as_core
    code, status = raw.json("PUT", "/apis/events.k8s.io/v1/namespaces/default/events/put.1", got)  # stale version
    assert code == 409 and status["message"].startswith('Operation cannot be fulfilled on events.events.k8s.io "put.1"')
