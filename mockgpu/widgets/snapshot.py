"""One read of the cluster through the API, as plain dicts, and the small helpers every view model needs.

A ``Snapshot`` is what the widgets draw from: the Node, Pod and Event objects exactly as the API server
returns them (camelCase JSON) plus each node's published GPU state (ConfigMap ``gpu-state-<node>`` in
``mockgpu-system``, ``data["state.json"]``). The widgets never keep cluster state between redraws: every
redraw starts from a fresh snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

GPU_STATE_NAMESPACE = "mockgpu-system"
GPU_STATE_LABEL = "mockgpu.io/gpu-state"
GPU_STATE_KEY = "state.json"
GPU_RESOURCE_PREFIX = "nvidia.com/"
BOUND_TIME = "mockgpu.io/bound-time"
FIRST_UNSCHEDULABLE_TIME = "mockgpu.io/first-unschedulable-time"
TERMINAL_PHASES = ("Succeeded", "Failed")

Obj = dict[str, Any]


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp (``2026-12-02T15:29:26Z``, with or without fraction) as an aware datetime."""
    if not text:
        return None
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def pod_key(pod: Mapping) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def pod_phase(pod: Mapping) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_terminal(pod: Mapping) -> bool:
    return pod_phase(pod) in TERMINAL_PHASES


def annotations(obj: Mapping) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def gpu_requests(pod: Mapping) -> dict[str, int]:
    """``nvidia.com/*`` resources a pod asks for (limits, as extended resources must be; requests if no limit)."""
    out: dict[str, int] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        merged = {**(res.get("requests") or {}), **(res.get("limits") or {})}
        for name, qty in merged.items():
            if name.startswith(GPU_RESOURCE_PREFIX):
                try:
                    out[name] = out.get(name, 0) + int(str(qty))
                except ValueError:
                    continue
    return out


def node_gpu_allocatable(node: Mapping) -> dict[str, int]:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    out = {}
    for name, qty in alloc.items():
        if name.startswith(GPU_RESOURCE_PREFIX):
            try:
                out[name] = int(str(qty))
            except ValueError:
                continue
    return out


JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
TEMPLATE_HASH_LABEL = "pod-template-hash"


def restart_count(pod: Mapping) -> int:
    """How often the kubelet restarted the pod's containers (``status.containerStatuses[].restartCount``)."""
    return sum(int(cs.get("restartCount") or 0) for cs in (pod.get("status") or {}).get("containerStatuses") or [])


def pod_owner(pod: Mapping) -> str:
    """The workload a pod belongs to, as ``Kind name`` ('' for a bare pod): its controller ownerReference,
    with a ReplicaSet named ``<deployment>-<pod-template-hash>`` shown as that Deployment (the Deployment
    controller's naming, on both backends), so a view needs no ReplicaSet read to name the Deployment."""
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    if not ref:
        return ""
    kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    suffix = f"-{((pod.get('metadata') or {}).get('labels') or {}).get(TEMPLATE_HASH_LABEL, '')}"
    if kind == "ReplicaSet" and len(suffix) > 1 and name.endswith(suffix):
        return f"Deployment {name.removesuffix(suffix)}"
    return f"{kind} {name}"


def node_ready(node: Mapping) -> bool:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def condition(pod: Mapping, typ: str) -> Mapping | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == typ:
            return c
    return None


def parse_gpu_state(configmap: Mapping) -> Obj | None:
    """The ``state.json`` of a ``gpu-state-<node>`` ConfigMap, or None when it is missing or not JSON."""
    raw = ((configmap.get("data") or {}).get(GPU_STATE_KEY))
    if not raw:
        return None
    try:
        state = json.loads(raw)
    except ValueError:
        return None
    return state if isinstance(state, dict) else None


@dataclass(frozen=True)
class Snapshot:
    """Nodes, pods, events, per-node GPU state and ResourceClaims as read at ``taken_at``."""

    nodes: tuple[Obj, ...] = ()
    pods: tuple[Obj, ...] = ()
    events: tuple[Obj, ...] = ()
    gpu_states: Mapping[str, Obj] = field(default_factory=dict)  # node name → state.json
    taken_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    claims: Mapping[str, Obj] = field(default_factory=dict)  # "namespace/name" → ResourceClaim (DRA)

    @classmethod
    def of(cls, nodes: Iterable[Obj] = (), pods: Iterable[Obj] = (), events: Iterable[Obj] = (),
           configmaps: Iterable[Obj] = (), taken_at: datetime | None = None,
           claims: Iterable[Obj] = ()) -> Snapshot:
        """Build from API lists; ConfigMaps that are no GPU state are ignored."""
        states = {}
        for cm in configmaps:
            state = parse_gpu_state(cm)
            if state is not None:
                node = state.get("node") or (cm.get("metadata") or {}).get("name", "").removeprefix("gpu-state-")
                states[str(node)] = state
        nodes = sorted(nodes, key=lambda n: n["metadata"]["name"])
        pods = sorted(pods, key=pod_key)
        return cls(tuple(nodes), tuple(pods), tuple(events), states, taken_at or datetime.now(UTC),
                   {pod_key(c): c for c in claims})

    def pod(self, key: str) -> Obj | None:
        """A pod by ``namespace/name`` (or bare name in ``default``)."""
        key = key if "/" in key else f"default/{key}"
        return next((p for p in self.pods if pod_key(p) == key), None)

    def pods_on(self, node: str) -> list[Obj]:
        return [p for p in self.pods if (p.get("spec") or {}).get("nodeName") == node]

    def events_for(self, pod: Mapping) -> list[Obj]:
        """Events about this pod, oldest first (matched by namespace, name and, when both have it, uid)."""
        meta = pod.get("metadata") or {}
        out = []
        for ev in self.events:
            obj = ev.get("involvedObject") or ev.get("regarding") or {}
            if obj.get("kind", "Pod") != "Pod" or obj.get("name") != meta.get("name"):
                continue
            if obj.get("namespace", meta.get("namespace")) != meta.get("namespace"):
                continue
            if obj.get("uid") and meta.get("uid") and obj["uid"] != meta["uid"]:
                continue
            out.append(ev)
        return sorted(out, key=event_time)


def event_time(ev: Mapping) -> datetime:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        t = parse_time(ev.get(key))
        if t:
            return t
    return parse_time((ev.get("metadata") or {}).get("creationTimestamp")) or datetime.min.replace(tzinfo=UTC)
