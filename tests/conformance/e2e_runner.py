"""Kubernetes' own sig-api-machinery conformance specs (``e2e.test``, built by ``scripts/upstream-build e2e`` from
k8s.io/kubernetes test/e2e/apimachinery) run against a control plane, one ``e2e.test`` process per spec.

The subset is upstream's ``[sig-api-machinery] ... [Conformance]`` specs without those that need what no
mockgpu cluster has: ``[Serial]`` and ``[Disruptive]`` specs (they may not share the cluster), admission webhooks
and the aggregator (they deploy a webhook or an extension API server as a pod from a registry image), custom
resources (CRDs are not served by the embedded API server and their specs need a webhook or a running server),
and ``[Slow]`` (one spec: a list continued after etcd compacted its revision, which waits for the compactor).

One process per spec, as the issue asked: a spec that hangs or crashes its process costs only itself, and each
process has its own time limit (``--ginkgo.timeout``, ginkgo's own, so the report says ``timedout``; and a kill a
little later). A global deadline stops starting new specs; those left are ``not run``. Each process writes
ginkgo's JSON report (``--ginkgo.json-report``), read for the spec's state and its first failure line.

The flags follow test/e2e/framework/test_context.go: ``--provider=skeleton`` (no cloud), ``--kubeconfig``, and
the client's content type is left at client-go's default (protobuf), as every Go client sends it; ``json=True``
forces ``--kube-api-content-type=application/json`` to see what fails beyond protobuf.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FOCUS = r"\[sig-api-machinery\].*\[Conformance\]"
SKIP = (r"\[Serial\]|\[Disruptive\]|\[Slow\]|\[Feature:|[Ww]ebhook|Aggregator|CustomResource|CRD"
        r"|in a CR\b|of a CR\b")

# Groups (the spec's source file under test/e2e/apimachinery) the embedded control plane does not serve, with the
# reason. A spec of such a group may fail on embedded without failing the suite; docs/conformance.md lists them
# as documented differences.
OUT_OF_SCOPE: dict[str, str] = {
    "validatingadmissionpolicy":
        "admissionregistration.k8s.io ValidatingAdmissionPolicy(Binding) is not served: it is a CEL admission engine "
        "(paramKind, bindings' paramRef and validationActions, matchConditions, variables, messageExpression, "
        "audit annotations, and the type checking that fills status.typeChecking), which cel-python cannot type-check "
        "(celcompile.py); the kit's policies are RBAC and ResourceQuota",
    "mutatingadmissionpolicy":
        "admissionregistration.k8s.io MutatingAdmissionPolicy(Binding) is not served: CEL mutations "
        "(ApplyConfiguration merged as server-side apply does, JSONPatch) on every write, on top of the admission "
        "engine ValidatingAdmissionPolicy needs",
    "storage_version_migration":
        "storagemigration.k8s.io is not served: the embedded store keeps one version of each kind, so there is "
        "nothing to migrate, and a StorageVersionMigration nothing acts on would only pretend",
}

_DISCOVERY_LIST = (
    "the spec wants discovery to list one kind of each of upstream's groups, 12 of them kinds the embedded server "
    "does not serve because nothing in the kit uses them (validatingwebhookconfigurations, customresourcedefinitions, "
    "apiservices, tokenreviews, horizontalpodautoscalers, certificatesigningrequests, endpointslices, ingresses, "
    "runtimeclasses, poddisruptionbudgets, priorityclasses, csinodes): serving empty shells of them would only "
    "pretend. What it checks of what is served (group lists, resource lists, the aggregated document) the other "
    "discovery specs and the kubectl battery compare")
# Specs of groups in scope that need what is not (by their own text), with the reason; as OUT_OF_SCOPE.
OUT_OF_SCOPE_SPECS: dict[str, str] = {
    "AggregatedDiscovery should support aggregated discovery interface": _DISCOVERY_LIST,
    "AggregatedDiscovery should support raw aggregated discovery endpoint Accept headers": _DISCOVERY_LIST,
    "Discovery should locate the groupVersion and a resource within each APIGroup": _DISCOVERY_LIST,
}

# Known, open differences: specs of groups in scope that pass on upstream and fail on embedded today, each with its
# cause (as e2e.test shows it; --kube-api-content-type=application/json tells protobuf's part from the rest). They
# count as open in docs/conformance.md. Any other spec that passes upstream and fails embedded fails the suite, and
# so does a listed spec that passes (its entry must go, and EMBEDDED_FLOOR go up: the list only shrinks). None is
# open today: every spec in scope passes on both planes (30 of 42; the other 12 are out of scope above).
KNOWN_OPEN: dict[str, str] = {}

# The subset's size (e2e.test --ginkgo.dry-run with FOCUS and SKIP) and the fewest specs each plane must pass:
# upstream passed 41 or 42 of 42 here; embedded's floor is measured and only goes up: 26 with main's protobuf and
# server-side apply merged (0 before, every spec stopping at client-go's protobuf DeleteOptions); 30 with ordered
# namespace deletion, ReplicationControllers and PodTemplates.
SUBSET_SIZE = 42
UPSTREAM_FLOOR = 41
EMBEDDED_FLOOR = 30


def short_name(text: str) -> str:
    """The spec's text without the sig prefix and the [Conformance] label: KNOWN_OPEN's keys."""
    return text.removeprefix("[sig-api-machinery] ").removesuffix(" [Conformance]")


@dataclass(frozen=True)
class Spec:
    text: str  # the full text ginkgo focuses on: containers' texts and the leaf's, joined by spaces
    file: str  # test/e2e/apimachinery/<file>.go, without the suffix: the spec's group

    @property
    def focus(self) -> str:
        """A ginkgo focus regex (Go's RE2) that matches this spec's text and nothing else: ginkgo matches it against
        the suite's description, a space and the spec's text."""
        return "(^| )" + re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", self.text) + "$"


@dataclass(frozen=True)
class Result:
    spec: Spec
    state: str  # ginkgo's (passed, failed, timedout, panicked, interrupted), or crashed, not run, error
    failure: str  # the first failure line (message and location), "" when passed
    seconds: float

    @property
    def passed(self) -> bool:
        return self.state == "passed"


def _spec_text(report: dict[str, Any]) -> str:
    return " ".join([*(report.get("ContainerHierarchyTexts") or []), report["LeafNodeText"]])


def _group(report: dict[str, Any]) -> str:
    return Path(report["LeafNodeLocation"]["FileName"]).stem


def list_specs(e2e_test: Path, *, skip: str = SKIP) -> list[Spec]:
    """The specs of the subset, as ``e2e.test --ginkgo.dry-run`` lists them (sorted by text)."""
    with tempfile.TemporaryDirectory(prefix="e2e-dry-") as tmp:
        out = Path(tmp) / "report.json"
        done = subprocess.run([str(e2e_test), "--ginkgo.dry-run", f"--ginkgo.focus={FOCUS}", f"--ginkgo.skip={skip}",
                               f"--ginkgo.json-report={out}", "--ginkgo.no-color", "--provider=skeleton"],
                              capture_output=True, text=True, timeout=120, cwd=tmp)
        if not out.is_file():
            raise RuntimeError(f"e2e.test --ginkgo.dry-run wrote no report (exit {done.returncode}): "
                               f"{done.stderr[-2000:] or done.stdout[-2000:]}")
        specs = {Spec(_spec_text(r), _group(r)) for s in json.loads(out.read_text()) for r in s["SpecReports"]
                 if r.get("LeafNodeType") == "It" and r.get("State") == "passed"}
    return sorted(specs, key=lambda s: s.text)


def _first_line(failure: dict[str, Any] | None) -> str:
    if not failure:
        return ""
    message = (failure.get("Message") or "").strip()
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    loc = failure.get("Location") or {}
    where = f"{Path(loc.get('FileName') or '?').name}:{loc.get('LineNumber', '?')}"
    first = lines[0] if lines else "(no message)"
    # gomega's "Unexpected error:" / "Expected" lead-ins say little: add the line that names the error
    if len(lines) > 1 and first.rstrip(":") in {"Unexpected error", "Expected", "Told to stop trying after"}:
        first = f"{first} {lines[1]}"
    return f"{first[:300]} ({where})"


def _crash_line(log: Path) -> str:
    """Why a process wrote no report: ginkgo panics out of the process when a spec's own goroutine fails (a
    Failf in a workqueue.ParallelizeUntil worker, e.g.), without printing the message; name the spec's line."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "e2e.test wrote no report and no log"
    frames = re.findall(r"test/e2e/apimachinery/([\w.]+\.go:\d+)", text)
    panic = re.search(r"^panic: (.*)$", text, re.MULTILINE)
    where = f" at {frames[0]}" if frames else ""
    what = panic.group(1)[:200] if panic and not frames else "a failure outside the spec's goroutine"
    return f"e2e.test crashed without a report: {what}{where}"


