"""The StatefulSet controller's pure decisions (no cluster): pod identity, and what one sync creates, deletes
and reports under OrderedReady and Parallel, scale-down, RollingUpdate with partition and maxUnavailable, and
OnDelete, against upstream's ``pkg/controller/statefulset`` behaviour."""

from __future__ import annotations

import pytest

from mockgpu.control.controllers.statefulset import (
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    REVISION_HASH,
    ordinal_of,
    plan,
    revision_name,
    stateful_pod,
)

NOW = 1_000_000.0


def sts(replicas: int = 3, *, policy: str = "OrderedReady", strategy: dict | None = None, image: str = "v1",
        status: dict | None = None, start: int | None = None) -> dict:
    spec = {"replicas": replicas, "podManagementPolicy": policy, "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "c", "image": image,
                                                  "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}],
            "updateStrategy": strategy or {"type": "RollingUpdate", "rollingUpdate": {"partition": 0,
                                                                                    "maxUnavailable": 1}}}
    if start is not None:
        spec["ordinals"] = {"start": start}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "sts-uid", "generation": 4},
            "spec": spec, "status": status or {}}


def pod(s: dict, ordinal: int, *, ready: bool = True, phase: str = "Running", revision: str | None = None,
        deleting: bool = False) -> dict:
    p = stateful_pod(s, ordinal, revision or revision_name(s))
    p["metadata"]["uid"] = f"u{ordinal}"
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    p["status"] = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    return p


def deleted(out) -> list[tuple[str, str]]:
    return [(p["metadata"]["name"], why) for p, why in out.delete]


