"""The ``kubernetes`` Service: how it is kept and how ``kubectl get services`` prints Services."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mockgpu.control.apiserver.discovery import RESOURCES
from mockgpu.control.apiserver.services import ensure_kubernetes_service
from mockgpu.control.apiserver.tables import to_table


@pytest.fixture
def api(resource_api):
    return resource_api


def test_kubernetes_service_is_created_then_follows_the_port(api):
    ensure_kubernetes_service(api, 40001)
    svc = api.store.get("services", "default", "kubernetes")
    assert svc["spec"]["clusterIP"] == "10.96.0.1" and svc["spec"]["ports"] == [
        {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 40001}]
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    rv = api.store.rv
    ensure_kubernetes_service(api, 40001)
    assert api.store.rv == rv  # nothing to reconcile: no write
    ensure_kubernetes_service(api, 40002)
    assert api.store.get("services", "default", "kubernetes")["spec"]["ports"][0]["targetPort"] == 40002
    assert api.store.get("services", "default", "kubernetes")["metadata"]["uid"] == svc["metadata"]["uid"]


def test_services_in_discovery_as_upstream():
    info = RESOURCES["services"]
    assert info.verbs == ("create", "delete", "get", "list", "patch", "update", "watch")  # no deletecollection
    assert info.short_names == ("svc",) and info.categories == ("all",) and info.has("status")


@pytest.mark.parametrize(("spec", "status", "cells"), [
    ({"type": "ClusterIP", "clusterIP": "10.96.0.1", "ports": [{"port": 443, "protocol": "TCP"}]}, {},
     ["ClusterIP", "10.96.0.1", "<none>", "443/TCP"]),
    ({"type": "NodePort", "clusterIP": "10.96.3.4", "ports": [{"port": 80, "nodePort": 30080}, {"port": 53,
                                                                                                "protocol": "UDP"}],
      "selector": {"app": "web", "tier": "a"}}, {}, ["NodePort", "10.96.3.4", "<none>", "80:30080/TCP,53/UDP"]),
    ({"type": "LoadBalancer", "clusterIP": "10.96.0.9", "ports": []}, {}, ["LoadBalancer", "10.96.0.9", "<pending>",
                                                                           "<none>"]),
    ({"type": "LoadBalancer", "clusterIP": "10.96.0.9", "ports": [{"port": 80}]},
     {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}, ["LoadBalancer", "10.96.0.9", "1.2.3.4", "80/TCP"]),
    ({"type": "ClusterIP", "clusterIP": "None", "ports": [{"port": 80}]}, {}, ["ClusterIP", "None", "<none>",
                                                                             "80/TCP"]),
], ids=["cluster-ip", "node-port", "lb-pending", "lb-ingress", "headless"])
def test_service_rows_as_upstream_prints_them(spec, status, cells):
    svc = {"metadata": {"name": "s", "creationTimestamp": "2026-12-02T15:00:00Z"}, "spec": spec, "status": status}
    table = to_table("services", [svc], now=datetime(2026, 12, 2, 15, 0, 30, tzinfo=UTC))
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Type", "Cluster-IP", "External-IP",
                                                               "Port(s)", "Age", "Selector"]
    row = table["rows"][0]["cells"]
    assert row[1:5] == cells and row[5] == "30s"
    assert row[6] == ("app=web,tier=a" if spec.get("selector") else "<none>")
