"""Writes the real kube-scheduler's own results onto each pod, under the annotations the embedded scheduler
uses (``mockgpu.io/filter-result``, ``score-result``, ``finalscore-result``, ``selected-node``), so the
labs' inspector and cluster map explain upstream's decisions with upstream's numbers.

Source: the scheduler's JSON log at ``-v=10`` (``schedlog``). What the log gives and this writes:
* ``finalscore-result``: every score plugin's weighted, normalised score per node, exactly as logged;
* ``score-result``: raw scores of the plugins that have no NormalizeScore step (NodeResourcesFit,
  NodeResourcesBalancedAllocation), i.e. the logged score divided by the plugin's weight in the pod's
  profile (from the same KubeSchedulerConfiguration file); other plugins' raw scores are not logged;
* ``selected-node`` for a bound pod;
* ``filter-result``: kube-scheduler does not log per-node filter reasons. For a pod that fits nowhere and
  whose FailedScheduling message names one reason for every node (``0/4 nodes are available: 4
  Insufficient nvidia.com/gpu.``) each node gets that reason under the plugin that words it so; otherwise
  nothing is written (the message itself is on the pod's PodScheduled condition).
* ``dra-allocation`` for a bound pod with ResourceClaims: claim name -> ``[{request, device}]``, read from the
  claims' ``status.allocation`` (which kube-scheduler wrote in PreBind), in the embedded scheduler's shape;
Every annotated pod also gets ``mockgpu.io/results-from: kube-scheduler log``. The annotations land a moment
after the binding (the embedded scheduler writes them before it binds); ``LabCluster.wait`` waits for them.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

from mockgpu.backends.common.schedlog import Attempt, SchedulerLog
from mockgpu.sched.cycle import ANNOTATION_DRA_ALLOCATION, dra_allocation_summary
from mockgpu.sched.dra.claimname import claim_name_or_empty

log = logging.getLogger(__name__)
ANN = "mockgpu.io/"
RECORDED = ANN + "results-from"  # on every pod the recorder has annotated: whose results these are
RECORDED_VALUE = "kube-scheduler log"
_SUMMARY = re.compile(r"^0/(\d+) nodes are available: (.*?)\. preemption: ")
# the plugin behind each reason text of kube-scheduler's filters (v1.37.2 wording)
_REASON_PLUGIN = (
    (re.compile(r"^Insufficient |^Too many pods$"), "NodeResourcesFit"),
    (re.compile(r"^node\(s\) had untolerated taint"), "TaintToleration"),
    (re.compile(r"^node\(s\) didn't match Pod's node affinity/selector$"), "NodeAffinity"),
    (re.compile(r"^node\(s\) were unschedulable$"), "NodeUnschedulable"),
    (re.compile(r"^node\(s\) didn't match the requested node name$"), "NodeName"),
    (re.compile(r"^node\(s\) didn't have free ports"), "NodePorts"),
)


def filter_result(message: str) -> dict[str, str] | None:
    """{plugin: reason} when ``message`` names one reason for every node; None otherwise."""
    m = _SUMMARY.match(message or "")
    if not m:
        return None
    total, parts = int(m.group(1)), [p.strip() for p in m.group(2).split(",")]
    if len(parts) != 1:
        return None
    count, _, reason = parts[0].partition(" ")
    if not count.isdigit() or int(count) != total:
        return None
    plugin = next((name for pattern, name in _REASON_PLUGIN if pattern.search(reason)), None)
    return {plugin: reason} if plugin else None


UNNORMALISED = ("NodeResourcesFit", "NodeResourcesBalancedAllocation")  # weighted score = raw x weight


def annotations_for(attempt: Attempt, nodes: list[str], weights: dict[str, int]) -> dict[str, str]:
    """The annotations for one finished attempt; ``weights``: the score weights of the pod's profile."""
    out: dict[str, str] = {RECORDED: RECORDED_VALUE}
    if attempt.totals:
        out[ANN + "finalscore-result"] = json.dumps(
            {n: {p: str(v) for p, v in sorted(attempt.scores.get(n, {}).items())} for n in sorted(attempt.totals)},
            sort_keys=True)
        raw = {n: {p: str(v // weights[p]) for p, v in sorted(attempt.scores.get(n, {}).items())
                   if p in UNNORMALISED and weights.get(p)} for n in sorted(attempt.totals)}
        if any(raw.values()):
            out[ANN + "score-result"] = json.dumps(raw, sort_keys=True)
    if attempt.bound_to:
        out[ANN + "selected-node"] = attempt.bound_to
    elif attempt.unschedulable is not None:
        reason = filter_result(attempt.unschedulable)
        if reason and nodes:
            out[ANN + "filter-result"] = json.dumps({n: reason for n in sorted(nodes)}, sort_keys=True)
    return out


class ResultsRecorder:
    """Tails the scheduler's log and annotates each pod once its scheduling attempt has ended."""

    def __init__(self, api_client: Any, schedlog: SchedulerLog, weights: dict[str, dict[str, int]],
                 interval: float = 0.1) -> None:
        """``weights``: profile (schedulerName) -> score plugin -> weight."""
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.resource = client.ResourceV1Api(api_client)
        self.weights = weights
        self.log = schedlog
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scheduler-results", daemon=True)

    def start(self) -> ResultsRecorder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.log.read()
                for key in self.log.drain_finished():
                    self._annotate(key)
            except Exception as exc:  # noqa: BLE001 - the next pass retries; never stop the supervisor
                log.debug("scheduler results: %s", exc)

    def _dra_allocation(self, ns: str, pod: Any) -> dict[str, str]:
        """``mockgpu.io/dra-allocation`` of a bound pod: its claims' allocations (templates' claims by the names
        the resource claim controller recorded in the pod's status); {} until every claim is allocated."""
        as_dict = self.resource.api_client.sanitize_for_serialization(pod)
        allocations = {}
        for ref in as_dict["spec"]["resourceClaims"]:
            claim = claim_name_or_empty(as_dict, ref)
            if not claim:
                return {}
            obj = self.resource.read_namespaced_resource_claim(claim, ns)
            if obj.status is None or obj.status.allocation is None:
                return {}
            allocations[f"{ns}/{claim}"] = self.resource.api_client.sanitize_for_serialization(obj.status.allocation)
        return {ANNOTATION_DRA_ALLOCATION: json.dumps(dra_allocation_summary(allocations), sort_keys=True)}

    def _annotate(self, key: str) -> None:
        from kubernetes.client.exceptions import ApiException

        attempt = self.log.attempt(key)
        if attempt is None or "/" not in key:
            return
        nodes = sorted(self.log.nodes)
        ns, name = key.split("/", 1)
        try:
            pod = self.core.read_namespaced_pod(name, ns)
            notes = annotations_for(attempt, nodes, self.weights.get(pod.spec.scheduler_name or "", {}))
            if attempt.bound_to and pod.spec.resource_claims:
                notes.update(self._dra_allocation(ns, pod))
            self.core.patch_namespaced_pod(name, ns, {"metadata": {"annotations": notes}})
        except ApiException as exc:
            if exc.status != 404:  # a pod deleted meanwhile needs nothing
                raise