def parse_report(spec: Spec, path: Path, seconds: float) -> Result:
    """The spec's result from one process's ginkgo JSON report; ``error`` when the report does not have it."""
    try:
        suites = json.loads(path.read_text())
    except (OSError, ValueError):
        return Result(spec, "crashed", _crash_line(path.with_suffix(".log")), seconds)
    reports = [r for s in suites for r in s["SpecReports"]]
    mine = [r for r in reports if r.get("LeafNodeType") == "It" and _spec_text(r) == spec.text]
    if len(mine) != 1:
        # the suite's set-up (SynchronizedBeforeSuite) failed before any spec ran: report that failure
        setup = [r for r in reports if r.get("State") not in ("passed", "skipped")]
        why = _first_line(setup[0].get("Failure")) if setup else f"{len(mine)} reports for the spec"
        return Result(spec, "error", why, seconds)
    r = mine[0]
    return Result(spec, r["State"], "" if r["State"] == "passed" else _first_line(r.get("Failure")), seconds)


def run_spec(e2e_test: Path, kubeconfig: Path, spec: Spec, workdir: Path, *, timeout: float,
             json_body: bool = False) -> Result:
    """One spec in its own ``e2e.test`` process; its log is ``<workdir>/<n>.log`` (n from the spec's text)."""
    workdir.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9]+", "-", spec.text.removeprefix("[sig-api-machinery] "))[:90].strip("-")
    report, log = workdir / f"{stem}.json", workdir / f"{stem}.log"
    report.unlink(missing_ok=True)
    argv = [str(e2e_test), f"--kubeconfig={kubeconfig}", "--provider=skeleton", f"--ginkgo.focus={spec.focus}",
            f"--ginkgo.json-report={report}", f"--ginkgo.timeout={int(timeout)}s", "--ginkgo.no-color",
            f"--e2e-output-dir={workdir}", "--dump-logs-on-failure=false"]
    if json_body:
        argv.append("--kube-api-content-type=application/json")
    start = time.monotonic()
    with log.open("wb") as out:
        try:
            subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir,
                           timeout=timeout + 60)
        except subprocess.TimeoutExpired:  # ginkgo's own timeout did not end it: killed (subprocess.run does)
            return Result(spec, "timedout", f"killed after {timeout + 60:.0f} s", time.monotonic() - start)
    return parse_report(spec, report, time.monotonic() - start)


