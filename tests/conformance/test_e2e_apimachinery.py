"""Kubernetes' own sig-api-machinery [Conformance] specs (e2e.test) against both control planes, one process per
spec (e2e_runner.py), written per spec into docs/conformance.md.

What must hold: upstream passes at least UPSTREAM_FLOOR specs (it passed 41 or 42 of 42 here); embedded passes at
least EMBEDDED_FLOOR (measured: it only goes up); and every spec that passes on upstream passes on embedded unless
its group or the spec is out of scope (OUT_OF_SCOPE, OUT_OF_SCOPE_SPECS, with the reason) or it is a known, open
difference (KNOWN_OPEN, with its cause), which the report counts as open. Any other embedded failure fails the
test, and so does a listed spec that passes (strict, so that the list only shrinks and the floor goes up).

Both planes run at once, PARALLEL specs each: the specs mostly wait (on controllers, watches, quota resyncs), so
the two cores are not the limit. A spec has PER_SPEC seconds (upstream's slowest, the quota status spec, waits up
to 6 minutes for kube-controller-manager's 5-minute quota resync); no spec starts after GLOBAL seconds.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import upstream_env
from e2e_runner import (
    EMBEDDED_FLOOR,
    KNOWN_OPEN,
    OUT_OF_SCOPE,
    OUT_OF_SCOPE_SPECS,
    SUBSET_SIZE,
    UPSTREAM_FLOOR,
    Result,
    judge,
    list_specs,
    run_specs,
    short_name,
)
from known_differences import OPEN_PREFIX

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.backends.upstream import UpstreamCluster

SPEC = Path(__file__).with_name("e2e-cluster.yaml")
PER_SPEC = 420.0
GLOBAL = 900.0
PARALLEL = 3


@pytest.fixture(scope="module")
def e2e_test() -> Path:
    return upstream_env.require_e2e()


@pytest.mark.timeout(GLOBAL + PER_SPEC + 300)
def test_e2e_apimachinery(report, e2e_test, tmp_path_factory):
    specs = list_specs(e2e_test)
    assert len(specs) == SUBSET_SIZE, f"the focused subset has {len(specs)} specs, not {SUBSET_SIZE}: " \
        + "; ".join(s.text for s in specs)
    names, groups = {short_name(s.text) for s in specs}, {s.file for s in specs}
    stale = [k for k in (*KNOWN_OPEN, *OUT_OF_SCOPE_SPECS) if k not in names] + \
        [g for g in OUT_OF_SCOPE if g not in groups]
    assert not stale, f"listed but not a spec or group of the subset: {stale}"
    out = tmp_path_factory.mktemp("e2e-runs")
    start = time.monotonic()
    with UpstreamCluster(SPEC, home=tmp_path_factory.mktemp("e2e-up"), delete_on_exit=True) as up, \
            EmbeddedCluster(SPEC, home=tmp_path_factory.mktemp("e2e-emb"), kubelets=True, scheduler=True,
                            delete_on_exit=True) as emb:
        deadline = time.monotonic() + GLOBAL
        with ThreadPoolExecutor(max_workers=2) as planes:
            runs = {name: planes.submit(run_specs, e2e_test, cluster.kubeconfig, specs, out / name,
                                        timeout=PER_SPEC, deadline=deadline, parallel=PARALLEL,
                                        progress=lambda plane, r: print(f"e2e {plane}: {r.state} {r.seconds:.0f} s "
                                                                        f"{short_name(r.spec.text)}", flush=True))
                    for name, cluster in (("upstream", up), ("embedded", emb))}
            results: dict[str, list[Result]] = {name: run.result() for name, run in runs.items()}
    wall = time.monotonic() - start
    report.e2e_note = (f"`e2e.test` of Kubernetes {e2e_test.parent.parent.name}, one process per spec of "
                       "`[sig-api-machinery] ... [Conformance]` (skipping [Serial], [Disruptive], [Slow], "
                       "webhooks, the aggregator and custom resources), client-go's default content type "
                       f"(protobuf); both planes at once, {PARALLEL} specs at a time each, on a one-node cluster "
                       f"(mockgpu's kubelet on both): {wall:.0f} s in all, with the clusters' start.")
    problems, notes = [], []
    for u, e in zip(results["upstream"], results["embedded"], strict=True):
        v = judge(u, e, OPEN_PREFIX)
        failure = e.failure or u.failure
        report.add_e2e(u.spec.text, u.spec.file, u.state, e.state, failure, v.reason)
        diffs = [] if u.passed and e.passed else [("upstream" if not u.passed else "embedded", failure, v.reason)]
        report.add_explained("e2e", short_name(u.spec.text), diffs)
        if v.problem:
            problems.append(v.problem)
        if v.note:
            notes.append(v.note)
    passed = {name: sum(r.passed for r in rs) for name, rs in results.items()}
    print(f"\ne2e: upstream {passed['upstream']}/{len(specs)}, embedded {passed['embedded']}/{len(specs)} "
          f"in {wall:.0f} s" + "".join(f"\n  note: {n}" for n in notes))
    not_up = [f"{short_name(r.spec.text)}: {r.state}: {r.failure}" for r in results["upstream"] if not r.passed]
    assert passed["upstream"] >= UPSTREAM_FLOOR, "upstream failed:\n" + "\n".join(not_up)
    assert passed["embedded"] >= EMBEDDED_FLOOR, f"embedded passed {passed['embedded']} < {EMBEDDED_FLOOR}"
    assert not problems, (f"embedded passes {passed['embedded']} (EMBEDDED_FLOOR {EMBEDDED_FLOOR}); not as listed:\n"
                          + "\n".join(problems))
