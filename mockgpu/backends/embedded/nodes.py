"""The Node objects of a spec's nodes, registered when a cluster is created (no kubelet yet).

``gpu_resources`` is the one place that decides what GPU resources a node advertises before a
kubelet and device plugin take over; swap it when they do.
"""

from __future__ import annotations

import platform
import uuid
from typing import Any

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.config import ClusterSpec, NodeSpec
from mockgpu.config.nodelabels import kubelet_labels
from mockgpu.control.kubelet.nodestatus import KUBELET_VERSION


def gpu_resources(node: NodeSpec) -> dict[str, str]:
    """Extended resources for the node's GPUs: ``nvidia.com/gpu`` = the physical GPU count, for now."""
    if node.gpu is None or node.gpu.count == 0:
        return {}
    return {"nvidia.com/gpu": str(node.gpu.count)}


def node_labels(node: NodeSpec) -> dict[str, str]:
    return kubelet_labels(node)


def _condition(typ: str, status: str, reason: str, message: str, now: str) -> dict[str, str]:
    return {"type": typ, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def node_object(node: NodeSpec, now: str | None = None) -> dict[str, Any]:
    """A Ready v1 Node with the node's labels, taints, capacity and allocatable."""
    now = now or rfc3339()
    resources = {"cpu": node.cpu, "memory": node.memory, "pods": str(node.pods), "ephemeral-storage": "100Gi",
                 **gpu_resources(node)}
    taints = [{k: v for k, v in t.model_dump().items() if v != ""} for t in node.taints]
    ident = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{node.name}.mockgpu.io"))
    spec: dict[str, Any] = {"providerID": f"mockgpu://{node.name}"}
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": node_labels(node),
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": spec,
        "status": {
            "capacity": dict(resources), "allocatable": dict(resources),
            "conditions": [
                _condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                           "kubelet has sufficient memory available", now),
                _condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure", now),
                _condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available",
                           now),
                _condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", now),
            ],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": node.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": ident.replace("-", ""), "systemUUID": ident, "bootID": ident,
                         "kernelVersion": platform.release(), "osImage": "mockgpu fake node",
                         "containerRuntimeVersion": "mockgpu://0.1.0", "kubeletVersion": KUBELET_VERSION,
                         "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
        },
    }


def spec_nodes(spec: ClusterSpec) -> list[dict[str, Any]]:
    return [node_object(n) for n in spec.nodes()]
