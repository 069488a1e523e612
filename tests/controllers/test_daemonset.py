"""The DaemonSet controller's pure decisions (no cluster): which nodes run a daemon pod, the pod it creates,
and what one sync deletes, creates and reports, against upstream's ``pkg/controller/daemon`` behaviour."""

from __future__ import annotations

import pytest

from mockgpu.control.controllers.daemonset import (
    REVISION_HASH,
    daemon_pod,
    daemon_tolerations,
    pin_to_node,
    plan,
    pod_node,
    revision_hash,
    should_run,
)

NOW = 1_000_000.0


def ds(pod_spec: dict | None = None, *, strategy: dict | None = None, min_ready: int = 0) -> dict:
    spec = {"containers": [{"name": "c", "image": "x"}], **(pod_spec or {})}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "ns", "uid": "ds-uid", "generation": 3,
                         "annotations": {"deprecated.daemonset.template.generation": "2"}},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "minReadySeconds": min_ready,
                     "template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec},
                     "updateStrategy": strategy or {"type": "RollingUpdate",
                                                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}}}


def node(name: str, labels: dict | None = None, taints: list | None = None) -> dict:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": taints or []}}


def taint(key: str, effect: str, value: str = "") -> dict:
    return {"key": key, "value": value, "effect": effect}


REQUIRED_GPU = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}]}}}}

SHOULD_RUN = [
    ("plain node", {}, node("n1"), (True, True)),
    ("nodeSelector matches", {"nodeSelector": {"gpu": "a100"}}, node("n1", {"gpu": "a100"}), (True, True)),
    ("nodeSelector differs", {"nodeSelector": {"gpu": "a100"}}, node("n1", {"gpu": "h100"}), (False, False)),
    ("required affinity matches", REQUIRED_GPU, node("n1", {"gpu": "a100"}), (True, True)),
    ("required affinity fails", REQUIRED_GPU, node("n1"), (False, False)),
    ("template pinned elsewhere", {"nodeName": "n2"}, node("n1"), (False, False)),
    ("untolerated NoSchedule: keeps running", {}, node("n1", taints=[taint("dedicated", "NoSchedule")]),
     (False, True)),
    ("untolerated NoExecute: evicted", {}, node("n1", taints=[taint("dedicated", "NoExecute")]), (False, False)),
    ("PreferNoSchedule is ignored", {}, node("n1", taints=[taint("dedicated", "PreferNoSchedule")]), (True, True)),
    ("tolerated by the template", {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                                    "effect": "NoSchedule"}]},
     node("n1", taints=[taint("dedicated", "NoSchedule", "gpu")]), (True, True)),
    ("cordoned node (controller's own toleration)", {},
     node("n1", taints=[taint("node.kubernetes.io/unschedulable", "NoSchedule")]), (True, True)),
    ("not-ready node (controller's own toleration)", {},
     node("n1", taints=[taint("node.kubernetes.io/not-ready", "NoExecute")]), (True, True)),
    ("memory pressure", {}, node("n1", taints=[taint("node.kubernetes.io/memory-pressure", "NoSchedule")]),
     (True, True)),
    ("network unavailable, pod network", {},
     node("n1", taints=[taint("node.kubernetes.io/network-unavailable", "NoSchedule")]), (False, True)),
    ("network unavailable, host network", {"hostNetwork": True},
     node("n1", taints=[taint("node.kubernetes.io/network-unavailable", "NoSchedule")]), (True, True)),
]


@pytest.mark.parametrize(("case", "pod_spec", "the_node", "want"), SHOULD_RUN, ids=[c[0] for c in SHOULD_RUN])
def test_should_run(case, pod_spec, the_node, want):
    assert should_run(ds(pod_spec), the_node) == want