def test_pod_identity():
    s = sts()
    p = stateful_pod(s, 2, "web-abc")
    assert p["metadata"]["name"] == "web-2" and "generateName" not in p["metadata"]
    assert p["metadata"]["labels"] == {"app": "web", REVISION_HASH: "web-abc", POD_NAME_LABEL: "web-2",
                                       POD_INDEX_LABEL: "2"}
    assert p["spec"]["hostname"] == "web-2" and p["spec"]["subdomain"] == "web"
    assert p["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]
    assert p["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert ordinal_of(s, p) == 2
    assert ordinal_of(s, {"metadata": {"name": "web-x"}}) is None
    assert ordinal_of(s, {"metadata": {"name": "webby-1"}}) is None
    assert revision_name(s).startswith("web-") and revision_name(s) != revision_name(sts(image="v2"))


CREATION = [
    ("OrderedReady: only the first", "OrderedReady", lambda s: [], [0]),
    ("OrderedReady: next after a ready pod", "OrderedReady", lambda s: [pod(s, 0)], [1]),
    ("OrderedReady: waits for a pod not ready", "OrderedReady", lambda s: [pod(s, 0, ready=False)], []),
    ("OrderedReady: waits for a pending pod", "OrderedReady", lambda s: [pod(s, 0, phase="Pending")], []),
    ("OrderedReady: fills a gap first", "OrderedReady", lambda s: [pod(s, 0), pod(s, 2)], [1]),
    ("Parallel: all missing at once", "Parallel", lambda s: [pod(s, 1, ready=False)], [0, 2]),
]


@pytest.mark.parametrize(("case", "policy", "pods", "create"), CREATION, ids=[c[0] for c in CREATION])
def test_creation_order(case, policy, pods, create):
    s = sts(policy=policy)
    assert plan(s, pods(s), NOW).create == create


def test_ordinals_start():
    s = sts(2, start=5)
    out = plan(s, [pod(s, 5)], NOW)
    assert out.create == [6]


def test_failed_pod_is_deleted_to_be_recreated_and_blocks_ordered_creation():
    s = sts()
    out = plan(s, [pod(s, 0, phase="Failed"), pod(s, 1)], NOW)
    assert deleted(out) == [("web-0", "failed")]
    assert out.create == []  # OrderedReady: nothing after a pod being replaced
    s = sts(policy="Parallel")
    out = plan(s, [pod(s, 0, phase="Failed"), pod(s, 1)], NOW)
    assert deleted(out) == [("web-0", "failed")] and out.create == [2]


SCALE_DOWN = [
    ("OrderedReady: highest first, one at a time", "OrderedReady",
     lambda s: [pod(s, i) for i in range(4)], [("web-3", "scale")]),
    ("OrderedReady: waits while the highest is terminating", "OrderedReady",
     lambda s: [pod(s, 0), pod(s, 1), pod(s, 2), pod(s, 3, deleting=True)], []),
    ("OrderedReady: waits while a kept pod is unhealthy", "OrderedReady",
     lambda s: [pod(s, 0, ready=False), pod(s, 1), pod(s, 2), pod(s, 3)], []),
    ("Parallel: all surplus at once", "Parallel",
     lambda s: [pod(s, i) for i in range(5)], [("web-4", "scale"), ("web-3", "scale")]),
]


@pytest.mark.parametrize(("case", "policy", "pods", "delete"), SCALE_DOWN, ids=[c[0] for c in SCALE_DOWN])
def test_scale_down(case, policy, pods, delete):
    s = sts(3, policy=policy)
    out = plan(s, pods(s), NOW)
    assert deleted(out) == delete and out.create == []


ROLLING = [
    ("highest ordinal first", {"partition": 0, "maxUnavailable": 1}, [True] * 3, [("web-2", "update")]),
    ("partition keeps lower ordinals", {"partition": 2, "maxUnavailable": 1}, [True, True, False], []),
    ("partition: the ordinals at or above it", {"partition": 1, "maxUnavailable": 1}, [True] * 3,
     [("web-2", "update")]),
    ("maxUnavailable 2: two at once", {"partition": 0, "maxUnavailable": 2}, [True] * 3,
     [("web-2", "update"), ("web-1", "update")]),
    ("next one after the updated pod", {"partition": 0, "maxUnavailable": 1}, [True, True, False],
     [("web-1", "update")]),
]


@pytest.mark.parametrize(("case", "ru", "old", "delete"), ROLLING, ids=[c[0] for c in ROLLING])
def test_rolling_update(case, ru, old, delete):
    s = sts(strategy={"type": "RollingUpdate", "rollingUpdate": ru}, image="v2")
    old_rev = revision_name(sts())
    pods = [pod(s, i, revision=old_rev if is_old else None) for i, is_old in enumerate(old)]
    assert deleted(plan(s, pods, NOW)) == delete


def test_rolling_update_waits_for_an_unready_pod_and_ondelete_never_deletes():
    s = sts(image="v2")
    old_rev = revision_name(sts())
    pods = [pod(s, 0, revision=old_rev), pod(s, 1, revision=old_rev), pod(s, 2, ready=False)]
    assert deleted(plan(s, pods, NOW)) == []
    s = sts(strategy={"type": "OnDelete"}, image="v2")
    pods = [pod(s, i, revision=old_rev) for i in range(3)]
    assert deleted(plan(s, pods, NOW)) == []


def test_status_tracks_revisions_and_completes_the_rollout():
    s = sts(image="v2", status={"currentRevision": "web-old"})
    pods = [pod(s, 0, revision="web-old"), pod(s, 1, revision="web-old"), pod(s, 2, ready=False)]
    status = plan(s, pods, NOW).status
    assert status == {"replicas": 3, "readyReplicas": 2, "availableReplicas": 2, "currentReplicas": 2,
                      "updatedReplicas": 1, "currentRevision": "web-old", "updateRevision": revision_name(s),
                      "collisionCount": 0, "observedGeneration": 4}
    status = plan(s, [pod(s, i) for i in range(3)], NOW).status
    assert status["currentRevision"] == status["updateRevision"] == revision_name(s)
    assert status["currentReplicas"] == status["updatedReplicas"] == 3
    fresh = plan(sts(), [], NOW).status
    assert fresh == {"replicas": 0, "availableReplicas": 0, "currentRevision": revision_name(sts()),
                     "updateRevision": revision_name(sts()), "collisionCount": 0, "observedGeneration": 4}


def test_ordered_creation_waits_for_min_ready_seconds():
    s = sts()
    s["spec"]["minReadySeconds"] = 30
    p0 = pod(s, 0)
    p0["status"]["conditions"][0]["lastTransitionTime"] = "1970-01-12T13:46:30Z"  # NOW - 10 s
    assert plan(s, [p0], NOW).create == []
    assert plan(s, [p0], NOW + 25).create == [1]
