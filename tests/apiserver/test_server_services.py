"""Services over HTTP, with the official client: the ``kubernetes`` Service and a user's."""

from __future__ import annotations

import ipaddress
import json

import pytest
from kubernetes.client.exceptions import ApiException


def test_kubernetes_service_targets_the_served_port(core, cluster):
    svc = core.read_namespaced_service("kubernetes", "default")
    assert svc.spec.cluster_ip == "10.96.0.1" and svc.spec.type == "ClusterIP"
    assert svc.spec.ports[0].port == 443 and svc.spec.ports[0].target_port == int(cluster.url.rsplit(":", 1)[1])
    assert [s.metadata.name for s in core.list_service_for_all_namespaces().items] == ["kubernetes"]
    assert core.list_namespaced_service("kube-system").items == []


def test_a_service_is_created_with_an_address_and_node_ports_then_released(core):
    created = core.create_namespaced_service("default", {"metadata": {"name": "web"}, "spec": {
        "type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    ip, node_port = created.spec.cluster_ip, created.spec.ports[0].node_port
    assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/16") and ip != "10.96.0.1"
    assert created.spec.cluster_ips == [ip] and created.spec.ip_families == ["IPv4"]
    assert 30000 <= node_port <= 32767 and created.spec.ports[0].protocol == "TCP"
    with pytest.raises(ApiException) as exc:  # the same address for another Service: 422, as upstream
        core.create_namespaced_service("default", {"metadata": {"name": "other"}, "spec": {
            "clusterIP": ip, "ports": [{"port": 80}]}})
    assert exc.value.status == 422
    assert json.loads(exc.value.body)["message"] == (
        f'Service "other" is invalid: spec.clusterIPs: Invalid value: ["{ip}"]: failed to allocate IP '
        f"{ip}: provided IP is already allocated")
    core.delete_namespaced_service("web", "default")
    again = core.create_namespaced_service("default", {"metadata": {"name": "other"}, "spec": {
        "type": "NodePort", "clusterIP": ip, "ports": [{"port": 80, "nodePort": node_port}]}})
    assert again.spec.cluster_ip == ip and again.spec.ports[0].node_port == node_port  # released by the delete
    core.delete_namespaced_service("other", "default")


def test_services_have_no_deletecollection(core):
    with pytest.raises(ApiException) as exc:
        core.delete_collection_namespaced_service("default")
    assert exc.value.status == 405
    assert json.loads(exc.value.body)["message"] == 'deletecollection is not supported on resources of kind "services"'
    assert core.read_namespaced_service("kubernetes", "default").metadata.name == "kubernetes"
