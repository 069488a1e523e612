"""The one cluster lifecycle (``mockgpu.backends.base``): every backend offers the same methods, and a cluster
started through ``Backend.cluster`` is found, described and deleted through the same backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockgpu.backends.base import BACKENDS, Backend, Cluster, ClusterInfo, UpOptions, get_backend
from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.backends.kind.cluster import KindCluster
from mockgpu.backends.upstream import UpstreamCluster
from mockgpu.config import load_spec
from mockgpu.errors import MockgpuError

ROOT = Path(__file__).resolve().parents[2]
SPEC = load_spec(ROOT / "clusters" / "seed-4x2.yaml")


def _methods(proto: type) -> set[str]:
    return {n for n, v in vars(proto).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))}


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_every_backend_offers_the_whole_interface(name, tmp_path):
    backend = get_backend(name, home=tmp_path) if name in ("embedded", "upstream") else get_backend(name)
    assert backend.name == name
    missing = {m for m in _methods(Backend) | {"traits"} if not hasattr(backend, m)}
    assert not missing, f"{name} lacks {sorted(missing)}"


def test_the_cluster_classes_offer_the_whole_cluster_interface():
    for cls in (EmbeddedCluster, UpstreamCluster, KindCluster):
        missing = {m for m in _methods(Cluster) if not hasattr(cls, m)}
        assert not missing, f"{cls.__name__} lacks {sorted(missing)}"


def test_an_owned_embedded_cluster_is_found_described_and_deleted_through_its_backend(tmp_path):
    backend = get_backend("embedded", home=tmp_path)
    assert backend.status("life") is None
    with pytest.raises(MockgpuError, match="no embedded cluster named 'life'"):
        backend.kubeconfig("life")
    cluster = backend.cluster(UpOptions(spec=SPEC, name="life", owned=True, control_plane=False)).start()
    try:
        info = backend.status("life")
        assert isinstance(info, ClusterInfo) and info.state == "running"
        assert backend.kubeconfig("life") == cluster.kubeconfig == tmp_path / "life" / "kubeconfig"
        assert cluster.info().endpoint == info.endpoint
        # a second handle on the same name (the lab open twice) never deletes what the first one serves
        other = backend.cluster(UpOptions(spec=SPEC, name="life", owned=True, control_plane=False))
        with pytest.raises(MockgpuError, match="already served by another process"):
            other.delete()
        assert backend.status("life") is not None
    finally:
        cluster.delete()
    assert backend.status("life") is None and not (tmp_path / "life").exists()


@pytest.mark.parametrize(
    ("name", "opts", "says"),
    [
        ("upstream", UpOptions(spec=SPEC, name="x", control_plane=False), "always runs its control plane"),
        ("kubeconfig", UpOptions(spec=SPEC, name="x", owned=True), "owns none"),
        ("embedded", UpOptions(spec=SPEC, name="x", device_plugin="fake-gpu-operator"), "needs a real kubelet"),
    ],
    ids=["upstream-api-only", "kubeconfig-owned", "embedded-fgo"],
)
def test_options_a_backend_cannot_honour_are_refused_before_any_side_effect(name, opts, says, tmp_path):
    backend = get_backend(name, home=tmp_path) if name in ("embedded", "upstream") else get_backend(name)
    with pytest.raises(MockgpuError, match=says):
        backend.cluster(opts)
    assert list(tmp_path.iterdir()) == []


class _Steps:
    """A kind backend that records what the handle asks of it (no Docker)."""

    def __init__(self, existing: list[str]) -> None:
        self.existing, self.calls = existing, []

    def is_available(self) -> str | None:
        return None

    def create(self, opts: UpOptions) -> ClusterInfo:
        self.calls.append(("create", opts.name))
        self.existing.append(opts.name)
        return ClusterInfo(opts.name, "kind", "https://127.0.0.1:1", Path("/k"), "running")

    def down(self, name: str) -> None:
        self.calls.append(("down", name))
        self.existing.remove(name)

    def cluster_names(self) -> list[str]:
        return list(self.existing)

    def kubeconfig_path(self, opts: UpOptions) -> Path:
        return Path("/k")


def test_a_kind_handle_deletes_what_an_earlier_run_left_then_creates():
    steps = _Steps(existing=["lab01"])
    cluster = KindCluster(steps, UpOptions(spec=SPEC, name="lab01"))
    cluster.delete()  # the earlier run's cluster
    cluster.delete()  # nothing left: no second `kind delete`
    assert cluster.start().info().state == "running"
    assert steps.calls == [("down", "lab01"), ("create", "lab01")]
    assert cluster.results is None  # not owned: nobody follows kube-scheduler's log from this process

