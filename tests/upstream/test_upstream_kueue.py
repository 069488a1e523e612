"""Kueue (sigs.k8s.io/kueue, built by scripts/upstream-build) next to the upstream control plane (issue 20's "Kueue
admits and suspends Jobs against a nvidia.com/gpu quota on the upstream backend in a test that runs in CI"); the
scenarios are ``tests/kueue_scenario.py``'s, shared with the kind backend's test. Skips only where Go is absent and
Kueue is not built (``upstream_env.require_kueue``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import kueue_scenario
import pytest
import upstream_env

from mockgpu.backends.upstream import UpstreamCluster

ROOT = Path(__file__).resolve().parents[2]
# where Go is present but Kueue not yet built, the fixture builds it first (about 260 s cold here)
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def kueue_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamCluster]:
    upstream_env.require_kueue()
    home = tmp_path_factory.mktemp("kueue")
    with UpstreamCluster(ROOT / "clusters" / "seed-4x2-kueue.yaml", home=home, delete_on_exit=True) as c:
        yield c


def test_cluster_info_says_kueue_runs(kueue_cluster):
    assert kueue_cluster.info().kueue is True
    # the manager's log sits with the other components' logs
    assert kueue_cluster.component_log("kueue-manager").is_file()


def test_gpu_quota_admits_one_job_and_suspends_the_next_until_it_finishes(kueue_cluster):
    kueue_scenario.quota_scenario(kueue_cluster.api_client())


def test_a_queue_reclaims_its_quota_lent_within_the_cohort(kueue_cluster):
    kueue_scenario.cohort_scenario(kueue_cluster.api_client())
