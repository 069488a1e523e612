"""The cluster map's view model: nodes as cards, GPUs as tiles, MIG slices at their placement, replicas stacked.

Who holds which device comes from the node's published GPU state (``allocations``: the device IDs the
kubelet got from the device plugin's ``Allocate``); memory per holder from its ``processes``. A node
without published state (e.g. a kind node without the publisher) still shows its GPU pods, listed as
"devices not published", from the Pod objects alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mockgpu.widgets.colors import pod_color
from mockgpu.widgets.snapshot import (
    GPU_RESOURCE_PREFIX,
    Obj,
    Snapshot,
    gpu_requests,
    is_terminal,
    node_gpu_allocatable,
    node_ready,
    pod_key,
    pod_owner,
    pod_phase,
    restart_count,
)

MIG_SLOTS = 8  # memory slices of an A100/H100 in NVIDIA's placement tables
REPLICA_SEP = "::"


@dataclass(frozen=True)
class Holder:
    """A pod on a device (a whole GPU, one replica of it, or a MIG instance)."""

    pod: str  # namespace/name
    color: str
    phase: str
    resource: str
    device_id: str
    used_mib: int = 0
    owner: str = ""  # "Deployment inference", "Job trainer"; '' for a bare pod
    restarts: int = 0  # restartCount: a crash-looping replica keeps its device between restarts

    @property
    def name(self) -> str:
        return self.pod.split("/", 1)[-1]

    @property
    def replica(self) -> int | None:
        tail = self.device_id.rpartition(REPLICA_SEP)[2]
        return int(tail) if REPLICA_SEP in self.device_id and tail.isdigit() else None


@dataclass(frozen=True)
class MigSlice:
    uuid: str
    profile: str
    start: int
    size: int
    memory_total_mib: int
    memory_used_mib: int
    healthy: bool
    holders: tuple[Holder, ...]


@dataclass(frozen=True)
class GpuTile:
    index: int
    uuid: str
    product: str
    memory_total_mib: int
    memory_used_mib: int
    utilization: float
    healthy: bool
    replicas: int  # advertised replicas (1 = not time-sliced)
    numa: int | None
    nvlink_peers: tuple[int, ...]
    holders: tuple[Holder, ...]  # whole-GPU or replica holders
    mig: tuple[MigSlice, ...]

    @property
    def mode(self) -> str:
        if self.mig:
            return "MIG"
        return f"time-sliced x{self.replicas}" if self.replicas > 1 else "whole"

    @property
    def busy(self) -> bool:
        return bool(self.holders) or any(s.holders for s in self.mig)


@dataclass(frozen=True)
class NodeCard:
    name: str
    ready: bool
    product: str
    resources: Mapping[str, tuple[int, int]]  # resource → (allocatable, requested by running pods)
    gpus: tuple[GpuTile, ...]
    unplaced: tuple[Holder, ...]  # GPU pods on the node whose devices are not (yet) published
    published: bool  # whether the node's GPU state was found


@dataclass(frozen=True)
class ClusterMapModel:
    nodes: tuple[NodeCard, ...]
    pending: tuple[Holder, ...]  # GPU pods not bound to any node

    def describe(self) -> str:
        """Plain text, one line per node and GPU (for check cells and tests)."""
        lines = []
        for n in self.nodes:
            res = ", ".join(f"{r} {used}/{alloc}" for r, (alloc, used) in sorted(n.resources.items()))
            lines.append(f"{n.name} ({n.product or 'no GPU'}){'' if n.ready else ' NotReady'}: {res or '-'}")
            for g in n.gpus:
                lines.append(f"  GPU {g.index} [{g.mode}] {g.memory_used_mib}/{g.memory_total_mib} MiB: "
                             + (", ".join(_holder_text(h) for h in g.holders) or "free"))
                for s in g.mig:
                    lines.append(f"    MIG {s.profile} @{s.start}+{s.size}: "
                                 + (", ".join(_holder_text(h) for h in s.holders) or "free"))
            for h in n.unplaced:
                lines.append(f"  {h.pod} holds {h.device_id} (devices not published)")
        if self.pending:
            lines.append("pending: " + ", ".join(f"{h.pod} ({h.device_id})" for h in self.pending))
        return "\n".join(lines)


def _holder_text(h: Holder) -> str:
    rep = f" replica {h.replica}" if h.replica is not None else ""
    restarts = f" ({h.restarts} restarts)" if h.restarts else ""
    return f"{h.name}{rep}{restarts}"


def _pod_index(snap: Snapshot) -> dict[str, Obj]:
    return {pod_key(p): p for p in snap.pods}


def device_holders(state: Mapping, pods: Mapping[str, Obj]) -> dict[str, list[Holder]]:
    """uuid (GPU or MIG) → the pods holding it, from the state's allocations and processes."""
    used: dict[tuple[str, str], int] = {}
    for proc in state.get("processes") or []:
        k = (f"{proc.get('namespace')}/{proc.get('pod')}", str(proc.get("device") or ""))
        used[k] = used.get(k, 0) + int(proc.get("usedMiB") or 0)
    gpu_uuid_by_index = {g.get("index"): g.get("uuid") for g in state.get("gpus") or []}
    for proc in state.get("processes") or []:  # processes may name the GPU by index only
        if not proc.get("device") and proc.get("gpuIndex") in gpu_uuid_by_index:
            k = (f"{proc.get('namespace')}/{proc.get('pod')}", str(gpu_uuid_by_index[proc["gpuIndex"]]))
            used[k] = used.get(k, 0) + int(proc.get("usedMiB") or 0)
    out: dict[str, list[Holder]] = {}
    for a in state.get("allocations") or []:
        key = f"{a.get('namespace')}/{a.get('pod')}"
        pod = pods.get(key)
        if pod is not None and is_terminal(pod):
            continue  # the kubelet frees a finished pod's devices; a stale entry is not drawn as holding
        phase = pod_phase(pod) if pod is not None else "Gone"
        ids = list(a.get("deviceIds") or [])
        uuids = list(a.get("uuids") or [])
        if len(ids) != len(uuids):
            ids = list(uuids)
        for dev_id, uuid in zip(ids, uuids, strict=True):
            out.setdefault(uuid, []).append(Holder(key, pod_color(key), phase, str(a.get("resource") or ""),
                                                   str(dev_id), used.get((key, uuid), 0),
                                                   pod_owner(pod) if pod else "", restart_count(pod) if pod else 0))
    for hs in out.values():
        hs.sort(key=lambda h: (h.replica if h.replica is not None else -1, h.pod))
    return out


