"""Small builders for Node and Pod dicts shaped as the Kubernetes API returns them (test helpers)."""

from __future__ import annotations

from collections.abc import Mapping

from mockgpu.sched.snapshot import NodeInfo


def node(name: str, alloc: Mapping[str, object], *, labels: Mapping[str, str] | None = None,
         taints: list[dict] | None = None, unschedulable: bool = False, pods: object = "32") -> dict:
    """A Node; ``pods`` allocatable defaults to 32 as upstream's ``st.MakeNode().Capacity`` does."""
    allocatable = {"pods": pods, **{k: str(v) for k, v in alloc.items()}}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"taints": list(taints or []), "unschedulable": unschedulable},
            "status": {"allocatable": allocatable, "capacity": dict(allocatable)}}


def container(requests: Mapping[str, object] | None = None, **extra: object) -> dict:
    """A container; ``None`` requests means the container sets none (non-zero defaults apply)."""
    c: dict = {"name": "c", "image": "busybox", **extra}
    if requests is not None:
        c["resources"] = {"requests": {k: str(v) for k, v in requests.items()}}
    return c


def pod(name: str = "p", *containers: dict, node_name: str = "", priority: int | None = None,
        init: list[dict] | None = None, **spec: object) -> dict:
    """A Pod with the given containers (none → a pod with zero containers, as ``st.MakePod().Obj()``)."""
    s: dict = {"containers": list(containers), **spec}
    if node_name:
        s["nodeName"] = node_name
    if priority is not None:
        s["priority"] = priority
    if init:
        s["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": s}


def req_pod(name: str = "p", *requests: Mapping[str, object], **kw: object) -> dict:
    """A pod with one container per request map (upstream's ``st.MakePod().Req(...).Req(...)``)."""
    return pod(name, *(container(r) for r in requests), **kw)


def infos(nodes: list[dict], pods: list[dict] = ()) -> list[NodeInfo]:  # type: ignore[assignment]
    """NodeInfos with the pods (``spec.nodeName``) assigned to their nodes."""
    return [NodeInfo.from_node(n, [p for p in pods if p["spec"].get("nodeName") == n["metadata"]["name"]])
            for n in nodes]
