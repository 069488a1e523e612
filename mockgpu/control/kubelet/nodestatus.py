"""The Node object a fake kubelet registers and keeps up to date (``pkg/kubelet/nodestatus`` in small).

* labels: the spec's, the well-known ``kubernetes.io/hostname|os|arch`` (and their ``beta.`` twins),
  ``mockgpu.io/node=<spec node>``, ``mockgpu.io/pool``, plus GPU Feature Discovery's ``nvidia.com/*``
  labels from ``gfd_labels`` and NFD's ``nvidia.com/gpu.present`` (as the kind backend sets them);
* capacity/allocatable: cpu, memory, pods and ephemeral-storage from the spec; extended resources only
  as the device manager reports them from ListAndWatch (so a vanished plugin shows allocatable 0);
* conditions: MemoryPressure/DiskPressure/PIDPressure False and Ready True with kubelet's reasons and
  messages, ``lastHeartbeatTime`` refreshed on every status update, ``lastTransitionTime`` kept.
Simplified: no system reserved (allocatable cpu/memory = capacity), no images, no volumes.
"""

from __future__ import annotations

import platform
import uuid
from typing import Any

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.apimachinery.version import GIT_VERSION
from mockgpu.config.clusterspec import ClusterSpec, NodeSpec
from mockgpu.config.inventory import node_inventory
from mockgpu.config.nodelabels import kubelet_labels
from mockgpu.deviceplugin.labels import gfd_labels

KUBELET_VERSION = GIT_VERSION  # the control plane's release: kubelet and API server never skew here
KUBELET_PORT = 10250  # upstream's default; where the API server finds the kubelet's API (logs)
PRESENT_LABEL = "nvidia.com/gpu.present"

_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def node_labels(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    labels = kubelet_labels(node)
    if node.gpu is not None and node.gpu.count > 0:
        labels[PRESENT_LABEL] = "true"
        labels |= {k: str(v) for k, v in gfd_labels(node_inventory(spec, node.name),
                                                     node.gpu.devicePluginConfig).items()}
    return labels


def base_resources(node: NodeSpec) -> dict[str, str]:
    return {"cpu": str(node.cpu), "memory": str(node.memory), "pods": str(node.pods), "ephemeral-storage": "100Gi"}


def resources(node: NodeSpec, device_capacity: dict[str, int],
              device_allocatable: dict[str, int]) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable): the spec's base resources plus what the device plugins advertise."""
    base = base_resources(node)
    cap = {**base, **{k: str(v) for k, v in sorted(device_capacity.items())}}
    alloc = {**base, **{k: str(v) for k, v in sorted(device_allocatable.items())}}
    return cap, alloc


def conditions(previous: list[dict[str, Any]] | None, now: str | None = None) -> list[dict[str, Any]]:
    """The four node conditions with a fresh heartbeat; transition times survive from ``previous``."""
    now = now or rfc3339()
    prev = {c.get("type"): c for c in previous or []}
    out = []
    for typ, status, reason, message in _CONDITIONS:
        p = prev.get(typ) or {}
        since = p.get("lastTransitionTime") if p.get("status") == status else None
        out.append({"type": typ, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": since or now,
                    "reason": reason, "message": message})
    return out


def node_info(name: str) -> dict[str, str]:
    ident = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.mockgpu.io"))
    return {"machineID": ident.replace("-", ""), "systemUUID": ident, "bootID": ident,
            "kernelVersion": platform.release(), "osImage": "mockgpu fake node",
            "containerRuntimeVersion": "mockgpu://0.1.0", "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "",
            "operatingSystem": "linux", "architecture": "amd64"}


def node_status(node: NodeSpec, device_capacity: dict[str, int], device_allocatable: dict[str, int],
                previous_conditions: list[dict[str, Any]] | None = None, kubelet_port: int = KUBELET_PORT
                ) -> dict[str, Any]:
    cap, alloc = resources(node, device_capacity, device_allocatable)
    return {
        "capacity": cap, "allocatable": alloc, "conditions": conditions(previous_conditions),
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": node.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}}, "nodeInfo": node_info(node.name),
    }


def node_object(spec: ClusterSpec, node: NodeSpec, device_capacity: dict[str, int] | None = None,
                device_allocatable: dict[str, int] | None = None, kubelet_port: int = KUBELET_PORT) -> dict[str, Any]:
    """The Node a kubelet registers: labels, taints, and a status with what is known so far."""
    taints = [{k: v for k, v in t.model_dump().items() if v != ""} for t in node.taints]
    node_spec: dict[str, Any] = {"providerID": f"mockgpu://{node.name}"}
    if taints:
        node_spec["taints"] = taints
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": node_labels(spec, node),
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": node_spec,
        "status": node_status(node, device_capacity or {}, device_allocatable or {}, kubelet_port=kubelet_port),
    }
