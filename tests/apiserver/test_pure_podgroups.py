"""scheduling.k8s.io/v1beta1 Workload and PodGroup, and pods' spec.schedulingGroup: defaults, the strategies and
v1.37.2's validation texts (pkg/apis/scheduling/v1beta1/zz_generated.validations.go, validation.go), as the
server applies them (``default_and_validate``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mockgpu.config.featuregates import FeatureGates
from mockgpu.control.apiserver.printers import PODGROUP
from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.validation import default_and_validate

ON = FeatureGates({"GenericWorkload": True})


def _pg(policy: Any = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 2}} if policy is None else policy, **spec}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "train"},
            "spec": body}


def _wl(templates: Any, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "train"},
            "spec": {"podGroupTemplates": templates, **spec}}


def _messages(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None, sub: str = "") -> list[str]:
    try:
        default_and_validate(kind, obj, namespace="default", old=old, subresource=sub, gates=ON)
    except StatusError as exc:
        return [f"{c['field']}: {c['message']}" for c in exc.status["details"]["causes"]]
    return []


CREATE = [
    ("gang", "PodGroup", _pg(), []),
    ("basic", "PodGroup", _pg({"basic": {}}), []),
    ("no-policy", "PodGroup", _pg({}),
     ['spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`']),
    ("both", "PodGroup", _pg({"basic": {}, "gang": {"minCount": 1}}),
     ['spec.schedulingPolicy: Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`']),
    ("mincount-missing", "PodGroup", _pg({"gang": {}}), ["spec.schedulingPolicy.gang.minCount: Required value"]),
    ("mincount-zero", "PodGroup", _pg({"gang": {"minCount": 0}}),
     ["spec.schedulingPolicy.gang.minCount: Required value"]),
    ("mincount-negative", "PodGroup", _pg({"gang": {"minCount": -1}}),
     ["spec.schedulingPolicy.gang.minCount: Invalid value: -1: must be greater than or equal to 1"]),
    ("workload-ref", "PodGroup", _pg(workloadRef={"workloadName": "job-a", "templateName": "workers"}), []),
    ("workload-ref-bad", "PodGroup", _pg(workloadRef={"workloadName": "Job_A"}),
     ['spec.workloadRef.workloadName: Invalid value: "Job_A": a lowercase RFC 1123 subdomain must consist of lower '
      "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
      "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
      "')", "spec.workloadRef.templateName: Required value"]),
    ("priority-too-high", "PodGroup", _pg(priority=1_000_000_001),
     ["spec.priority: Invalid value: 1000000001: must be less than or equal to 1000000000"]),
    ("disruption-both", "PodGroup", _pg(disruptionMode={"single": {}, "all": {}}),
     ['spec.disruptionMode: Invalid value: "{single, all}": must specify exactly one of: `single`, `all`']),
    ("workload", "Workload", _wl([{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}]), []),
    ("workload-none", "Workload", _wl([]),
     ['spec: Invalid value: "": must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`']),
    ("workload-dup", "Workload", _wl([{"name": "w", "schedulingPolicy": {"basic": {}}},
                                      {"name": "w", "schedulingPolicy": {"basic": {}}}]),
     ['spec.podGroupTemplates[1]: Duplicate value: {"name":"w","schedulingPolicy":{"basic":{}},'
      '"disruptionMode":{"single":{}}}']),
    ("workload-template-name", "Workload", _wl([{"schedulingPolicy": {"gang": {"minCount": 0}}}]),
     ["spec.podGroupTemplates[0].name: Required value",
      "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value"]),
    ("workload-too-many", "Workload", _wl([{"name": f"t{i}", "schedulingPolicy": {"basic": {}}} for i in range(9)]),
     ["spec.podGroupTemplates: Too many: 9: must have at most 8 items"]),
]


@pytest.mark.parametrize(("kind", "obj", "want"), [c[1:] for c in CREATE], ids=[c[0] for c in CREATE])
def test_create(kind, obj, want):
    assert _messages(kind, obj) == want


def _stored(obj: dict[str, Any]) -> dict[str, Any]:
    return default_and_validate(obj["kind"], obj, namespace="default", gates=ON)


def test_defaults_and_status_reset_on_create():
    pg = _pg(status={"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}]})
    pg["status"] = pg["spec"].pop("status")
    out = _stored(pg)
    assert out["spec"]["disruptionMode"] == {"single": {}}
    assert out["status"] == {}
    assert "preemptionPolicy" not in out["spec"]  # PodGroupPreemptionPolicy is off
    with_gate = default_and_validate("PodGroup", _pg(), namespace="default",
                                     gates=FeatureGates({"GenericWorkload": True, "PodGroupPreemptionPolicy": True}))
    assert with_gate["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


def test_unmodelled_gated_fields_are_dropped():
    out = _stored(_pg(schedulingConstraints={"topology": [{"key": "rack"}]}, resourceClaims=[{"name": "a"}]))
    assert "schedulingConstraints" not in out["spec"] and "resourceClaims" not in out["spec"]


def _update(old: dict[str, Any], change) -> list[str]:  # noqa: ANN001
    stored = _stored(old)
    new = copy.deepcopy(stored)
    change(new)
    return _messages(new["kind"], new, old=stored)


UPDATE = [
    ("mincount-may-change", _pg(), lambda o: o["spec"]["schedulingPolicy"]["gang"].update(minCount=3), []),
    ("gang-to-basic", _pg(), lambda o: o["spec"].update(schedulingPolicy={"basic": {}}),
     ["spec.schedulingPolicy.basic: Invalid value: null: field is immutable",
      "spec.schedulingPolicy.gang: Invalid value: null: field cannot be cleared once set"]),
    ("workload-ref-immutable", _pg(),
     lambda o: o["spec"].update(workloadRef={"workloadName": "a", "templateName": "b"}),
     ["spec.workloadRef: Invalid value: null: field is immutable"]),
    ("priority-immutable", _pg(priority=1), lambda o: o["spec"].update(priority=2),
     ["spec.priority: Invalid value: null: field is immutable"]),
    ("labels-fine", _pg(), lambda o: o["metadata"].update(labels={"a": "b"}), []),
    ("template-added", _wl([{"name": "a", "schedulingPolicy": {"basic": {}}}]),
     lambda o: o["spec"]["podGroupTemplates"].append({"name": "b", "schedulingPolicy": {"basic": {}}}),
     ["spec.podGroupTemplates[1]: Forbidden: item may not be added"]),
    ("template-removed", _wl([{"name": "a", "schedulingPolicy": {"basic": {}}},
                              {"name": "b", "schedulingPolicy": {"basic": {}}}]),
     lambda o: o["spec"]["podGroupTemplates"].pop(),
     ["spec.podGroupTemplates: Forbidden: item may not be removed"]),
]


@pytest.mark.parametrize(("old", "change", "want"), [c[1:] for c in UPDATE], ids=[c[0] for c in UPDATE])
def test_update(old, change, want):
    assert _update(old, change) == want


def test_status_is_written_only_through_status():
    stored = _stored(_pg())
    status = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
                              "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    main = default_and_validate("PodGroup", {**stored, "status": status}, namespace="default", old=stored, gates=ON)
    assert main["status"] == {}
    sub = default_and_validate("PodGroup", {**stored, "status": status, "spec": {"schedulingPolicy": {"basic": {}}}},
                               namespace="default", old=stored, subresource="status", gates=ON)
    assert sub["status"] == status and sub["spec"] == stored["spec"]


@pytest.mark.parametrize(("status", "cells"), [
    (None, ["Gang", "<none>", "Pending"]),
    ({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False"}]}, ["Gang", "<none>", "Unschedulable"]),
    ({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}]}, ["Gang", "<none>", "Scheduled"]),
    ({"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"},
                     {"type": "DisruptionTarget", "reason": "PreemptionByScheduler"}]},
     ["Gang", "<none>", "PreemptionByScheduler"]),
])
def test_printer(status, cells):
    pg = _stored(_pg())
    if status:
        pg["status"] = status
    row = PODGROUP[1](pg, __import__("datetime").datetime.now(__import__("datetime").UTC))
    assert row["cells"][1:4] == cells


def _pod(group: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if group is not None:
        spec["schedulingGroup"] = group
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize(("group", "want"), [
    ({"podGroupName": "train"}, []),
    ({}, ["spec.schedulingGroup.podGroupName: Invalid value: null: must specify one of: `podGroupName`"]),
    ({"podGroupName": "Train"}, ['spec.schedulingGroup.podGroupName: Invalid value: "Train": a lowercase RFC 1123 '
                                 "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
                                 "start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
])
def test_pod_scheduling_group(group, want):
    assert _messages("Pod", _pod(group)) == want


def test_pod_scheduling_group_is_dropped_without_the_gate_and_immutable():
    off = default_and_validate("Pod", _pod({"podGroupName": "train"}), namespace="default")
    assert "schedulingGroup" not in off["spec"]
    on = default_and_validate("Pod", _pod({"podGroupName": "train"}), namespace="default", gates=ON)
    assert on["spec"]["schedulingGroup"] == {"podGroupName": "train"}
    changed = copy.deepcopy(on)
    changed["spec"]["schedulingGroup"] = {"podGroupName": "other"}
    with pytest.raises(StatusError) as exc:
        default_and_validate("Pod", changed, namespace="default", old=on, gates=ON)
    assert "pod updates may not change fields other than" in exc.value.status["message"]
