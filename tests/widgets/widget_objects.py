"""Hand-made API objects (as the API server returns them) for the widget view-model tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mockgpu.backends.embedded.nodes import node_object
from mockgpu.config import load_spec
from mockgpu.widgets.clustermap import REPLICA_SEP

REPO = Path(__file__).resolve().parents[2]


def spec_nodes(spec: str) -> list[dict[str, Any]]:
    return [node_object(n, "2026-12-02T10:00:00Z") for n in load_spec(REPO / "clusters" / spec).nodes()]


def pod(name: str, gpus: int = 1, *, resource: str = "nvidia.com/gpu", node: str | None = None,
        phase: str = "Pending", created: str = "2026-12-02T10:00:00Z", bound: str | None = None,
        exit_code: int | None = None, finished: str | None = None, annotations: dict | None = None,
        conditions: list | None = None, namespace: str = "default", scheduler: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "x",
                                            "resources": {"limits": {resource: str(gpus)},
                                                          "requests": {resource: str(gpus)}}}]}
    if node:
        spec["nodeName"] = node
    if scheduler:
        spec["schedulerName"] = scheduler
    ann = dict(annotations or {})
    if bound:
        ann["mockgpu.io/bound-time"] = bound
    status: dict[str, Any] = {"phase": phase, "conditions": list(conditions or [])}
    if exit_code is not None:
        status["containerStatuses"] = [{"name": "main", "state": {"terminated": {
            "exitCode": exit_code, "reason": "Error" if exit_code else "Completed",
            "finishedAt": finished or "2026-12-02T10:00:00Z"}}}]
    elif phase == "Running":
        status["containerStatuses"] = [{"name": "main", "state": {"running": {"startedAt": bound or created}}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "creationTimestamp": created,
                         "annotations": ann},
            "spec": spec, "status": status}


def gpu(index: int, *, total: int = 81920, used: int = 0, replicas: int = 1, mig: list | None = None,
        peers: tuple[int, ...] = ()) -> dict[str, Any]:
    return {"index": index, "uuid": f"GPU-{index:08d}-0000-0000-0000-000000000000",
            "product": "NVIDIA A100-SXM4-80GB", "model": "A100-SXM4-80GB", "memoryTotalMiB": total,
            "memoryUsedMiB": used, "utilization": 0, "healthy": True, "xids": [], "numa": 0,
            "nvlinkPeers": list(peers), "replicas": replicas, "mig": mig or []}


def mig(uuid: str, profile: str, start: int, size: int, total: int, used: int = 0) -> dict[str, Any]:
    return {"uuid": uuid, "profile": profile, "migIndex": start, "start": start, "size": size,
            "memoryTotalMiB": total, "memoryUsedMiB": used, "healthy": True}


def alloc(pod_name: str, resource: str, uuids: list[str], replicas: list[int] | None = None) -> dict[str, Any]:
    ids = [f"{u}{REPLICA_SEP}{r}" for u, r in zip(uuids, replicas, strict=True)] if replicas else list(uuids)
    return {"namespace": "default", "pod": pod_name, "container": "main", "resource": resource,
            "deviceIds": ids, "uuids": uuids}


def proc(pod_name: str, device: str, gpu_index: int, used: int, pid: int = 100) -> dict[str, Any]:
    return {"device": device, "gpuIndex": gpu_index, "pid": pid, "namespace": "default", "pod": pod_name,
            "container": "main", "usedMiB": used}


def state_cm(node: str, gpus: list, allocations: list = (), processes: list = (), ooms: list = ()) -> dict:
    state = {"node": node, "cluster": "test", "time": "2026-12-02T10:00:00Z", "gpus": gpus,
             "processes": list(processes), "allocations": list(allocations), "oomEvents": list(ooms)}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"gpu-state-{node}", "namespace": "mockgpu-system",
                         "labels": {"mockgpu.io/gpu-state": "true"}},
            "data": {"state.json": json.dumps(state)}}


def event(pod_name: str, reason: str, message: str, when: str, type_: str = "Warning") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{pod_name}.{when}", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod_name, "uid": f"uid-{pod_name}"},
            "reason": reason, "message": message, "type": type_, "lastTimestamp": when}
