"""The pending timeline's model: how long each GPU pod waited, and what the GPUs left idle meanwhile cost.

A pod waits from its ``creationTimestamp`` until it is bound (``mockgpu.io/bound-time``, else the
PodScheduled=True condition's time) or, still pending, until *now*. While it waits, every GPU of the
resource that no running pod holds is idle: idle GPU-hours = the integral of (allocatable − held) over the
wait, where a pod holds its GPUs from bound until its containers finish. All of it is reconstructed from
the Pod objects (a deleted pod is forgotten, as the API forgets it). Simplified: capacity is today's
allocatable for the whole wait (nodes added or removed meanwhile are not replayed).

Prices (USD per GPU-hour, on-demand, us-east-1, AWS list prices via ``cloud_on_demand_prices`` of the
project's MIG reference, copied to ``mockgpu/gpu/data/mig-profiles.json``; sources there:
github.com/tsaol/aws-gpu data from instances.vantage.sh, 2025-11-30 / 2025-12-21):
A100-80GB 3.4309 (p4de.24xlarge 27.44705 / 8), A100-40GB 2.7447 (p4d.24xlarge / 8),
H100-80GB 6.88 (p5.48xlarge 55.04 / 8), H200 7.912 (p5en.48xlarge / 8).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from mockgpu.widgets.snapshot import (
    BOUND_TIME,
    Snapshot,
    annotations,
    condition,
    gpu_requests,
    is_terminal,
    node_gpu_allocatable,
    node_ready,
    parse_time,
    pod_key,
)

PRICE_SOURCE = ("AWS on-demand list price per GPU-hour, us-east-1: the instance's hourly price / its 8 GPUs "
                "(p4de.24xlarge $27.44705/h for A100-80GB; instances.vantage.sh data of 2025-11-30, copied in "
                "cloud_on_demand_prices of mockgpu/gpu/data/mig-profiles.json)")
USD_PER_GPU_HOUR = {"A100-80GB": 3.4309, "A100-40GB": 2.7447, "H100-80GB": 6.88, "H200": 7.912}
DEFAULT_PRICE_KEY = "A100-80GB"


def price_key(product: str) -> str:
    """The price row for a GPU product name or GFD label (``NVIDIA-A100-SXM4-80GB`` → ``A100-80GB``)."""
    p = product.upper()
    if "H200" in p:
        return "H200"
    if "H100" in p:
        return "H100-80GB"
    if "A100" in p:
        return "A100-40GB" if "40GB" in p else "A100-80GB"
    return DEFAULT_PRICE_KEY


@dataclass(frozen=True)
class WaitRow:
    pod: str
    gpus: int
    created: datetime
    bound: datetime | None
    waited_s: float
    idle_gpu_hours: float  # GPUs nobody held while this pod waited
    idle_cost_usd: float

    @property
    def pending(self) -> bool:
        return self.bound is None


@dataclass(frozen=True)
class TimelineModel:
    resource: str
    capacity: int
    price_key: str
    usd_per_gpu_hour: float
    now: datetime
    rows: tuple[WaitRow, ...]

    @property
    def total_idle_cost_usd(self) -> float:
        return sum(r.idle_cost_usd for r in self.rows)

    def describe(self) -> str:
        lines = [f"{self.resource}: {self.capacity} allocatable; priced at ${self.usd_per_gpu_hour:.4f} per "
                 f"{self.price_key} GPU-hour ({PRICE_SOURCE})"]
        for r in self.rows:
            state = "still pending" if r.pending else "bound"
            lines.append(f"  {r.pod}: {r.gpus} GPU, waited {r.waited_s:.0f} s ({state}); "
                         f"{r.idle_gpu_hours:.3f} idle GPU-hours = ${r.idle_cost_usd:.2f}")
        return "\n".join(lines)


def bound_time(pod: Mapping) -> datetime | None:
    if not (pod.get("spec") or {}).get("nodeName"):
        return None
    t = parse_time(annotations(pod).get(BOUND_TIME))
    if t is None:
        cond = condition(pod, "PodScheduled")
        t = parse_time(cond.get("lastTransitionTime")) if cond and cond.get("status") == "True" else None
    return t or parse_time((pod.get("status") or {}).get("startTime"))


def finish_time(pod: Mapping) -> datetime | None:
    """When a finished pod released its GPUs (its last container's finishedAt); None while it holds them."""
    if not is_terminal(pod):
        return None
    times = [parse_time(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
             for cs in (pod.get("status") or {}).get("containerStatuses") or []]
    times = [t for t in times if t]
    return max(times) if times else bound_time(pod)


def idle_gpu_seconds(capacity: int, holds: list[tuple[datetime, datetime, int]], start: datetime,
                     end: datetime) -> float:
    """∫ max(0, capacity − held(t)) dt over [start, end), held from (from, until, gpus) intervals."""
    if end <= start:
        return 0.0
    cuts = sorted({start, end} | {t for a, b, _ in holds for t in (a, b) if start < t < end})
    total = 0.0
    for a, b in zip(cuts, cuts[1:], strict=False):
        held = sum(n for h0, h1, n in holds if h0 <= a and h1 > a)
        total += max(0, capacity - held) * (b - a).total_seconds()
    return total


def timeline(snap: Snapshot, *, resource: str = "nvidia.com/gpu", now: datetime | None = None,
             usd_per_gpu_hour: float | None = None) -> TimelineModel:
    """Every pod asking for ``resource``, oldest first, with its wait and the idle GPUs' cost."""
    now = now or snap.taken_at
    capacity = sum(node_gpu_allocatable(n).get(resource, 0) for n in snap.nodes if node_ready(n))
    products = [(n["metadata"].get("labels") or {}).get("nvidia.com/gpu.product", "") for n in snap.nodes
                if node_gpu_allocatable(n).get(resource)]
    key = price_key(max(set(products), key=products.count) if products else "")
    price = USD_PER_GPU_HOUR[key] if usd_per_gpu_hour is None else usd_per_gpu_hour
    pods = [p for p in snap.pods if gpu_requests(p).get(resource)]
    holds = []
    for p in pods:
        b = bound_time(p)
        if b is not None:
            holds.append((b, finish_time(p) or now, gpu_requests(p)[resource]))
    rows = []
    for p in pods:
        created = parse_time((p.get("metadata") or {}).get("creationTimestamp")) or now
        b = bound_time(p)
        end = b or now
        idle_h = idle_gpu_seconds(capacity, holds, created, end) / 3600
        rows.append(WaitRow(pod_key(p), gpu_requests(p)[resource], created, b,
                            max(0.0, (end - created).total_seconds()), idle_h, idle_h * price))
    rows.sort(key=lambda r: (r.created, r.pod))
    return TimelineModel(resource, capacity, key, price, now, tuple(rows))
