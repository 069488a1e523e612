"""Quota admission over HTTP: concurrent creates cannot both take the last unit of a quota, and the quota
controller gives a finished pod's share back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mockgpu.backends.embedded import EmbeddedCluster

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def core(tmp_path: Path) -> Iterator[Any]:
    with EmbeddedCluster(ROOT / "clusters" / "empty.yaml", home=tmp_path / "home", controllers=True) as c:
        api = c.api_client()
        yield client.CoreV1Api(api)
        api.close()


def _gpu_pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"schedulerName": "none", "containers": [
        {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def _used(core: Any, want: str) -> str:
    deadline = time.monotonic() + 10
    used = None
    while time.monotonic() < deadline:
        used = ((core.read_namespaced_resource_quota("gpus", "default").status.used) or {}).get(
            "requests.nvidia.com/gpu")
        if used == want:
            break
        time.sleep(0.05)
    return str(used)


def test_concurrent_creates_take_the_last_gpu_once(core):
    core.create_namespaced_resource_quota("default", {"metadata": {"name": "gpus"},
                                                      "spec": {"hard": {"requests.nvidia.com/gpu": "3"}}})
    assert _used(core, "0") == "0"

    def create(i: int) -> int:
        try:
            core.create_namespaced_pod("default", _gpu_pod(f"p{i}"))
            return 201
        except ApiException as exc:
            return int(exc.status)

    with ThreadPoolExecutor(12) as pool:
        codes = list(pool.map(create, range(12)))
    assert sorted(codes) == [201] * 3 + [403] * 9
    assert len(core.list_namespaced_pod("default").items) == 3
    assert _used(core, "3") == "3"


def test_a_finished_pod_gives_its_gpu_back(core):
    core.create_namespaced_resource_quota("default", {"metadata": {"name": "gpus"},
                                                      "spec": {"hard": {"requests.nvidia.com/gpu": "1"}}})
    _used(core, "0")
    core.create_namespaced_pod("default", _gpu_pod("a"))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod("default", _gpu_pod("b"))
    assert exc.value.status == 403
    core.patch_namespaced_pod_status("a", "default", {"status": {"phase": "Succeeded"}})
    assert _used(core, "0") == "0"
    core.create_namespaced_pod("default", _gpu_pod("b"))