def run_specs(e2e_test: Path, kubeconfig: Path, specs: Iterable[Spec], workdir: Path, *, timeout: float,
              deadline: float, parallel: int = 2, json_body: bool = False,
              progress: Callable[[str, Result], None] | None = None) -> list[Result]:
    """Every spec, ``parallel`` processes at a time; a spec not started before ``deadline`` (time.monotonic)
    is ``not run``. Results in the order of ``specs``."""
    def one(spec: Spec) -> Result:
        left = deadline - time.monotonic()
        if left <= 0:
            return Result(spec, "not run", "the run's global time limit was reached first", 0.0)
        result = run_spec(e2e_test, kubeconfig, spec, workdir, timeout=min(timeout, max(left, 30.0)),
                          json_body=json_body)
        if progress is not None:
            progress(workdir.name, result)
        return result

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(one, list(specs)))


def e2e_binary(bin_dir: Path) -> Path | None:
    path = bin_dir / "e2e.test"
    return path if os.access(path, os.X_OK) else None


@dataclass(frozen=True)
class Verdict:
    reason: str  # why embedded differs ("" when it need not): an OUT_OF_SCOPE reason, or OPEN_PREFIX + cause
    open: bool  # counted as open (not documented)
    problem: str  # "" or why the suite must fail (a spec upstream passes that embedded fails with no reason)
    note: str  # "" or something to say that fails nothing


def judge(upstream: Result, embedded: Result, open_prefix: str) -> Verdict:
    """How one spec's two results count."""
    name = short_name(upstream.spec.text)
    if not upstream.passed:
        return Verdict(f"{open_prefix}upstream did not pass", True, "", "")
    if embedded.passed:  # strict, as a strict xfail: a listed spec that passes must leave the list (a ratchet)
        stale = f"{name}: passes on embedded now: remove it from KNOWN_OPEN" if name in KNOWN_OPEN else ""
        return Verdict("", False, stale, "")
    if upstream.spec.file in OUT_OF_SCOPE:
        return Verdict(OUT_OF_SCOPE[upstream.spec.file], False, "", "")
    if name in OUT_OF_SCOPE_SPECS:
        return Verdict(OUT_OF_SCOPE_SPECS[name], False, "", "")
    if name in KNOWN_OPEN:
        return Verdict(f"{open_prefix}{KNOWN_OPEN[name]}", True, "", "")
    return Verdict(f"{open_prefix}not explained", True,
                   f"{name}: passes on upstream, {embedded.state} on embedded: {embedded.failure}", "")
