"""Server-side Tables: columns, pod STATUS logic like kubectl's printer, node rows, events, ages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mockgpu.control.apiserver.tables import human_duration, to_table

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
CREATED = "2026-12-02T11:57:58Z"  # 122 s before NOW


@pytest.mark.parametrize(("seconds", "text"), [
    (-5, "<invalid>"), (-1, "0s"), (5, "5s"), (119, "119s"), (182, "3m2s"), (180, "3m"), (900, "15m"),
    (3 * 3600 + 120, "3h2m"), (5 * 3600, "5h"), (30 * 3600, "30h"), (51 * 3600, "2d3h"), (48 * 3600, "2d"),
    (40 * 86400, "40d"), (740 * 86400, "2y10d"), (3000 * 86400, "8y"),
], ids=lambda v: str(v))
def test_human_duration(seconds, text):
    assert human_duration(seconds) == text


def pod(phase="Pending", statuses=None, **extra):
    status = {"phase": phase, **({"containerStatuses": statuses} if statuses is not None else {})}
    status.update(extra.pop("status", {}))
    meta = {"name": "p", "namespace": "default", "creationTimestamp": CREATED, **extra.pop("meta", {})}
    return {"metadata": meta, "spec": {"containers": [{"name": "c"}], **extra}, "status": status}


def cs(state, ready=False, restarts=0, last=None):
    out = {"name": "c", "state": state, "ready": ready, "restartCount": restarts}
    if last:
        out["lastState"] = {"terminated": {"finishedAt": last, "exitCode": 1}}
    return out


STATUS_CASES = [
    ("pending", pod(), "Pending", "0/1"),
    ("container-creating", pod(statuses=[cs({"waiting": {"reason": "ContainerCreating"}})]), "ContainerCreating",
     "0/1"),
    ("running", pod("Running", [cs({"running": {"startedAt": CREATED}}, ready=True)]), "Running", "1/1"),
    ("completed", pod("Succeeded", [cs({"terminated": {"exitCode": 0, "reason": "Completed"}})]), "Completed", "0/1"),
    ("error", pod("Failed", [cs({"terminated": {"exitCode": 1, "reason": "Error"}})]), "Error", "0/1"),
    ("exit-code", pod("Failed", [cs({"terminated": {"exitCode": 3}})]), "ExitCode:3", "0/1"),
    ("crashloop", pod("Running", [cs({"waiting": {"reason": "CrashLoopBackOff"}}, restarts=4)]), "CrashLoopBackOff",
     "0/1"),
    ("status-reason", pod("Failed", status={"reason": "OutOfnvidia.com/gpu"}), "OutOfnvidia.com/gpu", "0/1"),
    ("terminating", pod("Running", [cs({"running": {}}, ready=True)], meta={"deletionTimestamp": CREATED}),
     "Terminating", "1/1"),
    ("scheduling-gated", pod(status={"conditions": [{"type": "PodScheduled", "status": "False",
                                                      "reason": "SchedulingGated"}]}), "SchedulingGated", "0/1"),
    ("init", pod(status={"initContainerStatuses": [{"name": "i", "state": {"running": {}}}]},
                 initContainers=[{"name": "i"}]), "Init:0/1", "0/1"),
]


@pytest.mark.parametrize(("obj", "status", "ready"), [c[1:] for c in STATUS_CASES], ids=[c[0] for c in STATUS_CASES])
def test_pod_status_column(obj, status, ready):
    row = to_table("pods", [obj], now=NOW)["rows"][0]
    assert row["cells"][1:3] == [ready, status]


def test_pod_columns_and_wide_cells():
    table = to_table("pods", [pod("Running", [cs({"running": {}}, ready=True, restarts=2, last="2026-12-02T11:59:00Z")],
                                  nodeName="gpu-0", status={"podIP": "10.0.0.7"})], now=NOW)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    cols = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert cols == [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0), ("IP", 1), ("Node", 1),
                    ("Nominated Node", 1), ("Readiness Gates", 1)]
    assert table["rows"][0]["cells"] == ["p", "1/1", "Running", "2 (60s ago)", "2m2s", "10.0.0.7", "gpu-0", "<none>",
                                         "<none>"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_include_object_modes():
    obj = pod()
    assert "object" not in to_table("pods", [obj], include_object="None", now=NOW)["rows"][0]
    assert to_table("pods", [obj], include_object="Object", now=NOW)["rows"][0]["object"] is obj


def node(ready="True", unschedulable=False, labels=None):
    return {"metadata": {"name": "gpu-0", "creationTimestamp": CREATED, "labels": labels or {}},
            "spec": {"unschedulable": unschedulable},
            "status": {"conditions": [{"type": "Ready", "status": ready}] if ready else [],
                       "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}],
                       "nodeInfo": {"kubeletVersion": "v1.37.2-mockgpu", "osImage": "mockgpu",
                                    "kernelVersion": "6.1", "containerRuntimeVersion": "mockgpu://0.1"}}}


@pytest.mark.parametrize(("obj", "status", "roles"), [
    (node(), "Ready", "<none>"), (node("False"), "NotReady", "<none>"), (node("Unknown"), "NotReady", "<none>"),
    (node(None), "Unknown", "<none>"), (node(unschedulable=True), "Ready,SchedulingDisabled", "<none>"),
    (node(labels={"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/gpu": ""}), "Ready",
     "control-plane,gpu"),
], ids=["ready", "not-ready", "unknown-condition", "no-condition", "cordoned", "roles"])
def test_node_rows(obj, status, roles):
    table = to_table("nodes", [obj], now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image", "Kernel-Version",
        "Container-Runtime"]
    assert table["rows"][0]["cells"] == ["gpu-0", status, roles, "2m2s", "v1.37.2-mockgpu", "172.18.0.2", "<none>",
                                         "mockgpu", "6.1", "mockgpu://0.1"]


def test_event_rows():
    ev = {"metadata": {"name": "p.abc", "namespace": "default"}, "type": "Warning", "reason": "FailedScheduling",
          "message": " 0/4 nodes are available: 4 Insufficient nvidia.com/gpu. ",
          "involvedObject": {"kind": "Pod", "name": "p"}, "source": {"component": "default-scheduler"},
          "firstTimestamp": "2026-12-02T11:50:00Z", "lastTimestamp": "2026-12-02T11:59:55Z", "count": 3}
    table = to_table("events", [ev], now=NOW)
    assert [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0] == [
        "Last Seen", "Type", "Reason", "Object", "Message"]
    assert table["rows"][0]["cells"] == ["5s", "Warning", "FailedScheduling", "pod/p", "", "default-scheduler",
                                         "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", "10m", 3, "p.abc"]


@pytest.mark.parametrize(("resource", "obj", "cells"), [
    ("namespaces", {"metadata": {"name": "ml", "creationTimestamp": CREATED}, "status": {"phase": "Active"}},
     ["ml", "Active", "2m2s"]),
    ("configmaps", {"metadata": {"name": "cm", "creationTimestamp": CREATED}, "data": {"a": "1", "b": "2"}},
     ["cm", 2, "2m2s"]),
    ("serviceaccounts", {"metadata": {"name": "default", "creationTimestamp": CREATED}}, ["default", 0, "2m2s"]),
    ("widgets", {"metadata": {"name": "w", "creationTimestamp": CREATED}}, ["w", CREATED]),
    ("ConfigMap", {"metadata": {"name": "cm"}, "data": {}}, ["cm", 0, "<unknown>"]),
], ids=["namespaces", "configmaps", "serviceaccounts", "default-table", "by-kind"])
def test_simple_tables(resource, obj, cells):
    assert to_table(resource, [obj], now=NOW)["rows"][0]["cells"] == cells


def test_malformed_status_gives_unknown_cells_not_an_error():
    row = to_table("pods", [pod(status={"containerStatuses": "oops"})], now=NOW)["rows"][0]
    assert row["cells"] == ["p"] + ["<unknown>"] * 8
