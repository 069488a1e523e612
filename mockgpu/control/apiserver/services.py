"""The ``kubernetes`` Service in ``default`` that every cluster has.

kube-apiserver's bootstrap controller keeps a ``kubernetes`` Service pointing at itself; ``kubectl get all``
and ``kubectl cluster-info`` list Services. The embedded server creates it at start, as the bootstrap controller
does: the first address of the service CIDR (``servicestrategy.SERVICE_CIDR``, 10.96.0.0/16 as the upstream backend
and kind), and a ``targetPort`` that is the port the embedded server really listens on (updated at each start, as
the bootstrap controller reconciles it). Other Services are the users' (``servicestrategy``: allocation and
validation); there is no service data path, so nothing routes to them.
"""

from __future__ import annotations

import copy
from typing import Any

from mockgpu.control.apiserver.discovery import RESOURCES
from mockgpu.control.apiserver.handlers import ResourceAPI

KUBERNETES_CLUSTER_IP = "10.96.0.1"


def kubernetes_service(port: int) -> dict[str, Any]:
    """The ``default/kubernetes`` Service as a kubeadm cluster has it, its target the server's own port."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": KUBERNETES_CLUSTER_IP, "clusterIPs": [KUBERNETES_CLUSTER_IP],
                     "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
                     "sessionAffinity": "None", "type": "ClusterIP"},
            "status": {"loadBalancer": {}}}


def ensure_kubernetes_service(api: ResourceAPI, port: int) -> None:
    """Create the Service, or point an existing one at ``port`` (a resumed cluster listens elsewhere)."""
    info = RESOURCES["services"]
    current = api.store.get("services", "default", "kubernetes")
    if current is None:
        api.create(info, "default", kubernetes_service(port))
        return
    if current.get("spec", {}).get("ports", [{}])[0].get("targetPort") != port:
        new = copy.deepcopy(current)
        new["spec"]["ports"] = kubernetes_service(port)["spec"]["ports"]
        api.update(info, "default", "kubernetes", new)
