"""Differential conformance: the same scheduling scenario on the embedded and the upstream control plane.

A ``Side`` is one control plane with no kubelets (nodes are plain Node objects the suite creates, pods are
never run): ``EmbeddedSide`` (mockgpu's API server and scheduler, in process) and ``UpstreamSide`` (the real
kube-apiserver and kube-scheduler at ``-v=10``, whose JSON log says every plugin's weighted score per node).
``run_scenario`` creates a scenario's nodes on both, then its pods one at a time, and compares each pod's
``Decision``: where it went (or that it could not go anywhere), the ``PodScheduled`` condition and the
``FailedScheduling`` event text, the feasible nodes, each plugin's weighted score per node, the totals,
and the set of top-scoring nodes (upstream picks at random among ties, so a pick is compared as
membership of the other side's top set). After each pod the embedded side is made to hold the pod where
upstream put it, so both judge the next pod on the same cluster.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mockgpu.backends.common.schedlog import SchedulerLog

NS = "default"
ANN = "mockgpu.io/"


# -- builders -------------------------------------------------------------------------------------
def make_node(name: str, allocatable: dict[str, Any], *, labels: dict[str, str] | None = None,
              taints: list[dict[str, str]] | None = None, unschedulable: bool = False) -> dict[str, Any]:
    """A Ready Node (``pods`` allocatable 110 unless given); capacity = allocatable."""
    alloc = {"pods": "110", **{k: str(v) for k, v in allocatable.items()}}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec,
            "status": {"capacity": dict(alloc), "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}]}}


def make_pod(name: str, *containers: dict[str, Any] | None, scheduler: str = "default-scheduler",
             node_name: str = "", limits: bool = False, **spec: Any) -> dict[str, Any]:
    """A pod with one container per request map (``None``: a container that requests nothing).
    ``limits``: put the map in ``limits`` (requests default to them), as GPU manifests do; otherwise
    extended resources (which cannot be overcommitted) go in both, as the API requires."""
    cs = []
    for i, req in enumerate(containers or (None,)):
        c: dict[str, Any] = {"name": f"c{i}", "image": "registry.k8s.io/pause:3.10"}
        if req:
            values = {k: str(v) for k, v in req.items()}
            extended = {k: v for k, v in values.items() if "/" in k}
            c["resources"] = {"limits": values} if limits else \
                {"requests": values, **({"limits": extended} if extended else {})}
        cs.append(c)
    body: dict[str, Any] = {"schedulerName": scheduler, "containers": cs, "terminationGracePeriodSeconds": 0,
                            **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": body}


@dataclass
class Scenario:
    name: str
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]  # in order; pods with spec.nodeName are existing (pre-bound) pods
    section: str = "scenarios"


# -- what one side decided ------------------------------------------------------------------------
@dataclass
class Decision:
    node: str | None = None
    condition: tuple[str, str, str] | None = None  # PodScheduled (status, reason, message) when False
    event: str | None = None  # the FailedScheduling event's message
    scores: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> plugin -> weighted score
    totals: dict[str, int] = field(default_factory=dict)
    feasible: frozenset[str] | None = None

    def top(self) -> frozenset[str]:
        if not self.totals:
            return frozenset({self.node}) if self.node else frozenset()
        best = max(self.totals.values())
        return frozenset(n for n, v in self.totals.items() if v == best)


def _condition(pod: dict[str, Any]) -> tuple[str, str, str] | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return (c.get("status"), c.get("reason") or "", c.get("message") or "")
    return None


class Side:
    """One control plane under test (no kubelets)."""

    name = ""

    def __init__(self, api_client: Any) -> None:
        self.api = api_client
        self.core = client.CoreV1Api(api_client)

    def get_pod(self, name: str) -> dict[str, Any] | None:
        try:
            return self.api.sanitize_for_serialization(self.core.read_namespaced_pod(name, NS))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def create_nodes(self, nodes: Iterable[dict[str, Any]]) -> None:
        for n in nodes:
            self.core.create_node(n)

    def delete_nodes(self, names: Iterable[str]) -> None:
        for n in names:
            try:
                self.core.delete_node(n)
            except ApiException as exc:
                if exc.status != 404:
                    raise

    def delete_pods(self, names: Iterable[str]) -> None:
        for n in names:
            try:
                self.core.delete_namespaced_pod(n, NS, grace_period_seconds=0)
            except ApiException as exc:
                if exc.status != 404:
                    raise

    def wait_deleted(self, pods: Iterable[str], nodes: Iterable[str], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        pods, nodes = set(pods), set(nodes)
        while time.monotonic() < deadline:
            have_pods = {p.metadata.name for p in self.core.list_namespaced_pod(NS).items} & pods
            have_nodes = {n.metadata.name for n in self.core.list_node().items} & nodes
            if not have_pods and not have_nodes:
                return
            time.sleep(0.05)
        raise AssertionError(f"{self.name}: pods {pods} / nodes {nodes} still present after {timeout} s")

    def sees(self, nodes: list[str], pods: list[str]) -> bool:
        """Whether the scheduler's cache has caught up with these nodes and bound pods."""
        raise NotImplementedError

    def wait_seen(self, nodes: list[str], pods: list[str], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.sees(nodes, pods):
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: the scheduler did not see nodes {nodes} / pods {pods}")
            time.sleep(0.02)

    def decide(self, name: str, timeout: float = 30.0) -> Decision:
        """Wait until the pod is bound or found unschedulable (condition and event written)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pod = self.get_pod(name)
            if pod is not None:
                node = (pod.get("spec") or {}).get("nodeName")
                cond = _condition(pod)
                if node or cond:
                    event = None
                    if cond:
                        event = self._event(name)
                        if event is None:
                            time.sleep(0.02)
                            continue
                    d = Decision(node=node, condition=cond, event=event)
                    if self._explain(name, pod, d):
                        return d
            time.sleep(0.02)
        raise AssertionError(f"{self.name}: pod {name} was not decided within {timeout} s")

    def _event(self, pod: str) -> str | None:
        events = self.core.list_namespaced_event(NS, field_selector=f"involvedObject.name={pod}").items
        msgs = [e.message for e in events if e.reason == "FailedScheduling"]
        return msgs[0] if msgs else None

    def _explain(self, name: str, pod: dict[str, Any], d: Decision) -> bool:
        """Fill scores and feasible nodes; False when they are not available yet."""
        raise NotImplementedError


class EmbeddedSide(Side):
    name = "embedded"

    def __init__(self, api_client: Any, scheduler: Any) -> None:
        super().__init__(api_client)
        self.scheduler = scheduler

    def sees(self, nodes: list[str], pods: list[str]) -> bool:
        cache = self.scheduler.cache
        return set(nodes) <= set(cache.node_names()) and all(cache.has_pod(f"{NS}/{p}") for p in pods)

    def _explain(self, name: str, pod: dict[str, Any], d: Decision) -> bool:
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        if ANN + "filter-result" not in ann:
            return False
        filters = json.loads(ann[ANN + "filter-result"])
        d.feasible = frozenset(n for n, r in filters.items() if all(v == "passed" for v in r.values()))
        final = json.loads(ann.get(ANN + "finalscore-result") or "{}")
        if len(d.feasible) > 1:  # upstream does not score a lone feasible node; neither is compared then
            d.scores = {n: {p: int(v) for p, v in r.items()} for n, r in final.items()}
            d.totals = {n: sum(r.values()) for n, r in d.scores.items()}
        return True


class UpstreamSide(Side):
    """Reads kube-scheduler's JSON log (``-v=10``, ``mockgpu.backends.common.schedlog``) for what it did."""

    name = "upstream"

    def __init__(self, api_client: Any, scheduler_log: Path) -> None:
        super().__init__(api_client)
        self.log = SchedulerLog(scheduler_log)

    def sees(self, nodes: list[str], pods: list[str]) -> bool:
        self.log.read()
        return set(nodes) <= self.log.nodes and {f"{NS}/{p}" for p in pods} <= self.log.pods

    def _explain(self, name: str, pod: dict[str, Any], d: Decision) -> bool:
        self.log.read()
        if d.node is None:
            d.feasible = frozenset()
            return True
        attempt = self.log.attempt(f"{NS}/{name}")
        if attempt is None or not attempt.done:
            return False  # the attempt's lines are still being written
        d.scores = {n: dict(r) for n, r in attempt.scores.items()}
        d.totals = dict(attempt.totals)
        d.feasible = frozenset(d.totals) if d.totals else frozenset({d.node})
        return True


# -- comparing ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Difference:
    kind: str  # placement | outcome | message | event | feasible | score:<Plugin> | total
    detail: str


def compare(emb: Decision, up: Decision) -> list[Difference]:
    out: list[Difference] = []
    if (emb.node is None) != (up.node is None):
        return [Difference("outcome", f"embedded {emb.node or 'unschedulable'}: {emb.condition}; "
                                      f"upstream {up.node or 'unschedulable'}: {up.condition}")]
    if up.node is None:
        if emb.condition != up.condition:
            out.append(Difference("message", f"embedded {emb.condition!r} != upstream {up.condition!r}"))
        if emb.event != up.event:
            out.append(Difference("event", f"embedded {emb.event!r} != upstream {up.event!r}"))
        return out
    if emb.feasible is not None and up.feasible is not None and emb.feasible != up.feasible:
        out.append(Difference("feasible", f"embedded {sorted(emb.feasible)} != upstream {sorted(up.feasible)}"))
    if up.totals and emb.totals:
        plugins = {p for r in [*emb.scores.values(), *up.scores.values()] for p in r}
        for plugin in sorted(plugins):
            e = {n: emb.scores.get(n, {}).get(plugin, 0) for n in sorted(up.totals)}
            u = {n: up.scores.get(n, {}).get(plugin, 0) for n in sorted(up.totals)}
            if e != u:
                out.append(Difference(f"score:{plugin}", f"embedded {e} != upstream {u}"))
        if {n: emb.totals.get(n) for n in up.totals} != up.totals:
            out.append(Difference("total", f"embedded {emb.totals} != upstream {up.totals}"))
    if up.node not in emb.top() or emb.node not in up.top():
        out.append(Difference("placement", f"embedded chose {emb.node} (top {sorted(emb.top())}), "
                                           f"upstream chose {up.node} (top {sorted(up.top())})"))
    return out


@dataclass
class PodResult:
    scenario: str
    pod: str
    embedded: Decision
    upstream: Decision
    differences: list[Difference]


def run_scenario(emb: EmbeddedSide, up: UpstreamSide, sc: Scenario) -> list[PodResult]:
    """Run ``sc`` on both sides; every pod's comparison (pre-bound pods are not compared)."""
    node_names = [n["metadata"]["name"] for n in sc.nodes]
    pod_names = [p["metadata"]["name"] for p in sc.pods]
    results: list[PodResult] = []
    try:
        for side in (emb, up):
            side.create_nodes(sc.nodes)
            side.wait_seen(node_names, [])
        for pod in sc.pods:
            name = pod["metadata"]["name"]
            if pod["spec"].get("nodeName"):
                for side in (emb, up):
                    side.core.create_namespaced_pod(NS, pod)
                    side.wait_seen([], [name])
                continue
            up.core.create_namespaced_pod(NS, pod)
            emb.core.create_namespaced_pod(NS, pod)
            u, e = up.decide(name), emb.decide(name)
            results.append(PodResult(sc.name, name, e, u, compare(e, u)))
            if u.node != e.node:  # hold the pod where upstream put it, so the next pod sees one cluster
                emb.delete_pods([name])
                emb.wait_deleted([name], [])
                if u.node:
                    emb.core.create_namespaced_pod(NS, {**pod, "spec": {**pod["spec"], "nodeName": u.node}})
            for side in (emb, up):
                if u.node:
                    side.wait_seen([], [name])
    finally:
        for side in (emb, up):
            side.delete_pods(pod_names)
            side.delete_nodes(node_names)
        for side in (emb, up):
            side.wait_deleted(pod_names, node_names)
    return results
