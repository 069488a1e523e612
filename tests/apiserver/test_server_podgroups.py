"""scheduling.k8s.io/v1beta1 over HTTP with the official client: served only with the GenericWorkload gate of the
cluster spec (discovery, routes), PodGroups and Workloads created, listed, printed as a Table, their status written
through /status."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException


def test_without_the_gate_the_group_is_not_served(raw):
    code, groups = raw.json("GET", "/apis")
    assert "scheduling.k8s.io" not in {g["name"] for g in groups["groups"]}
    code, _ = raw.json("GET", "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups")
    assert code == 404


def test_podgroups_and_workloads_with_the_gate(gated_cluster, gated_raw):
    raw, gated = gated_raw, gated_cluster
    code, group = raw.json("GET", "/apis/scheduling.k8s.io")
    assert code == 200 and group["preferredVersion"]["groupVersion"] == "scheduling.k8s.io/v1beta1"
    code, resources = raw.json("GET", "/apis/scheduling.k8s.io/v1beta1")
    assert sorted(r["name"] for r in resources["resources"]) == ["podgroups", "podgroups/status", "workloads"]
    api_client = gated.api_client()
    try:
        sched = client.SchedulingV1beta1Api(api_client)
        body = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "train"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
        pg = sched.create_namespaced_pod_group("default", body)
        assert pg.spec.scheduling_policy.gang.min_count == 2
        assert pg.spec.disruption_mode.single is not None
        with pytest.raises(ApiException) as exc:
            sched.create_namespaced_pod_group("default", {**body, "metadata": {"name": "bad"},
                                                          "spec": {"schedulingPolicy": {"gang": {"minCount": -1}}}})
        assert exc.value.status == 422
        assert json.loads(exc.value.body)["message"] == (
            'PodGroup.scheduling.k8s.io "bad" is invalid: spec.schedulingPolicy.gang.minCount: Invalid value: -1: '
            "must be greater than or equal to 1")
        wl = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "job"},
              "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]}}
        assert sched.create_namespaced_workload("default", wl).spec.pod_group_templates[0].name == "workers"
        status = {"status": {"conditions": [{
            "type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled", "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
        sched.patch_namespaced_pod_group_status("train", "default", status)
        code, table = raw.json("GET", "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups",
                               headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
        assert code == 200
        assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Policy", "Workload", "Status", "Age"]
        assert table["rows"][0]["cells"][:4] == ["train", "Gang", "<none>", "Scheduled"]
        core = client.CoreV1Api(api_client)
        pod = core.create_namespaced_pod("default", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w0"},
            "spec": {"schedulingGroup": {"podGroupName": "train"}, "schedulerName": "nobody",
                     "containers": [{"name": "c", "image": "busybox"}]}})
        assert pod.spec.scheduling_group.pod_group_name == "train"
    finally:
        api_client.close()
