"""Kueue on a real kind cluster (``spec.kueue``): installed by ``up`` from the same build the upstream backend runs
(``scripts/upstream-build kueue``, packed by ``scripts/kind-images kueue``), then ``tests/kueue_scenario.py``'s
scenarios with the workloads in the mockgpu image. Skips, saying why, where Docker, kind or kubectl is missing, or
where the Kueue image was not built."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import kueue_scenario
import pytest
from kubernetes import config as kube_config

from mockgpu.backends.common.kueue import kueue_image
from mockgpu.backends.kind import KindBackend

from .kind_live import live_cluster

pytestmark = [pytest.mark.kind, pytest.mark.timeout(1500)]  # the cluster: minutes to create (4 nodes)

NAME = "mockgpu-kueue"
WAIT = 300.0  # real containers on a loaded 2-core machine


@pytest.fixture(scope="module")
def kind_kueue(tmp_path_factory) -> Iterator[dict[str, Any]]:
    if subprocess.run(["docker", "image", "inspect", kueue_image()], capture_output=True).returncode != 0:
        pytest.skip(f"no image {kueue_image()}: scripts/upstream-build kueue, then scripts/kind-images kueue")
    yield from live_cluster(NAME, "seed-4x2-kueue.yaml", tmp_path_factory.mktemp("kind-kueue"), "kind Kueue")


def _api(c: dict[str, Any]) -> Any:
    return kube_config.new_client_from_config(str(c["kubeconfig"]))


def test_kueue_admits_and_suspends_jobs_on_kind(kind_kueue):
    image = KindBackend().traits.workload_image
    # real containers on a loaded machine: train-2 must be seen waiting before train-1 ends
    kueue_scenario.quota_scenario(_api(kind_kueue), image=image, wait=WAIT, first_runs=180)


def test_a_queue_reclaims_its_quota_lent_within_the_cohort_on_kind(kind_kueue):
    kueue_scenario.cohort_scenario(_api(kind_kueue), image=KindBackend().traits.workload_image, wait=WAIT)
