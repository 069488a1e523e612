"""The conformance report: every compared case by section, and every disagreement with its reason or
its fix. Written to docs/conformance.md at the end of a session that ran every section."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from known_differences import OPEN_PREFIX, explain

SECTIONS = {  # id -> title, in report order
    "tables": "Scheduling: upstream's NodeResourcesFit tables, live",
    "stories": "Scheduling: the seed story, the workshop spec, the labs' pods, taints and affinity",
    "random": "Scheduling: random clusters and pod sequences (hypothesis, seeded)",
    "gang": "Scheduling: gang scheduling (PodGroup minCount, GenericWorkload on): placements, Pending states, texts",
    "dra": "DRA: claims allocated from our driver's ResourceSlices (feasibility, node, constraints, status)",
    "dra-taints": "DRA: device taints, tolerations and DeviceTaintRules (allocation, eviction, rule status)",
    "kubectl": "API: kubectl battery (every installed kubectl)",
    "client": "API: official Python client battery",
    "quota": "API: GPU quotas (ResourceQuota, LimitRange, the quota controller)",
    "protobuf": "API: protobuf (a client-go program and raw protobuf requests: decoded objects and Status)",
    "namespaces": "API: ordered namespace deletion, ReplicationControllers, PodTemplates (with their controllers)",
    "dra-api": "API: invalid DeviceClasses, claims, templates and CEL (status, reason, message, causes)",
    "hostile": "Hostile input: generated malformed, oversized and odd requests (status class and code, writes)",
    "e2e": "Kubernetes' own e2e specs: sig-api-machinery [Conformance] (e2e.test, one process per spec)",
}

# Disagreements the suite found and that were fixed in the embedded control plane (kept as history).
FIXED: list[tuple[str, str]] = [
    ("kubectl logs of a pod with no node",
     "embedded said 400 `container \"c\" in pod \"p1\" is waiting to start: ContainerCreating`; upstream answers "
     "an empty log (its LogLocation returns no location before the pod has a host). apiserver/podlogs.py now does"),
    ("list with limit and a label or field selector",
     "embedded sent `remainingItemCount`; upstream counts the rest only when no selector is given. Fixed in app.py"),
    ("adding a finalizer to an object being deleted",
     "embedded accepted it; upstream: 422 `metadata.finalizers: Forbidden: no new finalizers can be added if the "
     "object is being deleted, found new finalizers []string{...}`. Fixed in names.validate_meta_update"),
    ("kube-root-ca.crt in every namespace",
     "upstream's controller manager publishes the cluster CA as ConfigMap `kube-root-ca.crt` in each namespace "
     "(`kubectl get configmaps` lists it); the embedded API server now does when a namespace is created"),
    ("the ServiceAccount token volume",
     "upstream's ServiceAccount admission adds the projected `kube-api-access-<5>` volume and mounts it read-only "
     "in every container (`kubectl describe pod` shows both); the embedded defaulting now does the same"),
    ("NodeResourcesBalancedAllocation (every case with cpu or memory requests)",
     "v1.37.2 scores the change in balance, `50 + (50 + with_pod - without_pod) / 2`, not the balance after the "
     "pod (a cpu-1 pod on an empty 32-core node: 74 upstream, 98 embedded). mockgpu/sched now models v1.37.2"),
    ("untolerated taints in FailedScheduling",
     "v1.37.2 says `node(s) had untolerated taint(s)` without naming the taint; the embedded scheduler named it"),
    ("ties", "v1.37.2 takes the first of the tied nodes in its node order (no random draw outside extenders); the "
     "embedded scheduler drew at random. The suite compares the set of top nodes either way"),
    ("RequestedToCapacityRatio '25 instead of 38'",
     "not a scoring bug: 38 is upstream's unit-table value for node1 whose existing pods have no containers, which "
     "the API cannot store; a real pod's 200Mi default memory request exceeds that node's 10000-byte memory, so "
     "memory scores 0 and is left out of the average: 25, on the real scheduler too. The live case "
     "`t07 RTCR (0,10),(100,0) two containers` (the issue's pod and nodes, nothing scheduled) agrees at 38 / 50"),
    ("the default ServiceAccount before pods",
     "upstream refuses pods (`error looking up service account default/default`) until the controller manager "
     "has made the namespace's ServiceAccount; `mockgpu up --backend upstream` waits for it"),
    ("DRA: allocationTimestamp",
     "v1.37.2's scheduler stamps `status.allocation.allocationTimestamp` when it binds a claim "
     "(DRADeviceBindingConditions, beta, and DRAResourceClaimDeviceStatus, GA: both on); the embedded scheduler "
     "now does"),
    ("DRA: duplicate request names",
     "v1.37.2's declarative validation prints the whole duplicate request as JSON (`Duplicate value: {\"name\":"
     "\"gpu\",\"exactly\":{...}}`), not its name; resourcev1.py now does"),
    ("DRA: a constraint without an attribute",
     "upstream: `spec.devices.constraints[0]: Required value: exactly one of \"matchAttribute\" or "
     "\"distinctAttribute\" is required, but multiple fields are set` (DRAConsumableCapacity on); the embedded "
     "server said `constraints[0].matchAttribute: Required value`"),
    ("DRA: DeviceClass extendedResourceName",
     "upstream's declarative format check words it (`a name must be a domain-prefixed path, such as "
     "'example.com/my-prop'`, `must not have \"kubernetes.io/\" domain`, ...), not `must be a valid extended "
     "resource name`"),
    ("DRA: a claim's spec is immutable",
     "v1.37.2's declarative `+k8s:immutable` prints `spec: Invalid value: null: field is immutable`"),
    ("DRA: admin access needs the namespace label",
     "upstream's claim and template strategies refuse `exactly.adminAccess: true` unless the namespace has "
     "`resource.kubernetes.io/admin-access: \"true\"` (`spec.devices.requests[0].adminAccess: Forbidden: ...`, "
     "before the other errors); the embedded create now reads the namespace's labels and does the same"),
    ("DRA: CEL type errors at create",
     "upstream refuses `device.nosuch` (`undefined field 'nosuch'`) and `device.capacity` (`must evaluate to bool "
     "or the unknown type, not map(string, map(string, kubernetes.Quantity))`); the embedded server stored them. "
     "An expression cut off before an operand now gets cel-go's `mismatched input '<EOF>' expecting {...}`"),
    ("protobuf: a client-go pod with probes",
     "upstream defaults a probe's timeoutSeconds 1, periodSeconds 10, successThreshold 1, failureThreshold 3 and an "
     "httpGet's path and scheme (SetDefaults_Probe, _HTTPGetAction); the embedded server kept them unset. "
     "apiserver/defaults.py now does"),
    ("protobuf: a delete whose precondition fails",
     "embedded said `Precondition failed: UID in precondition: ...` on `configmaps`; upstream's rest.BeforeDelete "
     "answers first, on the kind: `Operation cannot be fulfilled on ConfigMap \"pb\": the UID in the precondition "
     "(...) does not match the UID in record (...)`. handlers.py now does"),
]


@dataclass
class Row:
    section: str
    case: str
    differences: list[tuple[str, str, str | None]]  # (kind, detail, known reason)


@dataclass
class E2ERow:
    spec: str
    group: str
    upstream: str  # the spec's state on each plane (passed, failed, timedout, crashed, not run, ...)
    embedded: str
    failure: str  # the first failure line on embedded (else upstream's), "" when both passed
    reason: str  # why embedded may differ: out of scope, an open cause, or "" when it need not


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    e2e: list[E2ERow] = field(default_factory=list)
    e2e_note: str = ""  # how the e2e specs ran (flags, wall time)

    def add(self, section: str, case: str, differences: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Record a case; returns its differences that no known reason explains."""
        assert section in SECTIONS, section
        diffs = [(k, d, explain(case, k, d)) for k, d in differences]
        self.rows.append(Row(section, case, diffs))
        return [(k, d) for k, d, why in diffs if why is None]

    def compare(self, section: str, embedded: list[tuple[str, Any]], upstream: list[tuple[str, Any]],
                differences: Callable[[Any, Any], list[tuple[str, str]]] | None = None) -> None:
        """Record a battery's cases, each side's outcome side by side (the same cases in the same order), and fail
        naming every difference no known reason explains. ``differences`` (emb, up): the outcomes' differences;
        by default one "outcome" difference when they are not equal."""
        open_ = []
        for (case, emb), (case_up, up) in zip(embedded, upstream, strict=True):
            assert case == case_up
            diffs = (differences(emb, up) if differences is not None
                     else [] if emb == up else [("outcome", f"embedded {emb} != upstream {up}")])
            open_ += [f"{case}: {kind}: {detail}" for kind, detail in self.add(section, case, diffs)]
        assert not open_, "\n".join(open_)

    def add_explained(self, section: str, case: str, differences: list[tuple[str, str, str | None]]) -> None:
        """Record a case whose differences the caller explains (a reason, one starting with OPEN_PREFIX for an open
        one, or None for an unexplained one)."""
        assert section in SECTIONS, section
        self.rows.append(Row(section, case, differences))

    def add_e2e(self, spec: str, group: str, upstream: str, embedded: str, failure: str, reason: str) -> None:
        self.e2e.append(E2ERow(spec, group, upstream, embedded, failure, reason))

    def sections_run(self) -> set[str]:
        return {r.section for r in self.rows}

    def render(self, upstream_version: str) -> str:
        out = ["# Conformance: the embedded control plane against upstream Kubernetes", "",
               f"Generated by the differential conformance suite (`tests/conformance/`, run by `./scripts/test`) "
               f"against Kubernetes {upstream_version} built here by `scripts/upstream-build`. The same scenarios "
               "run on both control planes and what a user can observe is compared: placements (the set of "
               "top-scoring nodes: among tied nodes upstream takes the first to pass its parallel filters, the "
               "embedded scheduler the first in node order), feasible nodes, every plugin's weighted score per "
               "node (upstream's kube-scheduler logs them at `-v=10`), totals, `PodScheduled` and "
               "`FailedScheduling` texts; for the API, status codes, `Status` reasons and messages, and printed "
               "columns. Do not edit by hand.", "",
               "| section | cases | agree | disagree, documented | disagree, open |", "|---|---:|---:|---:|---:|"]
        for sid, title in SECTIONS.items():
            rows = [r for r in self.rows if r.section == sid]
            agree = sum(1 for r in rows if not r.differences)
            known = sum(1 for r in rows if r.differences
                        and all(w and not w.startswith(OPEN_PREFIX) for _, _, w in r.differences))
            open_ = len(rows) - agree - known
            out.append(f"| {title} | {len(rows)} | {agree} | {known} | {open_} |")
        out += ["", "## Disagreements", ""]
        listed = False
        for sid, title in SECTIONS.items():
            rows = [r for r in self.rows if r.section == sid and r.differences]
            if not rows or (sid == "e2e" and self.e2e):  # the e2e specs have a table of their own, below
                continue
            listed = True
            out += [f"### {title}", "", "| case | what | detail | reason kept |", "|---|---|---|---|"]
            for r in rows:
                for kind, detail, why in r.differences:
                    out.append(f"| {r.case} | {kind} | {_cell(detail)} | {_cell(why or 'OPEN: not explained')} |")
            out.append("")
        if not listed:
            out += ["None.", ""]
        if self.e2e:
            out += _render_e2e(self.e2e, self.e2e_note)
        out += ["## Found and fixed", ""]
        out += [f"- **{what}**: {fix}" for what, fix in FIXED] or ["None yet."]
        return "\n".join(out) + "\n"

    def write(self, path: Path, upstream_version: str) -> None:
        path.write_text(self.render(upstream_version))


def _render_e2e(rows: list[E2ERow], note: str) -> list[str]:
    passed = {side: sum(1 for r in rows if getattr(r, side) == "passed") for side in ("upstream", "embedded")}
    out = ["## Kubernetes' own e2e specs (sig-api-machinery, [Conformance])", "",
           f"{note} Upstream passes {passed['upstream']} of {len(rows)}, embedded {passed['embedded']} of "
           f"{len(rows)}. A spec that passes upstream and fails embedded is either of a group listed out of scope "
           "(with its reason) or open (its cause, `OPEN`): the suite fails on any other.", "",
           "| spec | group | upstream | embedded | first failure | reason |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {_cell(r.spec)} | {r.group} | {r.upstream} | {r.embedded} | {_cell(r.failure)} | "
                   f"{_cell(r.reason)} |")
    return [*out, ""]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:400]