def test_controller_tolerations_are_added_once():
    own = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    tolerations = daemon_tolerations({"tolerations": [own]})
    keys = [(t["key"], t["effect"]) for t in tolerations]
    assert keys == [("node.kubernetes.io/unschedulable", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute"),
                    ("node.kubernetes.io/unreachable", "NoExecute"), ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                    ("node.kubernetes.io/pid-pressure", "NoSchedule")]
    assert ("node.kubernetes.io/network-unavailable", "NoSchedule") in [
        (t["key"], t["effect"]) for t in daemon_tolerations({"hostNetwork": True})]


def test_pin_to_node_replaces_required_terms_and_keeps_the_rest():
    preferred = [{"weight": 1, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}]
    affinity = {"nodeAffinity": {**REQUIRED_GPU["affinity"]["nodeAffinity"],
                                 "preferredDuringSchedulingIgnoredDuringExecution": preferred},
                "podAntiAffinity": {"x": 1}}
    out = pin_to_node(affinity, "n7")
    assert out["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}]}
    assert out["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == preferred
    assert out["podAntiAffinity"] == {"x": 1}
    assert affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] != out["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]  # the template is not changed
    assert pin_to_node(None, "n1") == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}


def test_daemon_pod_carries_revision_labels_owner_and_pin():
    d = ds()
    pod = daemon_pod(d, "n3", revision_hash(d))
    meta = pod["metadata"]
    assert meta["generateName"] == "agent-" and meta["namespace"] == "ns"
    assert meta["labels"] == {"app": "agent", "pod-template-generation": "2", REVISION_HASH: revision_hash(d)}
    assert meta["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                        "uid": "ds-uid", "controller": True, "blockOwnerDeletion": True}]
    assert pod_node(pod) == "n3" and "nodeName" not in pod["spec"]
    assert len(pod["spec"]["tolerations"]) == 6
    assert revision_hash(ds({"containers": [{"name": "c", "image": "y"}]})) != revision_hash(d)


# ---- one sync ---------------------------------------------------------------------------------------------------

def pod(name: str, on: str, d: dict, *, updated: bool = True, ready: bool = True, phase: str = "Running",
        created: str = "2026-01-01T00:00:00Z", deleting: bool = False) -> dict:
    p = daemon_pod(d, on, revision_hash(d) if updated else "old")
    p["metadata"].update(name=name, creationTimestamp=created, uid=name)
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:10Z"
    p["spec"]["nodeName"] = on
    p["status"] = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    return p


def names(pairs) -> list[tuple[str, str]]:
    return sorted((p["metadata"]["name"], why) for p, why in pairs)


def test_every_matching_node_gets_a_pod_and_the_status_counts_them():
    d = ds({"nodeSelector": {"gpu": "a100"}})
    nodes = [node("n1", {"gpu": "a100"}), node("n2", {"gpu": "a100"}), node("n3")]
    out = plan(d, nodes, [], NOW)
    assert out.create == ["n1", "n2"] and out.delete == []
    assert out.status == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 2,
                          "numberReady": 0, "observedGeneration": 3, "numberUnavailable": 2}
    pods = [pod("a", "n1", d), pod("b", "n2", d, ready=False)]
    out = plan(d, nodes, pods, NOW)
    assert out.create == [] and out.delete == []
    assert out.status == {"currentNumberScheduled": 2, "numberMisscheduled": 0, "desiredNumberScheduled": 2,
                          "numberReady": 1, "observedGeneration": 3, "updatedNumberScheduled": 2,
                          "numberAvailable": 1, "numberUnavailable": 1}


SYNCS = [
    ("extra pod on a node: the newest goes",
     lambda d: [pod("old", "n1", d, created="2026-01-01T00:00:00Z"),
                pod("new", "n1", d, created="2026-01-02T00:00:00Z"), pod("b", "n2", d)],
     [node("n1"), node("n2")], [], [("new", "extra")]),
    ("failed pod: deleted and replaced",
     lambda d: [pod("dead", "n1", d, phase="Failed"), pod("b", "n2", d)],
     [node("n1"), node("n2")], ["n1"], [("dead", "failed")]),
    ("terminating pod: the replacement waits",
     lambda d: [pod("going", "n1", d, deleting=True), pod("b", "n2", d)],
     [node("n1"), node("n2")], [], []),
    ("node removed: its pod goes",
     lambda d: [pod("a", "n1", d), pod("orphan", "gone", d)],
     [node("n1")], [], [("orphan", "misscheduled")]),
    ("NoExecute taint added: the pod is evicted",
     lambda d: [pod("a", "n1", d), pod("b", "n2", d)],
     [node("n1"), node("n2", taints=[taint("maintenance", "NoExecute")])], [], [("b", "misscheduled")]),
    ("NoSchedule taint added: the pod stays",
     lambda d: [pod("a", "n1", d), pod("b", "n2", d)],
     [node("n1"), node("n2", taints=[taint("maintenance", "NoSchedule")])], [], []),
]


@pytest.mark.parametrize(("case", "pods", "nodes", "create", "delete"), SYNCS, ids=[c[0] for c in SYNCS])
def test_sync_plans(case, pods, nodes, create, delete):
    d = ds()
    out = plan(d, nodes, pods(d), NOW)
    assert out.create == create
    assert names(out.delete) == sorted(delete)


def test_misscheduled_pods_are_counted():
    d = ds({"nodeSelector": {"gpu": "a100"}})
    out = plan(d, [node("n1", {"gpu": "a100"}), node("n2", taints=[])], [pod("a", "n1", d), pod("b", "n2", d)], NOW)
    assert out.status["numberMisscheduled"] == 1 and out.status["desiredNumberScheduled"] == 1
    assert names(out.delete) == [("b", "misscheduled")]


ROLLING = [
    ("maxUnavailable 1: one old pod at a time", 1, ["a", "b", "c", "d"], set(), 1),
    ("maxUnavailable 50% of 4: two", "50%", ["a", "b", "c", "d"], set(), 2),
    ("maxUnavailable 30% of 4 rounds up: two", "30%", ["a", "b", "c", "d"], set(), 2),
    ("an updated pod not ready yet uses the budget", 1, ["a", "b", "c"], {"d"}, 0),
    ("an unavailable old pod goes at once, beyond the budget", 1, ["a", "b", "c", "d"], {"a"}, 1),
]


@pytest.mark.parametrize(("case", "max_unavailable", "old", "unready", "deleted"), ROLLING,
                         ids=[c[0] for c in ROLLING])
def test_rolling_update_stays_within_max_unavailable(case, max_unavailable, old, unready, deleted):
    d = ds(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable, "maxSurge": 0}})
    nodes = [node(n) for n in ("n1", "n2", "n3", "n4")]
    pods = [pod(name, f"n{i + 1}", d, updated=name not in old, ready=name not in unready)
            for i, name in enumerate(["a", "b", "c", "d"])]
    out = plan(d, nodes, pods, NOW)
    updates = [p["metadata"]["name"] for p, why in out.delete if why == "update"]
    assert len(updates) == deleted
    assert set(updates) <= set(old)
    if unready & set(old):
        assert unready & set(old) <= set(updates)


def test_rollout_waits_while_a_node_has_no_pod_and_ondelete_never_replaces():
    d = ds()
    nodes = [node("n1"), node("n2")]
    out = plan(d, nodes, [pod("a", "n1", d, updated=False)], NOW)
    assert out.create == ["n2"] and out.delete == []  # n2 being created counts as unavailable
    d = ds(strategy={"type": "OnDelete"})
    out = plan(d, nodes, [pod("a", "n1", d, updated=False), pod("b", "n2", d, updated=False)], NOW)
    assert out.delete == [] and "updatedNumberScheduled" not in out.status


def test_min_ready_seconds_gates_availability():
    d = ds(min_ready=30)
    p = pod("a", "n1", d)
    p["status"]["conditions"][0]["lastTransitionTime"] = "1970-01-12T13:46:30Z"  # NOW - 10 s
    out = plan(d, [node("n1")], [p], NOW)
    assert out.status["numberReady"] == 1 and "numberAvailable" not in out.status
    out = plan(d, [node("n1")], [p], NOW + 25)
    assert out.status["numberAvailable"] == 1
