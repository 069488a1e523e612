"""Pod spec updates: what upstream lets change (images, deadline, added tolerations, removed scheduling gates,
nodeSelector additions while gated, a negative grace period set to 1) and its texts for the rest."""

from __future__ import annotations

import copy

import pytest

from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.validation import default_and_validate

PREFIX = ("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
          "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
          "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
          "negative)")


def _pod(**spec) -> dict:
    body = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec}}
    return default_and_validate("Pod", body, namespace="d")


def _update(old: dict, **changes) -> list[str]:
    new = copy.deepcopy(old)
    new["spec"].update(changes)
    try:
        default_and_validate("Pod", new, namespace="d", old=old)
    except StatusError as exc:
        return [f"{c['field']}: {c['message']}" for c in exc.status["details"]["causes"]]
    return []


GATED = {"schedulingGates": [{"name": "example.com/quota"}, {"name": "example.com/gpu"}],
         "nodeSelector": {"pool": "gpu"}}


@pytest.mark.parametrize(("spec", "changes", "want"), [
    (GATED, {"schedulingGates": [{"name": "example.com/gpu"}]}, []),
    (GATED, {"schedulingGates": []}, []),
    (GATED, {"schedulingGates": [{"name": "example.com/gpu"}, {"name": "example.com/new"}]},
     ["spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate "
      "'example.com/new'"]),
    ({}, {"schedulingGates": [{"name": "late"}]},
     ["spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'late'"]),
    (GATED, {"nodeSelector": {"pool": "gpu", "zone": "a"}}, []),
    (GATED, {"nodeSelector": {"pool": "cpu"}},
     ['spec.nodeSelector: Invalid value: map[string]string{"pool":"cpu"}: only additions to spec.nodeSelector are '
      "allowed (no mutations or deletions)"]),
    ({"nodeSelector": {"pool": "gpu"}}, {"nodeSelector": {"pool": "gpu", "zone": "a"}}, [PREFIX]),
    ({"terminationGracePeriodSeconds": -1}, {"terminationGracePeriodSeconds": 1}, []),
    ({"terminationGracePeriodSeconds": -1}, {"terminationGracePeriodSeconds": 5}, [PREFIX]),
    ({}, {"nodeName": "gpu-0"}, [PREFIX]),
], ids=["remove-one-gate", "remove-all-gates", "add-gate-while-gated", "add-gate-to-ungated",
        "gated-selector-addition", "gated-selector-mutation", "ungated-selector-addition", "grace-negative-to-1",
        "grace-negative-to-5", "node-name"])
def test_pod_spec_update(spec, changes, want):
    assert _update(_pod(**spec), **changes) == want


def test_gated_pod_is_created_with_the_scheduling_gated_condition():
    gated, plain = _pod(**GATED), _pod()
    assert gated["status"]["conditions"] == [{
        "type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": None,
        "reason": "SchedulingGated", "message": "Scheduling is blocked due to non-empty scheduling gates"}]
    assert "conditions" not in plain["status"]
