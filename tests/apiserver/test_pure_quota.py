"""ResourceQuota and LimitRange rules without a server: usage, scopes, CheckRequest's 403s, LimitRanger, and the
validation texts (``pkg/quota/v1/evaluator/core``, ``plugin/pkg/admission/...``, ``pkg/apis/core/validation``).
The live comparison with kube-apiserver is ``tests/conformance/test_quota.py``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mockgpu.apimachinery.status import StatusError
from mockgpu.control.apiserver import limitranges, quotaadmission, resourcequotas
from mockgpu.control.apiserver.registry.core import POD
from mockgpu.control.quota import evaluators
from mockgpu.control.quota.resources import to_raw

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pod(name: str = "p", phase: str = "Pending", qos: str = "BestEffort", **resources: dict[str, str]) -> dict:
    return {"metadata": {"name": name, "namespace": "ns"}, "status": {"phase": phase, "qosClass": qos},
            "spec": {"containers": [{"name": "c", "resources": resources}]}}


def quota(hard: dict[str, str], used: dict[str, str] | None = None, scopes: list[str] | None = None) -> dict:
    return {"metadata": {"name": "q", "namespace": "ns"}, "spec": {"hard": hard, "scopes": scopes or []},
            "status": {"hard": hard, "used": used if used is not None else dict.fromkeys(hard, "0")}}


@pytest.mark.parametrize("p,expected", [
    (pod(limits={"nvidia.com/gpu": "2"}, requests={"nvidia.com/gpu": "2"}),
     {"count/pods": "1", "pods": "1", "requests.nvidia.com/gpu": "2"}),
    (pod(requests={"cpu": "500m", "memory": "1Gi"}, limits={"memory": "2Gi"}),
     {"count/pods": "1", "pods": "1", "cpu": "500m", "requests.cpu": "500m", "memory": "1Gi",
      "requests.memory": "1Gi", "limits.memory": "2Gi"}),
    (pod(phase="Succeeded", requests={"nvidia.com/gpu": "1"}), {"count/pods": "1"}),  # terminal pods: count only
    (pod(phase="Failed"), {"count/pods": "1"}),
], ids=["gpu", "compute", "succeeded", "failed"])
def test_pod_usage(p, expected):
    assert to_raw(evaluators.pod_usage(p, NOW)) == dict(sorted(expected.items()))


@pytest.mark.parametrize("names,tracked", [
    (["requests.nvidia.com/gpu", "limits.nvidia.com/gpu", "pods", "count/pods", "configmaps"],
     ["pods", "count/pods", "requests.nvidia.com/gpu"]),  # extended resources only as requests.<name>
    (["requests.hugepages-2Mi", "hugepages-1Gi"], ["requests.hugepages-2Mi", "hugepages-1Gi"]),
])
def test_the_pod_evaluator_tracks(names, tracked):
    assert sorted(evaluators.PODS.matching(names)) == sorted(tracked)


@pytest.mark.parametrize("scope,p,matches", [
    ("BestEffort", pod(), True),
    ("NotBestEffort", pod(qos="Burstable"), True),
    ("Terminating", pod(), False),
    ("NotTerminating", pod(), True),
])
def test_scopes(scope, p, matches):
    assert evaluators.pod_matches_scope({"scopeName": scope, "operator": "Exists"}, p) is matches


def test_exceeded_quota_has_upstreams_message():
    q = quota({"requests.nvidia.com/gpu": "2"}, {"requests.nvidia.com/gpu": "2"})
    with pytest.raises(StatusError) as exc:
        quotaadmission.check_request(POD, pod("x", requests={"nvidia.com/gpu": "2"}), None, [q], NOW)
    assert exc.value.status["code"] == 403
    assert exc.value.status["message"] == ('pods "x" is forbidden: exceeded quota: q, requested: '
                                           "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=2, limited: "
                                           "requests.nvidia.com/gpu=2")


@pytest.mark.parametrize("q,message", [
    (quota({"requests.cpu": "1", "limits.memory": "1Gi"}),
     'pods "p" is forbidden: failed quota: q: must specify limits.memory for: c; requests.cpu for: c'),
    ({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}, "status": {"hard": {"pods": "1"}}},
     'pods "p" is forbidden: status unknown for quota: q, resources: pods'),
])
def test_other_quota_refusals(q, message):
    with pytest.raises(StatusError) as exc:
        quotaadmission.check_request(POD, pod(), None, [q], NOW)
    assert exc.value.status["message"] == message


def test_a_charge_adds_to_used_and_a_scoped_quota_skips_what_it_does_not_cover():
    plain = quota({"requests.nvidia.com/gpu": "4", "pods": "5"})
    best_effort = quota({"pods": "1"}, scopes=["BestEffort"])
    charges = quotaadmission.check_request(POD, pod(qos="Burstable", requests={"nvidia.com/gpu": "1"}), None,
                                           [plain, best_effort], NOW)
    assert [new["status"]["used"] for _, new in charges] == [{"pods": "1", "requests.nvidia.com/gpu": "1"}]


def test_limit_ranger_defaults_then_checks():
    lr = {"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "500m"},
                               "defaultRequest": {"cpu": "250m"}}]}}
    p = pod()
    limitranges.admit(p, [lr])
    assert p["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m"}, "requests": {"cpu": "250m"}}
    assert p["metadata"]["annotations"][limitranges.ANNOTATION] == (
        "LimitRanger plugin set: cpu request for container c; cpu limit for container c")
    assert limitranges.check(p, [lr]) is None
    big = pod(limits={"cpu": "2"}, requests={"cpu": "2"})
    assert limitranges.check(big, [lr]) == "maximum cpu usage per Container is 1, but limit is 2"


@pytest.mark.parametrize("spec,errors", [
    ({"hard": {"gpu": "1"}}, ['spec.hard[gpu]: Invalid value: "gpu": must be a standard resource type or fully '
                              'qualified',
                              'spec.hard[gpu]: Invalid value: "gpu": must be a standard resource for quota']),
    ({"hard": {"nvidia.com/gpu": "1500m"}}, ['spec.hard[nvidia.com/gpu]: Invalid value: "1500m": must be an integer']),
    ({"hard": {"requests.nvidia.com/gpu": "-1"}},
     ['spec.hard[requests.nvidia.com/gpu]: Invalid value: "-1": must be greater than or equal to 0']),
    ({"hard": {"pods": "1"}, "scopes": ["Terminating", "NotTerminating"]},
     ['spec.scopes: Invalid value: ["Terminating","NotTerminating"]: conflicting scopes']),
    ({"hard": {"limits.nvidia.com/gpu": "1"}}, []),  # accepted, though nothing counts it
])
def test_quota_validation(spec, errors):
    assert [str(e) for e in resourcequotas.validate({"spec": spec}, None)] == errors


@pytest.mark.parametrize("selector,priority_class,matches", [
    ({"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}, "high", True),
    ({"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}, "low", False),
    ({"scopeName": "PriorityClass", "operator": "NotIn", "values": ["high"]}, "", True),
    ({"scopeName": "PriorityClass", "operator": "Exists"}, "", False),
])
def test_priority_class_scope(selector, priority_class, matches):
    p = pod()
    if priority_class:
        p["spec"]["priorityClassName"] = priority_class
    assert evaluators.pod_matches_scope(selector, p) is matches


def test_an_update_is_charged_only_when_it_makes_a_pod_terminating():
    """``podEvaluator.Handles``: a pod update counts only when ``activeDeadlineSeconds`` moves it between the
    Terminating and NotTerminating scopes; a Terminating quota then charges it."""
    terminating = quota({"pods": "0"}, scopes=["Terminating"])
    old = pod()
    old["metadata"]["resourceVersion"] = "7"
    relabelled = pod()
    assert quotaadmission.check_request(POD, relabelled, old, [terminating], NOW) == []
    deadline = pod()
    deadline["spec"]["activeDeadlineSeconds"] = 60
    with pytest.raises(StatusError) as exc:
        quotaadmission.check_request(POD, deadline, old, [terminating], NOW)
    assert exc.value.status["message"] == ('pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: '
                                           "pods=0, limited: pods=0")
