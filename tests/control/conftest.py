"""Fixtures for the scheduler tests: an API-only embedded cluster (no kubelets) and a scheduler on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polling
import pytest
from kubernetes import client

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.config import load_spec
from mockgpu.control.scheduler import Scheduler, load_scheduler_config

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"
PROFILES = ROOT / "clusters" / "seed-4x2-profiles.yaml"


wait_for = polling.wait_for


def gpu_pod(name: str, gpus: int, *, scheduler: str | None = None, priority: int | None = None) -> dict:
    spec: dict = {"containers": [{"name": "main", "image": "mockgpu/workload",
                                  "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


class Env:
    """A running cluster, its CoreV1Api, and a way to start schedulers that are stopped at teardown."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster
        self.api = client.CoreV1Api(cluster.api_client())
        self.schedulers: list[Scheduler] = []

    def scheduler(self, config_spec: Path | None = None, **kw: object) -> Scheduler:
        cfg = load_scheduler_config(load_spec(config_spec or self.cluster.spec.source))
        kw.setdefault("unschedulable_timeout", 300.0)
        s = Scheduler(self.cluster.api_client(), cfg, **kw).start()  # type: ignore[arg-type]
        self.schedulers.append(s)
        assert s.wait_synced(10)
        return s

    def create(self, pod: dict) -> None:
        self.api.create_namespaced_pod("default", pod)

    def pod(self, name: str) -> client.V1Pod:
        return self.api.read_namespaced_pod(name, "default")

    def events(self, name: str) -> list[client.CoreV1Event]:
        return self.api.list_namespaced_event("default", field_selector=f"involvedObject.name={name}").items

    def wait_bound(self, name: str, timeout: float = 10.0) -> client.V1Pod:
        return wait_for(lambda: (p := self.pod(name)).spec.node_name and p, timeout, f"{name} bound")

    def wait_unschedulable(self, name: str, timeout: float = 10.0) -> client.V1PodCondition:
        def cond():
            for c in self.pod(name).status.conditions or []:
                if c.type == "PodScheduled" and c.status == "False":
                    return c
            return None
        return wait_for(cond, timeout, f"{name} PodScheduled=False")


def _env(tmp_path: Path, spec: Path) -> Iterator[Env]:
    with EmbeddedCluster(spec, home=tmp_path / "home", delete_on_exit=True) as cluster:
        env = Env(cluster)
        try:
            yield env
        finally:
            for s in env.schedulers:
                s.stop()


@pytest.fixture
def seed(tmp_path: Path) -> Iterator[Env]:
    yield from _env(tmp_path, SEED)


@pytest.fixture
def profiles(tmp_path: Path) -> Iterator[Env]:
    yield from _env(tmp_path, PROFILES)
