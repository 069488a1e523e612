"""Fixtures for the upstream backend tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import upstream_env

from mockgpu.backends.upstream import UpstreamCluster

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def upstream_bin() -> Path:
    return upstream_env.require_upstream()


@pytest.fixture(scope="module")
def seed_upstream(upstream_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamCluster]:
    """The seed 4x2 spec on the real control plane, with mockgpu's kubelets."""
    home = tmp_path_factory.mktemp("up")
    with UpstreamCluster(ROOT / "clusters" / "seed-4x2.yaml", home=home, delete_on_exit=True) as c:
        yield c
