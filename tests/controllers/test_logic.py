"""The controllers' pure decisions: naming, rolling-update arithmetic, pod order, conditions, Job counts, and the
apps/batch tables and selectors they rely on (no cluster)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mockgpu.apimachinery import selectors
from mockgpu.control.apiserver import tables
from mockgpu.control.controllers import logic
from mockgpu.control.controllers.deployment import deployment_complete, deployment_progressing
from mockgpu.control.controllers.job import backoff_delay, still_running, want_active

TEMPLATE = {"metadata": {"labels": {"app": "d1"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


# ---- naming -----------------------------------------------------------------------------------------------------

def test_safe_encode_uses_upstreams_alphabet_without_vowels():
    # apimachinery's SafeEncodeString maps each character by its code point into "bcdfghjklmnpqrstvwxz2456789"
    assert logic.safe_encode("0123456789") == "456789bcdf"  # ord("0") = 48, 48 % 27 = 21, the 22nd letter


def test_template_hash_is_stable_short_and_vowel_free():
    h = logic.template_hash(TEMPLATE)
    assert h == logic.template_hash({**TEMPLATE})
    assert 1 <= len(h) <= 10 and set(h) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_template_hash_changes_with_the_template_and_the_collision_count():
    restarted = {**TEMPLATE, "metadata": {**TEMPLATE["metadata"],
                                          "annotations": {"kubectl.kubernetes.io/restartedAt": "now"}}}
    assert logic.template_hash(restarted) != logic.template_hash(TEMPLATE)
    assert logic.template_hash(TEMPLATE, 1) != logic.template_hash(TEMPLATE)


def test_nulls_do_not_change_the_hash_or_equality():
    # kubectl sends template.metadata.creationTimestamp: null; an RS template read back may not carry it
    with_null = {"metadata": {"labels": {"app": "d1"}, "creationTimestamp": None}, "spec": TEMPLATE["spec"]}
    assert logic.template_hash(with_null) == logic.template_hash(TEMPLATE)
    rs_template = {"metadata": {"labels": {"app": "d1", logic.POD_TEMPLATE_HASH: "abc"}}, "spec": TEMPLATE["spec"]}
    assert logic.equal_ignore_hash(rs_template, with_null)
    assert not logic.equal_ignore_hash(rs_template, {**TEMPLATE, "spec": {"containers": [{"name": "c",
                                                                                          "image": "y"}]}})


def test_pod_from_template_is_owned_and_named_by_the_owner():
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
             "metadata": {"name": "d1-abc", "namespace": "ns1", "uid": "u1"}}
    pod = logic.pod_from_template(TEMPLATE, owner, "d1-abc", (logic.JOB_TRACKING_FINALIZER,))
    assert pod["metadata"] == {"generateName": "d1-abc-", "namespace": "ns1", "labels": {"app": "d1"},
                               "finalizers": [logic.JOB_TRACKING_FINALIZER],
                               "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "d1-abc",
                                                    "uid": "u1", "controller": True, "blockOwnerDeletion": True}]}
    assert pod["spec"] == TEMPLATE["spec"] and pod["spec"] is not TEMPLATE["spec"]


OWNER = {"metadata": {"name": "rs", "namespace": "ns", "uid": "me"}}


@pytest.mark.parametrize(("refs", "matches", "deleting", "decision"), [
    ([], True, False, "adopt"),
    ([], False, False, "ignore"),
    ([], True, True, "ignore"),                                     # never adopt what is being deleted
    ([{"uid": "me", "controller": True}], True, False, "keep"),
    ([{"uid": "me", "controller": True}], False, False, "release"),  # labels changed: let it go
    ([{"uid": "other", "controller": True}], True, False, "ignore"),  # another controller's
    ([{"uid": "other"}], True, False, "adopt"),                     # a non-controller owner does not prevent it
])
def test_claim_decision(refs, matches, deleting, decision):
    meta = {"name": "p", "namespace": "ns", "ownerReferences": refs}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert logic.claim_decision({"metadata": meta}, OWNER, matches) == decision


# ---- rolling update arithmetic --------------------------------------------------------------------------------

@pytest.mark.parametrize(("surge", "unavailable", "desired", "expected"), [
    ("25%", "25%", 4, (1, 1)),
    ("25%", "25%", 3, (1, 0)),      # surge rounds up, unavailability down
    ("25%", "25%", 1, (1, 0)),
    (0, 0, 3, (0, 1)),              # never both zero
    ("0%", "0%", 10, (0, 1)),
    (2, "50%", 5, (2, 2)),
    (None, None, 10, (3, 2)),       # absent: the 25% defaults
    ("100%", 0, 3, (3, 0)),
])
def test_fenceposts(surge, unavailable, desired, expected):
    assert logic.fenceposts(surge, unavailable, desired) == expected


@pytest.mark.parametrize(("desired", "surge", "all_replicas", "new", "expected"), [
    (3, 1, 3, 0, 1),   # first step of a rollout: one surge pod
    (3, 1, 4, 1, 1),   # at the surge ceiling: wait for old pods to go
    (3, 1, 2, 1, 3),   # old pods gone: room up to the surge ceiling, capped at desired
    (3, 0, 2, 0, 1),   # no surge: only what the old ReplicaSets gave up
    (2, 1, 0, 0, 2),   # a new Deployment: never more than desired
    (5, 5, 5, 0, 5),
])
def test_new_rs_replicas(desired, surge, all_replicas, new, expected):
    assert logic.new_rs_replicas(desired, surge, all_replicas, new) == expected


def _deploy(replicas: int, strategy: dict) -> dict:
    return {"spec": {"replicas": replicas, "strategy": strategy}}


def test_max_surge_and_unavailable_of_a_deployment():
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    assert (logic.max_surge(_deploy(4, rolling)), logic.max_unavailable(_deploy(4, rolling))) == (1, 1)
    assert (logic.max_surge(_deploy(4, {"type": "Recreate"})), logic.max_unavailable(_deploy(4, {"type": "Recreate"}))
            ) == (0, 0)
    assert logic.max_unavailable(_deploy(0, rolling)) == 0


# ---- pods -------------------------------------------------------------------------------------------------------

def _pod(name: str, *, node: str = "", phase: str = "Running", ready: bool = False,
         created: str = "2026-01-01T00:00:00Z", restarts: int = 0, deleting: bool = False) -> dict:
    meta = {"name": name, "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = created
    return {"metadata": meta, "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                       "containerStatuses": [{"restartCount": restarts}]}}


def test_deletion_order_prefers_unscheduled_pending_unready_restarting_and_newer_pods():
    pods = [
        _pod("ready-old", node="n", ready=True, created="2026-01-01T00:00:00Z"),
        _pod("ready-new", node="n", ready=True, created="2026-01-02T00:00:00Z"),
        _pod("unready", node="n"),
        _pod("crashy", node="n", restarts=5),
        _pod("pending", node="n", phase="Pending"),
        _pod("unscheduled", phase="Pending"),
    ]
    assert [p["metadata"]["name"] for p in logic.deletion_order(pods)] == [
        "unscheduled", "pending", "crashy", "unready", "ready-new", "ready-old"]


@pytest.mark.parametrize(("pod", "active", "ready", "available_after_10s"), [
    (_pod("a", node="n", ready=True), True, True, True),
    (_pod("b", node="n"), True, False, False),
    (_pod("c", node="n", phase="Succeeded"), False, False, False),
    (_pod("d", node="n", ready=True, deleting=True), False, True, True),
])
def test_pod_predicates(pod, active, ready, available_after_10s):
    t0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert logic.pod_active(pod) is active
    assert logic.pod_ready(pod) is ready
    assert logic.pod_available(pod, 10, t0 + 10) is available_after_10s
    assert logic.pod_available(pod, 10, t0 + 5) is False  # not ready long enough yet


# ---- conditions -------------------------------------------------------------------------------------------------

def test_set_condition_keeps_an_unchanged_condition_and_its_transition_time():
    status: dict = {}
    logic.set_condition(status, {"type": "Available", "status": "True", "reason": "A", "lastTransitionTime": "t1"})
    logic.set_condition(status, {"type": "Progressing", "status": "True", "reason": "P", "lastTransitionTime": "t1"})
    before = [dict(c) for c in status["conditions"]]
    logic.set_condition(status, {"type": "Available", "status": "True", "reason": "A", "lastTransitionTime": "t2"})
    assert status["conditions"] == before  # same status and reason: nothing changes
    logic.set_condition(status, {"type": "Available", "status": "True", "reason": "B", "lastTransitionTime": "t3"})
    assert status["conditions"][-1] == {"type": "Available", "status": "True", "reason": "B",
                                        "lastTransitionTime": "t1"}  # same status: transition time kept, moved last
    logic.set_condition(status, {"type": "Available", "status": "False", "reason": "C", "lastTransitionTime": "t4"})
    assert status["conditions"][-1]["lastTransitionTime"] == "t4"
    logic.remove_condition(status, "Available")
    logic.remove_condition(status, "Progressing")
    assert "conditions" not in status


def test_deployment_complete_and_progressing():
    d = {"metadata": {"generation": 2}, "spec": {"replicas": 3}}
    done = {"updatedReplicas": 3, "replicas": 3, "availableReplicas": 3, "observedGeneration": 2}
    assert deployment_complete(d, done)
    assert not deployment_complete(d, {**done, "observedGeneration": 1})
    assert not deployment_complete(d, {**done, "replicas": 4})  # old pods still counted
    assert deployment_progressing({"updatedReplicas": 1, "replicas": 4}, {"updatedReplicas": 2, "replicas": 4})
    assert deployment_progressing({"updatedReplicas": 1, "replicas": 4}, {"updatedReplicas": 1, "replicas": 3})
    assert not deployment_progressing(done, done)


# ---- jobs -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "succeeded", "expected"), [
    ({"parallelism": 1, "completions": 1}, 0, 1),
    ({"parallelism": 3, "completions": 5}, 0, 3),
    ({"parallelism": 3, "completions": 5}, 3, 2),   # never more than the completions still missing
    ({"parallelism": 3, "completions": 5}, 5, 0),
    ({"parallelism": 2}, 0, 2),                      # work queue: parallelism until one succeeds
    ({"parallelism": 2}, 1, 0),
    ({"parallelism": 0, "completions": 4}, 0, 0),
])
def test_want_active(spec, succeeded, expected):
    assert want_active(spec, succeeded) == expected


@pytest.mark.parametrize(("failures", "delay"), [(0, 0.0), (1, 10.0), (2, 20.0), (3, 40.0), (10, 360.0)])
def test_backoff_delay_doubles_up_to_six_minutes(failures, delay):
    assert backoff_delay(failures, 10.0) == delay


def test_still_running_counts_pods_a_kubelet_is_stopping():
    assert still_running(_pod("a", node="n"))
    assert not still_running(_pod("b", node="n", phase="Failed"))
    stopping = _pod("c", node="n", deleting=True)
    stopping["metadata"]["deletionGracePeriodSeconds"] = 30
    assert still_running(stopping)
    stopping["metadata"]["deletionGracePeriodSeconds"] = 0  # the kubelet's final delete: nothing runs it
    assert not still_running(stopping)
    assert not still_running(_pod("d", phase="Pending", deleting=True))  # never bound


# ---- selectors and tables ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("selector", "labels", "matches"), [
    (None, {"a": "1"}, False),                       # a nil selector matches nothing
    ({}, {"a": "1"}, True),                          # an empty one everything
    ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"}, True),
])
def test_selector_matches(selector, labels, matches):
    assert selectors.selector_matches(selector, labels) is matches


def test_selector_string_sorts_by_key_like_labels_selector_string():
    sel = {"matchLabels": {"tier": "web", "app": "d1"},
           "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                {"key": "gone", "operator": "DoesNotExist"}]}
    assert selectors.selector_string(sel) == "app=d1,env in (dev,prod),!gone,tier=web"


NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


@pytest.mark.parametrize(("conditions", "deleting", "text"), [
    ([], False, "Running"),
    ([{"type": "Complete", "status": "True"}, {"type": "SuccessCriteriaMet", "status": "True"}], False, "Complete"),
    ([{"type": "Failed", "status": "True"}], True, "Failed"),
    ([], True, "Terminating"),
    ([{"type": "Suspended", "status": "True"}], False, "Suspended"),
    ([{"type": "FailureTarget", "status": "True"}], False, "FailureTarget"),
    ([{"type": "SuccessCriteriaMet", "status": "True"}], False, "SuccessCriteriaMet"),
    ([{"type": "Suspended", "status": "False"}], False, "Running"),
])
def test_job_status_column(conditions, deleting, text):
    job = {"metadata": {"name": "j"}, "status": {"conditions": conditions}}
    if deleting:
        job["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert tables.job_status_text(job) == text


@pytest.mark.parametrize(("spec", "status", "completions", "duration"), [
    ({"completions": 3, "parallelism": 1}, {"succeeded": 1, "startTime": "2026-01-01T00:09:30Z"}, "1/3", "30s"),
    ({"parallelism": 4}, {"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:02:05Z"},
     "0/1 of 4", "2m5s"),
    ({"parallelism": 1}, {}, "0/1", ""),
])
def test_job_table_row(spec, status, completions, duration):
    job = {"metadata": {"name": "j", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {**spec, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                    "template": TEMPLATE}, "status": status}
    table = tables.to_table("jobs", [job], now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Status", "Completions", "Duration", "Age",
                                                               "Containers", "Images", "Selector"]
    assert table["rows"][0]["cells"] == ["j", "Running", completions, duration, "10m", "c", "x",
                                         "batch.kubernetes.io/controller-uid=u"]


def test_deployment_and_replicaset_table_rows():
    d = {"metadata": {"name": "d1", "creationTimestamp": "2026-01-01T00:00:00Z"},
         "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d1"}}, "template": TEMPLATE},
         "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    table = tables.to_table("deployments", [d], now=NOW)
    assert [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0] == [
        "Name", "Ready", "Up-to-date", "Available", "Age"]
    assert table["rows"][0]["cells"] == ["d1", "2/3", 3, 2, "10m", "c", "x", "app=d1"]
    rs = {**d, "metadata": {**d["metadata"], "name": "d1-abc"}, "status": {"replicas": 3, "readyReplicas": 1}}
    table = tables.to_table("replicasets", [rs], now=NOW)
    assert [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0] == [
        "Name", "Desired", "Current", "Ready", "Age"]
    assert table["rows"][0]["cells"] == ["d1-abc", 3, 3, 1, "10m", "c", "x", "app=d1"]


# ---- pod failure policy -----------------------------------------------------------------------------------------

def _failed(exit_codes: dict[str, int], conditions: tuple[str, ...] = ()) -> dict:
    return {"metadata": {"name": "j-abcde", "namespace": "ns"},
            "status": {"phase": "Failed",
                       "conditions": [{"type": c, "status": "True"} for c in conditions],
                       "containerStatuses": [{"name": n, "state": {"terminated": {"exitCode": code}}}
                                             for n, code in exit_codes.items()]}}


POLICY = {"rules": [
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
    {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
    {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
]}


@pytest.mark.parametrize(("pod", "expected"), [
    (_failed({"main": 42}), ("FailJob", "Container main for pod ns/j-abcde failed with exit code 42 matching "
                                        "FailJob rule at index 1")),
    (_failed({"side": 42}), ("Count", "Container side for pod ns/j-abcde failed with exit code 42 matching "
                                      "Count rule at index 2")),   # containerName narrows rule 1
    (_failed({"main": 1}), None),                                  # NotIn [1, 2] does not match 1
    (_failed({"main": 0, "side": 0}), None),                       # exit code 0 never matches
    (_failed({"main": 42}, ("DisruptionTarget",)), ("Ignore", "Pod ns/j-abcde has condition DisruptionTarget "
                                                               "matching Ignore rule at index 0")),  # first rule wins
])
def test_pod_failure_policy_first_matching_rule(pod, expected):
    from mockgpu.control.controllers.job import match_failure_policy

    assert match_failure_policy(POLICY, pod) == expected


def test_pod_failure_policy_ignores_pods_that_did_not_fail():
    from mockgpu.control.controllers.job import match_failure_policy

    ok = _failed({"main": 42})
    ok["status"]["phase"] = "Succeeded"
    assert match_failure_policy(POLICY, ok) is None
    assert match_failure_policy(None, _failed({"main": 42})) is None


@pytest.mark.parametrize(("desired", "surge", "rss", "expected"), [
    # the Kubernetes docs' example: 10 replicas (surge 3) mid-rollout, old RS 8 and new RS 5, scaled to 15
    (15, 3, [("old", 8, 13, 1.0), ("new", 5, 13, 2.0)], {"old": 11, "new": 7}),
    # scaling down takes from the larger (and on ties older) ReplicaSets first
    (2, 1, [("old", 3, 5, 1.0), ("new", 2, 5, 2.0)], {"old": 2, "new": 1}),
    (0, 0, [("old", 3, 5, 1.0), ("new", 2, 5, 2.0)], {"old": 0, "new": 0}),
    # leftovers from rounding go to the first (largest) ReplicaSet
    (8, 2, [("old", 3, 5, 1.0), ("new", 2, 5, 2.0)], {"old": 6, "new": 4}),
    (4, 1, [("a", 1, 3, 1.0), ("b", 1, 3, 2.0), ("c", 1, 3, 3.0)], {"a": 1, "b": 2, "c": 2}),
])
def test_proportional_sizes(desired, surge, rss, expected):
    sizes = logic.proportional_sizes(desired, surge, rss)
    assert sizes == expected
    assert sum(sizes.values()) == desired + surge or desired == 0
