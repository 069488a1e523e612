"""The capstone lab's task and its auto-check: three workloads on the mixed cluster ``clusters/capstone.yaml``.

The learner writes a *plan*: for each workload a ``(pool, resource)`` pair (which node pool it runs on, by
the ``mockgpu.io/pool`` node label, and which extended resource each of its pods asks for). ``check`` runs
the plan on the live cluster through the Kubernetes API (a Job for the training, Deployments for the
inference service and the notebooks), waits until every pod is placed and has loaded its memory (or has
not), and prices what the pods hold. Each workload gets an ``Outcome``: right, or a hint that names the
problem (Pending, out of memory, shared memory where isolation is required, paying more than needed) but
never the pool or resource to use. The plan is right when every workload is, which is when it runs at the
lowest cost this cluster allows (its cheapest plan is unique).

Prices: per GPU-hour, the pending timeline's AWS on-demand list prices (``mockgpu.widgets.timeline``). A
whole GPU costs its price; a MIG instance the share of the card's memory slices it blocks (a ``2g.20gb``
blocks 2 of 8); a time-sliced replica ``1 / replicas`` of its GPU (what chargeback on a shared cluster
bills). The lowest cost is found by trying every plan against what the nodes advertise
(``cheapest_plan``), not stored. Simplified: a workload is judged against the cheapest plan's unit for it,
which is right only while the cheapest plan is unique (it is on ``clusters/capstone.yaml``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mockgpu.config.nodelabels import POOL_LABEL
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
class Outcome:
    """How one workload of the plan did: ``right`` says why when it is right, ``hint`` what is wrong when it is
    not (never the pool or resource of the cheapest plan)."""

    ok: bool
    right: str = ""
    hint: str = ""
    cost: float | None = None  # USD per hour of its pods, when they all run


@dataclass(frozen=True)
class Report:
    """The check of a whole plan: one outcome per workload, and the lowest cost the cluster allows."""

    outcomes: Mapping[str, Outcome]
    lowest: float
    cheapest: Mapping[str, tuple[str, str]]  # the cheapest plan's pairs (for the grader's leak guard only)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outcomes.values())

    @property
    def cost(self) -> float | None:
        costs = [o.cost for o in self.outcomes.values()]
        return None if any(c is None for c in costs) else sum(costs)

    def passed(self, key: str) -> bool:
        return self.outcomes[key].ok

    def right(self, key: str) -> str:
        return self.outcomes[key].right

    def hint(self, key: str) -> str:
        return self.outcomes[key].hint

    def summary(self) -> str:
        """One line on the whole bill."""
        if self.cost is None:
            return (f"Not everything runs yet. The lowest cost at which this cluster runs all three is "
                    f"${self.lowest:.2f} per hour.")
        if self.ok:
            return f"All three run, at ${self.cost:.2f} per hour: the lowest this cluster allows."
        return (f"All three run, at ${self.cost:.2f} per hour; this cluster can run them for "
                f"${self.lowest:.2f} per hour.")

    def __str__(self) -> str:
        lines = [f"{k}: " + (f"Correct: {o.right}" if o.ok else f"Not quite: {o.hint}")
                 for k, o in self.outcomes.items()]
        return "\n".join([*lines, self.summary()])


RIGHT = {
    "training": "the training Job runs on 4 whole GPUs of one node, each with room for its 30 GiB, at the lowest "
                "price that has them.",
    "inference": "the inference replicas run isolated, each in a unit that holds its 18 GiB, at the lowest price.",
    "notebooks": "the notebooks share GPUs, in the cheapest units that hold 12 GiB and are enough for all four.",
}


def _parse_one(w: Workload, value: object, available: Mapping[tuple[str, str], Offer]) -> Offer | str:
    """The offer a plan's pair names, or a hint why it names none (or breaks a rule of the task)."""
    if value is None:
        return f"{w.key.upper()} is still None: set it to a (pool, resource) pair from the table above."
    if not (isinstance(value, tuple | list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        return f"{w.key.upper()} should be a pair of strings, (pool, resource)."
    pool, resource = value
    pools = sorted({p for p, _ in available})
    if pool not in pools:
        return f"{w.key.upper()}: there is no pool {pool!r}; the pools are {', '.join(pools)}."
    offer = available.get((pool, resource))
    if offer is None:
        return (f"{w.key.upper()}: pool {pool!r} does not advertise {resource!r} (the table above lists what each "
                f"pool advertises).")
    broken = rule_broken(w, offer)  # memory is left to the live run: the pod dies out of memory
    return broken + "." if broken is not None else offer


def _submit(lab: LabCluster, w: Workload, offer: Offer) -> None:
    assert lab.client is not None
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


def _settled(lab: LabCluster, running: list[Workload]) -> dict[str, list[tuple[Obj, str]]]:
    """Each submitted workload's pods with their logs, once every pod is Pending for good, loaded, or failed."""
    assert lab.client is not None

    def read() -> dict[str, list[tuple[Obj, str]]]:
        return {w.key: [(p, lab.client.pod_log("default", p["metadata"]["name"]) if p["spec"].get("nodeName")
                         else "") for p in lab.pods_of(w.kind, w.key)] for w in running}

    def done(state: dict[str, list[tuple[Obj, str]]]) -> bool:
        for w in running:
            if len(state[w.key]) != w.pods:
                return False
            for pod, log in state[w.key]:
                unschedulable = (condition(pod, "PodScheduled") or {}).get("reason") == "Unschedulable"
                if not (unschedulable or _loaded(log, w) or _failed(pod, log)):
                    return False
        return True

    return lab.eventually(read, done, timeout=45)


def _published(lab: LabCluster, state: Mapping[str, list[tuple[Obj, str]]]) -> None:
    """Wait until the nodes' published GPU state (what the cluster map draws, about once a second) shows the
    memory the pods loaded, so a map drawn after the check shows it too."""
    assert lab.client is not None
    loaded = sum(BY_KEY[k].units * BY_KEY[k].memory_gib * GIB for k, pods in state.items()
                 for _, log in pods if _loaded(log, BY_KEY[k]))

    def shown() -> int:
        return sum(g.memory_used_mib for n in cluster_map(lab.client.snapshot()).nodes for g in n.gpus)

    lab.eventually(shown, lambda used: used >= loaded, timeout=10)


def _judge(w: Workload, offer: Offer, pods: list[tuple[Obj, str]], best: Offer) -> Outcome:
    """A submitted workload's outcome from its pods: Pending, out of memory, dearer than needed, or right."""
    pending = [p for p, _ in pods if not p["spec"].get("nodeName")]
    if pending:
        message = (condition(pending[0], "PodScheduled") or {}).get("message", "").split(" preemption:")[0]
        who = (f"the {w.key} job's pod is" if w.kind == "Job"
               else f"{len(pending)} of the {w.pods} {w.key} pods {'is' if len(pending) == 1 else 'are'}")
        return Outcome(False, hint=f"{who} Pending: {message} A pod's devices all come from one node, and a pool "
                                   f"has only what its nodes advertise (labs 01 and 06).")
    failed = [p for p, log in pods if _failed(p, log)]
    if failed:
        return Outcome(False, hint=f"{len(failed)} of the {w.pods} {w.key} pods died: out of GPU memory. Each "
                                   f"loads {w.memory_gib} GiB per device, and a unit of {offer.resource} has "
                                   f"{offer.memory_mib} MiB.")
    cost = offer.usd_per_hour * w.units * len(pods)
    if offer.usd_per_hour > best.usd_per_hour + 1e-9:
        its = f"the {w.key} pod runs" if len(pods) == 1 else f"the {len(pods)} {w.key} pods run"
        return Outcome(False, hint=f"{its}, at ${cost:.2f} per hour, but this cluster can run "
                                   f"{'it' if len(pods) == 1 else 'them'} for less. Compare the memory and the price "
                                   f"of each unit.", cost=cost)
    return Outcome(True, right=RIGHT[w.key], cost=cost)


def check(lab: LabCluster, plan: Mapping[str, object]) -> Report:
    """Run ``plan`` ({"training": (pool, resource), "inference": ..., "notebooks": ...}) on the lab's live
    cluster and grade each workload. Earlier capstone workloads are deleted first; a pair that names nothing
    the cluster offers, or breaks a rule of the task, is not run; the others' pods stay running."""
    assert lab.client is not None
    available = offers(lab.client.snapshot().nodes)
    best = cheapest_plan(available)
    assert best is not None, "the capstone cluster has no plan that fits"
    lowest, best_plan = best
    parsed = {w.key: _parse_one(w, plan.get(w.key), available) for w in WORKLOADS}
    outcomes: dict[str, Outcome] = {k: Outcome(False, hint=v) for k, v in parsed.items() if isinstance(v, str)}
    running = [w for w in WORKLOADS if isinstance(parsed[w.key], Offer)]
    lab.clear()
    for w in running:
        _submit(lab, w, parsed[w.key])
    state = _settled(lab, running)
    _published(lab, state)
    for w in running:
        outcomes[w.key] = _judge(w, parsed[w.key], state[w.key], best_plan[w.key])
    return Report({w.key: outcomes[w.key] for w in WORKLOADS}, lowest,
                  {k: (o.pool, o.resource) for k, o in best_plan.items()})


def placements(lab: LabCluster) -> list[str]:
    """One line per capstone pod: workload, node (or Pending), resource (for the lab's printout)."""
    assert lab.client is not None
    lines = []
    for w in WORKLOADS:
        for pod in lab.pods_of(w.kind, w.key):
            limits = pod["spec"]["containers"][0].get("resources", {}).get("limits", {})
            resource = next((f"{v} x {k}" for k, v in limits.items() if k.startswith("nvidia.com/")), "-")
            lines.append(f"{w.key}: {pod['spec'].get('nodeName') or 'Pending'}, {resource}")
    return lines


__all__ = ["BY_KEY", "MIG", "SHARED", "WHOLE", "WORKLOADS", "Offer", "Outcome", "Report", "Workload", "check",
           "cheapest_plan", "offer_table", "offers", "placements", "plan_cost", "rule_broken", "unsuited"]
