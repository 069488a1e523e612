"""Both control planes for the conformance suite (per test module) and the report (per session).

The upstream side runs the real kube-apiserver (without the TaintNodesByCondition admission plugin, which
taints every new Node not-ready until the node-lifecycle-controller sees it Ready), kube-controller-manager
(without its node-lifecycle-controller: the suite's nodes have no kubelet to renew leases, so it would
taint them unreachable) and kube-scheduler at ``-v=10``. The embedded side runs mockgpu's API server and
scheduler in process. Neither runs kubelets: pods are bound, never started. Per module, so that no
scheduler thread outlives the suite's modules into other tests.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import upstream_env
from conformance_harness import EmbeddedSide, UpstreamSide
from report import SECTIONS, Report

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.backends.upstream import UpstreamCluster
from mockgpu.backends.upstream.binaries import versions

ROOT = Path(__file__).resolve().parents[2]
PROFILES = Path(__file__).with_name("scheduler-profiles.yaml")
EMPTY = ROOT / "clusters" / "empty.yaml"
REPORT_PATH = ROOT / "docs" / "conformance.md"


@pytest.fixture(scope="session")
def report() -> Iterator[Report]:
    r = Report()
    yield r
    ran = r.sections_run()
    if ran == set(SECTIONS) and os.environ.get("MOCKGPU_CONFORMANCE_REPORT", "1") != "0":
        r.write(REPORT_PATH, versions()["KUBERNETES_VERSION"])
        print(f"\nconformance report written to {REPORT_PATH}")
    elif ran:
        print(f"\nconformance report not written: sections {sorted(set(SECTIONS) - ran)} did not run")


@pytest.fixture(scope="module")
def upstream_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamCluster]:
    upstream_env.require_upstream()
    home = tmp_path_factory.mktemp("conf-up")
    with UpstreamCluster(EMPTY, name="conformance", home=home, scheduler_config=PROFILES, scheduler_verbosity=10,
                         controllers="*,-node-lifecycle-controller",
                         apiserver_args=("--disable-admission-plugins=TaintNodesByCondition",),
                         delete_on_exit=True) as c:
        yield c


@pytest.fixture(scope="module")
def embedded_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    home = tmp_path_factory.mktemp("conf-emb")
    with EmbeddedCluster(EMPTY, name="conformance", home=home, scheduler=True, scheduler_config=PROFILES,
                         delete_on_exit=True) as c:
        yield c


@pytest.fixture(scope="module")
def sides(upstream_cluster: UpstreamCluster, embedded_cluster: EmbeddedCluster) -> tuple[EmbeddedSide, UpstreamSide]:
    emb = EmbeddedSide(embedded_cluster.api_client(), embedded_cluster.control_plane.scheduler)
    up = UpstreamSide(upstream_cluster.api_client(), upstream_cluster.component_log("kube-scheduler"))
    return emb, up