def _tile(g: Mapping, holders: Mapping[str, list[Holder]]) -> GpuTile:
    slices = tuple(sorted((MigSlice(str(m.get("uuid")), str(m.get("profile")), int(m.get("start", 0)),
                                    int(m.get("size", 1)), int(m.get("memoryTotalMiB") or 0),
                                    int(m.get("memoryUsedMiB") or 0), bool(m.get("healthy", True)),
                                    tuple(holders.get(str(m.get("uuid")), ())))
                           for m in g.get("mig") or []), key=lambda s: s.start))
    return GpuTile(int(g.get("index", 0)), str(g.get("uuid")), str(g.get("product") or g.get("model") or ""),
                   int(g.get("memoryTotalMiB") or 0), int(g.get("memoryUsedMiB") or 0),
                   float(g.get("utilization") or 0), bool(g.get("healthy", True)), int(g.get("replicas") or 1),
                   g.get("numa"), tuple(g.get("nvlinkPeers") or ()), tuple(holders.get(str(g.get("uuid")), ())),
                   slices)


def node_card(node: Obj, snap: Snapshot, pods: Mapping[str, Obj]) -> NodeCard:
    name = node["metadata"]["name"]
    labels = node["metadata"].get("labels") or {}
    on_node = [p for p in snap.pods_on(name) if not is_terminal(p)]
    requested: dict[str, int] = {}
    for p in on_node:
        for r, n in gpu_requests(p).items():
            requested[r] = requested.get(r, 0) + n
    alloc = node_gpu_allocatable(node)
    resources = {r: (alloc.get(r, 0), requested.get(r, 0)) for r in sorted(set(alloc) | set(requested))}
    state = snap.gpu_states.get(name)
    gpus: tuple[GpuTile, ...] = ()
    placed: set[str] = set()
    if state is not None:
        holders = device_holders(state, pods)
        placed = {h.pod for hs in holders.values() for h in hs}
        gpus = tuple(sorted((_tile(g, holders) for g in state.get("gpus") or []), key=lambda t: t.index))
    unplaced = tuple(Holder(pod_key(p), pod_color(pod_key(p)), pod_phase(p), r, what)
                     for p in on_node if pod_key(p) not in placed for r, what in gpu_demands(p))
    product = labels.get("nvidia.com/gpu.product") or (gpus[0].product if gpus else "")
    return NodeCard(name, node_ready(node), product, resources, gpus, unplaced, state is not None)


def gpu_demands(pod: Obj) -> list[tuple[str, str]]:
    """What a pod waits for, as (resource, label): its ``nvidia.com/*`` requests ("2 x nvidia.com/gpu"), then
    each of its ResourceClaims (DRA; "claim <pod claim name>"; every claim is taken for a GPU claim, as this
    cluster's only DRA driver is gpu.mockgpu.io). A kubelet publishes a claim's devices as
    ``resourceclaims/<claim>``."""
    out = [(r, f"{n} x {r}") for r, n in sorted(gpu_requests(pod).items()) if r.startswith(GPU_RESOURCE_PREFIX)]
    for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        out.append((f"resourceclaims/{ref.get('resourceClaimName') or ref['name']}", f"claim {ref['name']}"))
    return out


def cluster_map(snap: Snapshot) -> ClusterMapModel:
    """The whole map from one snapshot."""
    pods = _pod_index(snap)
    cards = tuple(node_card(n, snap, pods) for n in snap.nodes)
    pending = tuple(Holder(pod_key(p), pod_color(pod_key(p)), pod_phase(p), r, what)
                    for p in snap.pods if not (p.get("spec") or {}).get("nodeName") and not is_terminal(p)
                    for r, what in gpu_demands(p))
    return ClusterMapModel(cards, pending)
