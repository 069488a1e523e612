"""The read-only ``kubernetes`` Service over HTTP, with the official client."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException


def test_kubernetes_service_targets_the_served_port(core, cluster):
    svc = core.read_namespaced_service("kubernetes", "default")
    assert svc.spec.cluster_ip == "10.96.0.1" and svc.spec.type == "ClusterIP"
    assert svc.spec.ports[0].port == 443 and svc.spec.ports[0].target_port == int(cluster.url.rsplit(":", 1)[1])
    assert [s.metadata.name for s in core.list_service_for_all_namespaces().items] == ["kubernetes"]
    assert core.list_namespaced_service("kube-system").items == []


@pytest.mark.parametrize("call", ["create", "delete"], ids=["create", "delete"])
def test_services_cannot_be_written(core, call):
    with pytest.raises(ApiException) as exc:
        if call == "create":
            core.create_namespaced_service("default", {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
        else:
            core.delete_namespaced_service("kubernetes", "default")
    assert exc.value.status == 405
    assert json.loads(exc.value.body)["message"] == f'{call} is not supported on resources of kind "services"'
    assert core.read_namespaced_service("kubernetes", "default").metadata.name == "kubernetes"
