"""The memory/OOM view's model: per physical GPU, who holds how much, when an allocation failed, who died.

Memory per pod comes from the node's published ``processes``; the out-of-memory moments from its
``oomEvents`` (time, pod, requested and free MiB); whether a pod died from the Pod objects (a
terminated container with a non-zero exit code). A time-sliced GPU is one memory pool shared by all its
replicas, so one pod's OOM can kill its neighbours (the blast radius); a MIG instance has its own memory,
so the greedy pod dies alone. The OOM event names the pod whose allocation failed; on a shared GPU that is
often an innocent neighbour making its usual small allocation while another pod holds the memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mockgpu.widgets.colors import pod_color
from mockgpu.widgets.snapshot import Obj, Snapshot, pod_key, pod_owner, pod_phase, restart_count


@dataclass(frozen=True)
class PodMemory:
    pod: str
    color: str
    used_mib: int
    partition: str  # "" for the GPU itself, else the MIG profile and uuid
    status: str  # "Running", "Succeeded", "Failed (exit 1)", "Gone"
    died: bool
    oom: bool  # the pod's own allocation failed (an OOM event names it)
    owner: str = ""  # "Deployment inference": a replica that died is restarted in place, not replaced
    restarts: int = 0  # restartCount: how often the kubelet restarted it after it died


@dataclass(frozen=True)
class OomMoment:
    time: str
    pod: str
    partition: str
    requested_mib: int
    free_mib: int


@dataclass(frozen=True)
class GpuMemory:
    node: str
    index: int
    uuid: str
    mode: str  # "whole", "time-sliced x4", "MIG"
    total_mib: int
    used_mib: int
    pods: tuple[PodMemory, ...]
    ooms: tuple[OomMoment, ...]

    @property
    def casualties(self) -> tuple[str, ...]:
        """The blast radius: pods that died in a memory pool where an allocation failed (the whole GPU when
        time-sliced, only the MIG instance when partitioned) — whoever asked last, not who holds most."""
        pools = {o.partition for o in self.ooms}
        return tuple(p.pod for p in self.pods if p.died and p.partition in pools)

    def describe(self) -> str:
        lines = [f"{self.node} GPU {self.index} [{self.mode}] {self.used_mib}/{self.total_mib} MiB"]
        for p in self.pods:
            where = f" in {p.partition}" if p.partition else ""
            owner = f" ({p.owner})" if p.owner else ""
            restarts = f", {p.restarts} restarts" if p.restarts else ""
            lines.append(f"  {p.pod}{owner}{where}: {p.used_mib} MiB, {p.status}{restarts}{' (OOM)' if p.oom else ''}")
        for o in self.ooms:
            where = f" in {o.partition}" if o.partition else ""
            lines.append(f"  OOM: {o.pod}{where} asked {o.requested_mib} MiB with {o.free_mib} MiB free")
        return "\n".join(lines)


def pod_status(pod: Mapping | None) -> tuple[str, bool]:
    """(text, died): a pod died when a container terminated with a non-zero exit code."""
    if pod is None:
        return "Gone", False
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        for st in ((cs.get("state") or {}).get("terminated"), (cs.get("lastState") or {}).get("terminated")):
            if st and int(st.get("exitCode") or 0) != 0:
                return f"{pod_phase(pod)} (exit {st.get('exitCode')}, {st.get('reason') or 'Error'})", True
    return pod_phase(pod), False


def _partitions(g: Mapping) -> dict[str, str]:
    return {str(m.get("uuid")): f"MIG {m.get('profile')}" for m in g.get("mig") or []}


def gpu_memory(node: str, state: Mapping, pods: Mapping[str, Obj]) -> list[GpuMemory]:
    """One entry per physical GPU of a node's published state."""
    out = []
    ooms_all = sorted(state.get("oomEvents") or [], key=lambda o: str(o.get("time")))
    for g in sorted(state.get("gpus") or [], key=lambda g: g.get("index", 0)):
        idx, uuid = int(g.get("index", 0)), str(g.get("uuid"))
        parts = _partitions(g)
        holders: dict[tuple[str, str], int] = {}
        for a in state.get("allocations") or []:
            key = f"{a.get('namespace')}/{a.get('pod')}"
            for u in a.get("uuids") or []:
                if u == uuid or u in parts:
                    holders.setdefault((key, parts.get(u, "")), 0)
        for proc in state.get("processes") or []:
            dev = str(proc.get("device") or "")
            if dev != uuid and dev not in parts and not (not dev and proc.get("gpuIndex") == idx):
                continue
            k = (f"{proc.get('namespace')}/{proc.get('pod')}", parts.get(dev, ""))
            holders[k] = holders.get(k, 0) + int(proc.get("usedMiB") or 0)
        ooms = tuple(OomMoment(str(o.get("time")), f"{o.get('namespace')}/{o.get('pod')}",
                               parts.get(str(o.get("device") or ""), ""), int(o.get("requestedMiB") or 0),
                               int(o.get("freeMiB") or 0))
                     for o in ooms_all
                     if o.get("device") == uuid or str(o.get("device")) in parts
                     or (not o.get("device") and o.get("gpuIndex") == idx))
        oom_pods = {o.pod for o in ooms}
        for o in ooms:  # a pod that died and released its memory is still on the GPU's story
            holders.setdefault((o.pod, o.partition), 0)
        rows = []
        for (key, part), used in sorted(holders.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            pod = pods.get(key)
            text, died = pod_status(pod)
            rows.append(PodMemory(key, pod_color(key), used, part, text, died, key in oom_pods,
                                  pod_owner(pod) if pod else "", restart_count(pod) if pod else 0))
        mode = "MIG" if parts else (f"time-sliced x{g.get('replicas')}" if int(g.get("replicas") or 1) > 1
                                    else "whole")
        out.append(GpuMemory(node, idx, uuid, mode, int(g.get("memoryTotalMiB") or 0),
                             int(g.get("memoryUsedMiB") or 0), tuple(rows), ooms))
    return out


def memory_view(snap: Snapshot, nodes: list[str] | None = None) -> list[GpuMemory]:
    """Every published GPU (of the given nodes), node by node."""
    pods = {pod_key(p): p for p in snap.pods}
    out = []
    for node in sorted(snap.gpu_states):
        if nodes is None or node in nodes:
            out.extend(gpu_memory(node, snap.gpu_states[node], pods))
    return out
