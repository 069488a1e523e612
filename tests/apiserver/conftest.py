"""Fixtures for API-server tests: an in-process embedded cluster and the official client against it."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.config.clusterspec import load_spec
from mockgpu.control.apiserver.discovery import RESOURCES
from mockgpu.control.apiserver.handlers import ResourceAPI
from mockgpu.control.apiserver.store import Store

ROOT = Path(__file__).resolve().parents[2]
SEED_SPEC = ROOT / "clusters" / "seed-4x2.yaml"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    """The seed cluster (4 nodes x 2 GPUs) served from a thread; state under tmp_path."""
    c = EmbeddedCluster(SEED_SPEC, home=tmp_path / "home", bookmark_interval=0.5)
    with c:
        yield c


@pytest.fixture
def core(cluster: EmbeddedCluster) -> Iterator[Any]:
    from kubernetes import client

    api = cluster.api_client()
    yield client.CoreV1Api(api)
    api.close()


class Raw:
    """Plain HTTPS requests to a cluster (for what the official client cannot send: bad bodies, no token)."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster
        self.ctx = ssl.create_default_context(cafile=str(cluster.state.cert_file))

    def request(self, method: str, path: str, body: bytes | None = None, *, token: str | None = "default",
                content_type: str = "application/json", headers: dict[str, str] | None = None,
                timeout: float = 10) -> tuple[int, bytes, dict[str, str]]:
        hdrs = {"Content-Type": content_type, **(headers or {})}
        if token == "default":
            token = self.cluster.token
        if token is not None:
            hdrs["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.cluster.url + path, data=body, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as resp:
                return resp.status, resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as err:
            return err.code, err.read(), dict(err.headers)

    def json(self, method: str, path: str, obj: Any = None, **kw: Any) -> tuple[int, Any]:
        body = json.dumps(obj).encode() if obj is not None else None
        code, data, _ = self.request(method, path, body, **kw)
        return code, json.loads(data) if data else None


@pytest.fixture
def resource_api(tmp_path: Path) -> Iterator[ResourceAPI]:
    """The API server's handlers over a fresh store, without HTTP, with the ``default`` namespace."""
    store = Store(tmp_path / "store.db")
    api = ResourceAPI(store)
    api.create(RESOURCES["namespaces"], "", {"metadata": {"name": "default"}})
    yield api
    store.close()


@pytest.fixture
def raw(cluster: EmbeddedCluster) -> Raw:
    return Raw(cluster)


@pytest.fixture
def gated_cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    """The seed cluster with the GenericWorkload feature gate on (scheduling.k8s.io/v1beta1 served)."""
    spec = load_spec(SEED_SPEC)
    body = spec.spec.model_copy(update={"featureGates": {"GenericWorkload": True}})
    with EmbeddedCluster(spec.model_copy(update={"spec": body}), home=tmp_path / "home",
                         bookmark_interval=0.5) as c:
        yield c


@pytest.fixture
def gated_raw(gated_cluster: EmbeddedCluster) -> Raw:
    return Raw(gated_cluster)


@pytest.fixture
def make_pod() -> Any:
    return pod


def pod(name: str, gpus: int | str | None = None, **labels: str) -> dict[str, Any]:
    """A minimal pod manifest, optionally asking for GPUs in limits."""
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    if gpus is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [container]}}
