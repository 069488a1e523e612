"""The capstone lab's task and its auto-check: three workloads on the mixed cluster ``clusters/capstone.yaml``.

The learner writes a *plan*: for each workload a ``(pool, resource)`` pair (which node pool it runs on, by
the ``mockgpu.io/pool`` node label, and which extended resource each of its pods asks for). ``check`` runs
the plan on the live cluster through the Kubernetes API (a Job for the training, Deployments for the
inference service and the notebooks), waits until every pod is placed and has loaded its memory (or has
not), and prices what the pods hold. It answers ``Correct`` only when everything runs at the lowest cost
this cluster allows; otherwise a hint that names the problem (Pending, out of memory, shared memory where
isolation is required, paying more than needed) but never the pool or resource to use.

Prices: per GPU-hour, the pending timeline's AWS on-demand list prices (``mockgpu.widgets.timeline``). A
whole GPU costs its price; a MIG instance the share of the card's memory slices it blocks (a ``2g.20gb``
blocks 2 of 8); a time-sliced replica ``1 / replicas`` of its GPU (what chargeback on a shared cluster
bills). The lowest cost is found by trying every plan against what the nodes advertise
(``cheapest_plan``), not stored.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mockgpu.gpu.catalog import get_model
from mockgpu.widgets.clustermap import cluster_map
from mockgpu.widgets.labkit import LabCluster
from mockgpu.widgets.snapshot import (
    Obj,
    condition,
    node_gpu_allocatable,
    pod_phase,
    restart_count,
)
from mockgpu.widgets.submit import Submission, deployment_manifest, job_manifest
from mockgpu.widgets.timeline import USD_PER_GPU_HOUR, price_key

POOL_LABEL = "mockgpu.io/pool"
GIB = 1024
WHOLE, MIG, SHARED = "whole GPU", "MIG instance", "time-sliced replica"


@dataclass(frozen=True)
class Workload:
    """One workload of the task: ``pods`` pods, each asking for ``units`` devices and loading
    ``memory_gib`` GiB on each."""

    key: str  # the plan's name for it: TRAINING -> "training"
    kind: str  # "Job" or "Deployment"
    pods: int
    units: int
    memory_gib: int
    whole_gpus: bool  # needs whole GPUs (NCCL over 4 GPUs), not slices or turns of one
    isolated: bool  # must not share GPU memory with another pod
    what: str

    def args(self) -> tuple[str, ...]:
        """``mockgpu-workload train`` arguments: load the memory on every device, then hold it."""
        return ("--memory", f"{self.memory_gib}GiB", "--interval", "0.5", "--duration", "0", "--log-every", "1000")


WORKLOADS = (
    Workload("training", "Job", 1, 4, 30, whole_gpus=True, isolated=True,
             what="a training Job: one pod on 4 whole GPUs, 30 GiB on each"),
    Workload("inference", "Deployment", 3, 1, 18, whole_gpus=False, isolated=True,
             what="an inference Deployment: 3 replicas, 18 GiB each, isolated from every other pod"),
    Workload("notebooks", "Deployment", 4, 1, 12, whole_gpus=False, isolated=False,
             what="notebooks: a Deployment of 4, 12 GiB each, trusted, may share a GPU"),
)
BY_KEY = {w.key: w for w in WORKLOADS}


@dataclass(frozen=True)
class Offer:
    """One extended resource of one pool, as its nodes advertise it."""

    pool: str
    resource: str
    kind: str  # WHOLE, MIG or SHARED
    product: str  # the physical GPU (nvidia.com/gpu.product)
    memory_mib: int  # per unit; for a time-sliced replica the whole GPU's memory, shared
    usd_per_hour: float  # per unit
    per_node: tuple[tuple[str, int], ...]  # (node, allocatable units)

    @property
    def total(self) -> int:
        return sum(n for _, n in self.per_node)


def _unit(resource: str, labels: Mapping[str, str]) -> tuple[str, int, float]:
    """(kind, memory MiB per unit, USD per unit-hour) of ``resource`` on a node with these GFD labels."""
    product = labels.get("nvidia.com/gpu.product", "")
    gpu_price = USD_PER_GPU_HOUR[price_key(product)]
    if resource.startswith("nvidia.com/mig-"):
        profile = resource.removeprefix("nvidia.com/mig-")
        model = get_model(product.removeprefix("NVIDIA-"))
        share = model.profile(profile).memory_slots / model.memory_slots
        return MIG, int(labels.get(f"{resource}.memory", 0)), gpu_price * share
    replicas = max(1, int(labels.get("nvidia.com/gpu.replicas", "1") or 1))
    kind = SHARED if replicas > 1 else WHOLE
    return kind, int(labels.get("nvidia.com/gpu.memory", 0)), gpu_price / replicas


def offers(nodes: Iterable[Obj]) -> dict[tuple[str, str], Offer]:
    """Every (pool, resource) the nodes advertise, with its kind, memory, price and count per node."""
    found: dict[tuple[str, str], dict] = {}
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        labels = node["metadata"].get("labels") or {}
        pool = labels.get(POOL_LABEL, "")
        for resource, count in sorted(node_gpu_allocatable(node).items()):
            kind, memory, price = _unit(resource, labels)
            entry = found.setdefault((pool, resource), {
                "kind": kind, "product": labels.get("nvidia.com/gpu.product", ""), "memory": memory,
                "price": price, "per_node": []})
            entry["per_node"].append((node["metadata"]["name"], int(count)))
    return {k: Offer(k[0], k[1], e["kind"], e["product"], e["memory"], e["price"], tuple(e["per_node"]))
            for k, e in found.items()}


def rule_broken(w: Workload, offer: Offer) -> str | None:
    """Which of the task's rules ``offer`` breaks for ``w`` (whole GPUs, isolation), as a hint, else None."""
    if w.whole_gpus and offer.kind != WHOLE:
        return (f"the {w.key} job needs whole GPUs: a {offer.kind} is a slice of a GPU or a turn on one, and "
                f"{w.units} of them are not {w.units} GPUs to train on (labs 06 and 07)")
    if w.isolated and offer.kind == SHARED:
        return (f"the {w.key} pods must not share GPU memory with anyone: on a time-sliced GPU one pod's "
                f"out-of-memory kills its neighbours (lab 07)")
    return None


