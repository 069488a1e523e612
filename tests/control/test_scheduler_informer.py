"""The scheduler's list+watch: resume from the last resourceVersion, re-list after 410 Gone, clean stop."""

from __future__ import annotations

import threading
from pathlib import Path

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.control.scheduler.api import RawApi
from mockgpu.control.scheduler.informer import Informer

from .conftest import SEED, gpu_pod, wait_for


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []
        self.lock = threading.Lock()

    def __call__(self, kind: str, typ: str, obj: object) -> None:
        with self.lock:
            self.events.append((typ, obj))

    def names(self, typ: str) -> list[str]:
        with self.lock:
            if typ == "SYNC":
                return [p["metadata"]["name"] for t, items in self.events if t == typ for p in items]
            return [o["metadata"]["name"] for t, o in self.events if t == typ]


def _informer(cluster: EmbeddedCluster, sink: Sink, rv: str | None = None) -> Informer:
    inf = Informer(RawApi(cluster.api_client()), "pods", sink)
    inf.resource_version = rv
    inf.start()
    return inf


def test_resume_within_history_and_relist_after_410(tmp_path: Path):
    with EmbeddedCluster(SEED, home=tmp_path, history=5, delete_on_exit=True) as cluster:
        api = RawApi(cluster.api_client())
        first = _informer(cluster, Sink())
        assert first.synced.wait(10)
        first.stop()
        assert not first._thread.is_alive()
        rv = first.resource_version
        api.request("POST", "/api/v1/namespaces/default/pods", body=gpu_pod("recent", 1))
        resumed = Sink()
        inf = _informer(cluster, resumed, rv)  # one event behind: replayed from the watch history
        try:
            wait_for(lambda: resumed.names("ADDED") == ["recent"], what="replayed ADDED")
            assert inf.relists == 0
        finally:
            inf.stop()
        for i in range(10):  # more than the server keeps: resuming from rv is 410 Gone
            api.request("POST", "/api/v1/namespaces/default/pods", body=gpu_pod(f"p{i}", 1))
        relisted = Sink()
        inf = _informer(cluster, relisted, rv)
        try:
            assert inf.synced.wait(10)
            assert inf.relists == 1
            assert sorted(relisted.names("SYNC")) == sorted(["recent", *(f"p{i}" for i in range(10))])
            api.request("POST", "/api/v1/namespaces/default/pods", body=gpu_pod("after", 1))
            wait_for(lambda: "after" in relisted.names("ADDED"), what="watch after the re-list")
        finally:
            inf.stop()
        assert not inf._thread.is_alive()
