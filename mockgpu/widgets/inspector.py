"""The pod inspector's view model: why the pod is where it is, what the device plugin gave it, what it saw.

* scheduling table: the scheduler's annotations (``mockgpu.io/filter-result``, ``score-result``,
  ``finalscore-result``: JSON node → plugin → value) as one row per node;
* the ``FailedScheduling`` message (the PodScheduled=False condition, else the newest event);
* the environment the device plugin injected: the ``NAME=value`` lines ``mockgpu-workload inspect``
  prints, and the device IDs from the node's published allocations;
* what CUDA enumerated and what ``nvidia-smi -L`` printed inside the container (from the log);
* for a pod with ResourceClaims (DRA), which claim and request gave which device: the claims'
  ``status.allocation`` (as the scheduler wrote it, on every backend); the env then came from the DRA
  driver's CDI spec, not from a device plugin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from mockgpu.sched.dra.claimname import claim_name_or_empty
from mockgpu.widgets.snapshot import (
    Obj,
    Snapshot,
    annotations,
    condition,
    gpu_requests,
    pod_key,
    pod_owner,
    pod_phase,
    restart_count,
)

FILTER = "mockgpu.io/filter-result"
SCORE = "mockgpu.io/score-result"
FINAL = "mockgpu.io/finalscore-result"
SELECTED = "mockgpu.io/selected-node"
PASSED = "passed"
ENV_NAMES = ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
             "NVIDIA_MIG_CONFIG_DEVICES")
_ENV_LINE = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")


@dataclass(frozen=True)
class NodeRow:
    node: str
    filters: Mapping[str, str]  # plugin → "passed" | reason
    scores: Mapping[str, str]  # plugin → raw score
    final: Mapping[str, str]  # plugin → normalized × weight
    total: int | None
    feasible: bool
    selected: bool

    @property
    def reason(self) -> str:
        """The first filter that rejected the node ('' when it passed every filter)."""
        return next((f"{p}: {v}" for p, v in self.filters.items() if v != PASSED), "")


@dataclass(frozen=True)
class InspectorModel:
    pod: str
    phase: str
    node: str
    scheduler: str
    requests: Mapping[str, int]
    rows: tuple[NodeRow, ...]
    plugins: tuple[str, ...]  # score plugins, in a stable order
    failed_message: str
    env: Mapping[str, str]  # what the container printed (inspect scenario)
    allocations: tuple[Mapping, ...]  # from the node's GPU state: resource, deviceIds, uuids
    cuda_lines: tuple[str, ...]
    smi_lines: tuple[str, ...]
    log: str
    container_states: Mapping[str, str] = field(default_factory=dict)  # container → "Running", "Exited 1 (Error)"
    owner: str = ""  # "Job trainer", "Deployment inference"; '' for a bare pod
    restarts: int = 0  # the kubelet's container restarts (restartCount, summed)
    claims: tuple[tuple[str, str, str], ...] = ()  # DRA: (pod claim name, request, device), from the claims

    def describe(self, by_owner: bool = False) -> str:
        """Plain text; ``by_owner`` names a controller-made pod by its owner (its own name is random)."""
        who = f"the {self.owner}'s pod" if by_owner and self.owner else f"pod {self.pod}"
        if self.owner and not by_owner:
            who += f" ({self.owner})"
        restarts = f", {self.restarts} restarts" if self.restarts else ""
        lines = [f"{who}: {self.phase}{restarts} on {self.node or '-'} (scheduler {self.scheduler})"]
        if self.failed_message:
            lines.append(f"FailedScheduling: {self.failed_message}")
        for r in self.rows:
            mark = "*" if r.selected else " "
            total = "-" if r.total is None else str(r.total)
            lines.append(f" {mark} {r.node:<14} {'feasible' if r.feasible else r.reason:<40} total {total}")
        for k, v in self.env.items():
            lines.append(f"env {k}={v}")
        for a in self.allocations:
            lines.append(f"allocated {a.get('resource')}: {', '.join(a.get('deviceIds') or a.get('uuids') or [])}")
        for claim, request, device in self.claims:
            lines.append(f"claim {claim} request {request}: {device}")
        return "\n".join(lines)


def dra_claims(pod: Mapping, claims: Mapping[str, Mapping]) -> tuple[tuple[str, str, str], ...]:
    """(pod claim name, request, device) for each device allocated to the pod's claims, in the pod's and the
    allocation's order, from the claims' ``status.allocation`` ("namespace/name" → claim)."""
    ns = (pod.get("metadata") or {}).get("namespace") or "default"
    out = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        claim = claims.get(f"{ns}/{claim_name_or_empty(pod, entry)}") or {}
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        out += [(str(entry.get("name", "")), str(r.get("request", "")), str(r.get("device", ""))) for r in results]
    return tuple(out)


def _table(pod: Mapping, key: str) -> dict[str, dict[str, str]]:
    raw = annotations(pod).get(key)
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(n): {str(p): str(v) for p, v in (row or {}).items()} for n, row in data.items()}


def _int(text: str) -> int:
    try:
        return int(float(text))
    except ValueError:
        return 0


def scheduling_rows(pod: Mapping) -> tuple[tuple[NodeRow, ...], tuple[str, ...]]:
    """One row per node the scheduler looked at, sorted by total score (best first), then name."""
    filters, scores, final = _table(pod, FILTER), _table(pod, SCORE), _table(pod, FINAL)
    selected = annotations(pod).get(SELECTED) or (pod.get("spec") or {}).get("nodeName") or ""
    plugins = tuple(sorted({p for row in final.values() for p in row} | {p for row in scores.values() for p in row}))
    rows = []
    for node in sorted(set(filters) | set(scores) | set(final)):
        f = filters.get(node, {})
        feasible = all(v == PASSED for v in f.values())
        total = sum(_int(v) for v in final[node].values()) if node in final else None
        rows.append(NodeRow(node, f, scores.get(node, {}), final.get(node, {}), total, feasible, node == selected))
    rows.sort(key=lambda r: (not r.feasible, -(r.total or 0), r.node))
    return tuple(rows), plugins


def failed_message(pod: Mapping, events: list[Obj]) -> str:
    """Why the pod is not scheduled: the PodScheduled=False condition, else the newest FailedScheduling event."""
    if (pod.get("spec") or {}).get("nodeName"):
        return ""
    cond = condition(pod, "PodScheduled")
    if cond and cond.get("status") == "False" and cond.get("message"):
        return str(cond["message"])
    failed = [e for e in events if e.get("reason") == "FailedScheduling"]
    return str(failed[-1].get("message") or failed[-1].get("note") or "") if failed else ""


def parse_log(text: str) -> tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]:
    """(env lines, CUDA lines, nvidia-smi lines) from ``mockgpu-workload inspect`` output (or any log)."""
    env: dict[str, str] = {}
    cuda: list[str] = []
    smi: list[str] = []
    in_smi = False
    for line in text.splitlines():
        m = _ENV_LINE.match(line)
        if m and m.group(1) in ENV_NAMES:
            env[m.group(1)] = m.group(2)
            continue
        if line.startswith("$ nvidia-smi"):
            in_smi = True
            continue
        if in_smi:
            if line.startswith(("GPU ", "No devices", "nvidia-smi:", "  ")):
                smi.append(line)
                continue
            in_smi = False
        if line.startswith("CUDA devices") or line.strip().startswith("cuda:"):
            cuda.append(line)
    return env, tuple(cuda), tuple(smi)


def container_states(pod: Mapping) -> dict[str, str]:
    out = {}
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        st = cs.get("state") or {}
        if "running" in st:
            out[cs["name"]] = "Running"
        elif "terminated" in st:
            t = st["terminated"]
            out[cs["name"]] = f"Exited {t.get('exitCode')} ({t.get('reason') or '-'})"
        elif "waiting" in st:
            out[cs["name"]] = f"Waiting ({(st['waiting'] or {}).get('reason') or '-'})"
    return out


def inspect_pod(snap: Snapshot, key: str, log: str = "") -> InspectorModel:
    """The inspector for pod ``namespace/name`` from a snapshot and its log text."""
    pod = snap.pod(key)
    if pod is None:
        raise KeyError(f"no pod {key}")
    key = pod_key(pod)
    rows, plugins = scheduling_rows(pod)
    node = (pod.get("spec") or {}).get("nodeName") or ""
    allocs = tuple(a for a in (snap.gpu_states.get(node) or {}).get("allocations") or []
                   if f"{a.get('namespace')}/{a.get('pod')}" == key)
    env, cuda, smi = parse_log(log)
    scheduler = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
    return InspectorModel(key, pod_phase(pod), node, scheduler,
                          gpu_requests(pod), rows, plugins, failed_message(pod, snap.events_for(pod)), env, allocs,
                          cuda, smi, log, container_states(pod), pod_owner(pod), restart_count(pod),
                          dra_claims(pod, snap.claims))