def unsuited(w: Workload, offer: Offer) -> str | None:
    """Why ``offer`` cannot serve ``w`` whatever else runs: a broken rule, or too little memory per unit."""
    broken = rule_broken(w, offer)
    if broken is not None:
        return broken
    if offer.kind != SHARED and offer.memory_mib < w.memory_gib * GIB:
        return f"each {w.key} pod loads {w.memory_gib} GiB per device; a unit of {offer.resource} has " \
               f"{offer.memory_mib} MiB"
    return None


def _fits(demands: list[tuple[Offer, int]]) -> bool:
    """Whether pods (offer, units per pod) fit on their pools' nodes together: each pod on one node."""
    free = {(o.pool, o.resource, node): n for o, _ in demands for node, n in o.per_node}
    order = sorted(demands, key=lambda d: -d[1])  # biggest pods first

    def place(i: int) -> bool:
        if i == len(order):
            return True
        offer, units = order[i]
        for node, _ in offer.per_node:
            key = (offer.pool, offer.resource, node)
            if free[key] >= units:
                free[key] -= units
                if place(i + 1):
                    return True
                free[key] += units
        return False

    return place(0)


def plan_cost(plan: Mapping[str, Offer]) -> float:
    return sum(o.usd_per_hour * BY_KEY[k].units * BY_KEY[k].pods for k, o in plan.items())


def cheapest_plan(available: Mapping[tuple[str, str], Offer]) -> tuple[float, dict[str, Offer]] | None:
    """The lowest-cost plan that suits every workload and fits the nodes together (None if there is none)."""
    choices = [[o for o in available.values() if unsuited(w, o) is None] for w in WORKLOADS]
    best: tuple[float, dict[str, Offer]] | None = None
    for combo in itertools.product(*choices):
        plan = dict(zip((w.key for w in WORKLOADS), combo, strict=True))
        cost = plan_cost(plan)
        if best is not None and cost >= best[0] - 1e-9:
            continue
        if _fits([(o, BY_KEY[k].units) for k, o in plan.items() for _ in range(BY_KEY[k].pods)]):
            best = (cost, plan)
    return best


def offer_table(available: Mapping[tuple[str, str], Offer]) -> str:
    """What the cluster offers, one line per (pool, resource): the facts a plan is made of."""
    lines = [f"{'pool':<9}{'resource':<24}{'kind':<21}{'per node':<10}{'memory/unit':>20}{'$/unit-hour':>13}"]
    for o in sorted(available.values(), key=lambda o: (o.pool, o.resource)):
        per_node = " + ".join(str(n) for _, n in o.per_node)
        memory = f"{o.memory_mib} MiB" + (" (shared)" if o.kind == SHARED else "")
        lines.append(f"{o.pool:<9}{o.resource:<24}{o.kind:<21}{per_node:<10}{memory:>20}{o.usd_per_hour:>13.4f}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    message: str
    cost: float | None = None  # USD per hour of what runs, when everything runs

    def __str__(self) -> str:
        return self.message


def _not_quite(text: str) -> Verdict:
    return Verdict(False, f"Not quite: {text}")


def _parse(plan: Mapping[str, object], available: Mapping[tuple[str, str], Offer]) -> dict[str, Offer] | Verdict:
    pools = sorted({p for p, _ in available})
    parsed: dict[str, Offer] = {}
    for w in WORKLOADS:
        value = plan.get(w.key)
        name = w.key.upper()
        if value is None:
            return _not_quite(f"fill in {name}: a (pool, resource) pair, e.g. (\"pool\", \"nvidia.com/...\"), "
                              f"taken from the table of what the cluster offers.")
        if not (isinstance(value, tuple | list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
            return _not_quite(f"{name} is {value!r}; it should be a pair of strings (pool, resource).")
        pool, resource = value
        if pool not in pools:
            return _not_quite(f"{name}: there is no pool {pool!r}; the pools are {', '.join(pools)}.")
        offer = available.get((pool, resource))
        if offer is None:
            has = ", ".join(r for p, r in sorted(available) if p == pool)
            return _not_quite(f"{name}: pool {pool!r} does not advertise {resource!r}; it advertises {has}.")
        broken = rule_broken(w, offer)  # memory is left to the live run: the pod dies out of memory
        if broken is not None:
            return _not_quite(broken + ".")
        parsed[w.key] = offer
    return parsed


def _submit(lab: LabCluster, w: Workload, offer: Offer) -> None:
    sub = Submission("train", w.units, offer.resource, name=w.key, args=w.args(),
                     node_selector=((POOL_LABEL, offer.pool),))
    if w.kind == "Job":
        lab.client.create_job(job_manifest(sub))
    else:
        lab.client.create_deployment(deployment_manifest(sub, w.pods))


def _loaded(log: str, w: Workload) -> bool:
    return sum(line.startswith("train: cuda:") and " holds " in line for line in log.splitlines()) >= w.units


def _failed(pod: Obj, log: str) -> bool:
    return restart_count(pod) > 0 or pod_phase(pod) == "Failed" or "out of memory" in log


def _settled(lab: LabCluster) -> dict[str, list[tuple[Obj, str]]]:
    """Each workload's pods with their logs, once every pod is Pending for good, loaded, or failed."""
    def read() -> dict[str, list[tuple[Obj, str]]]:
        out = {}
        for w in WORKLOADS:
            pods = lab.pods_of(w.kind, w.key)
            out[w.key] = [(p, lab.client.pod_log("default", p["metadata"]["name"]) if p["spec"].get("nodeName")
                           else "") for p in pods]
        return out

    def done(state: dict[str, list[tuple[Obj, str]]]) -> bool:
        for w in WORKLOADS:
            pods = state[w.key]
            if len(pods) != w.pods:
                return False
            for pod, log in pods:
                unschedulable = (condition(pod, "PodScheduled") or {}).get("reason") == "Unschedulable"
                if not (unschedulable or _loaded(log, w) or _failed(pod, log)):
                    return False
        return True

    return lab.eventually(read, done, timeout=45)


def _published(lab: LabCluster, state: dict[str, list[tuple[Obj, str]]]) -> None:
    """Wait until the nodes' published GPU state (what the cluster map draws, about once a second) shows the
    memory the pods loaded, so a map drawn after the check shows it too."""
    loaded = sum(w.units * w.memory_gib * GIB for w in WORKLOADS for _, log in state[w.key] if _loaded(log, w))

    def shown() -> int:
        return sum(g.memory_used_mib for n in cluster_map(lab.client.snapshot()).nodes for g in n.gpus)

    lab.eventually(shown, lambda used: used >= loaded, timeout=10)


def _cost_of(pods: list[tuple[Obj, str]], w: Workload, offer: Offer) -> float:
    return offer.usd_per_hour * w.units * len(pods)


def check(lab: LabCluster, plan: Mapping[str, object]) -> Verdict:
    """Run ``plan`` ({"training": (pool, resource), "inference": ..., "notebooks": ...}) on the lab's live
    cluster and grade it. Earlier capstone workloads are deleted first; the plan's stay running."""
    assert lab.client is not None
    available = offers(lab.client.snapshot().nodes)
    parsed = _parse(plan, available)
    if isinstance(parsed, Verdict):
        return parsed
    lab.clear()
    for w in WORKLOADS:
        _submit(lab, w, parsed[w.key])
    state = _settled(lab)
    for w in WORKLOADS:
        pods = state[w.key]
        pending = [p for p, _ in pods if not p["spec"].get("nodeName")]
        if pending:
            message = (condition(pending[0], "PodScheduled") or {}).get("message", "").split(" preemption:")[0]
            who = (f"the {w.key} job's pod is" if w.kind == "Job"
                   else f"{len(pending)} of the {w.pods} {w.key} pods {'is' if len(pending) == 1 else 'are'}")
            return _not_quite(f"{who} Pending: {message} A pod's devices all come from one node, and a pool "
                              f"has only what its nodes advertise (labs 01 and 06).")
        failed = [p for p, log in pods if _failed(p, log)]
        if failed:
            offer = parsed[w.key]
            return _not_quite(f"{len(failed)} of the {w.pods} {w.key} pods died: out of GPU memory. Each loads "
                              f"{w.memory_gib} GiB per device, and a unit of {offer.resource} has "
                              f"{offer.memory_mib} MiB.")
    _published(lab, state)
    cost = sum(_cost_of(state[w.key], w, parsed[w.key]) for w in WORKLOADS)
    best = cheapest_plan(available)
    assert best is not None, "the capstone cluster has no plan that fits"
    lowest, best_plan = best
    if cost <= lowest + 1e-6:
        return Verdict(True, f"Correct: everything runs, at ${cost:.2f} per hour, the lowest cost this cluster "
                             f"allows.", cost)
    dearer = [w.key for w in WORKLOADS if parsed[w.key].usd_per_hour > best_plan[w.key].usd_per_hour + 1e-9]
    return Verdict(False, f"Not quite: everything runs, at ${cost:.2f} per hour, but this cluster can run the "
                          f"three for ${lowest:.2f}. Paying more than it needs to: {', '.join(dearer)}. "
                          f"Look at the memory and the price of each unit.", cost)


def placements(lab: LabCluster) -> list[str]:
    """One line per running capstone pod: workload, node, resource (for the lab's printout)."""
    assert lab.client is not None
    lines = []
    for w in WORKLOADS:
        for pod in lab.pods_of(w.kind, w.key):
            limits = pod["spec"]["containers"][0].get("resources", {}).get("limits", {})
            resource = next((f"{v} x {k}" for k, v in limits.items() if k.startswith("nvidia.com/")), "-")
            lines.append(f"{w.key}: {pod['spec'].get('nodeName') or 'Pending'}, {resource}")
    return lines


__all__ = ["BY_KEY", "MIG", "SHARED", "WHOLE", "WORKLOADS", "Offer", "Verdict", "Workload",
           "check", "cheapest_plan", "offer_table", "offers", "placements", "plan_cost", "rule_broken",
           "unsuited"]
