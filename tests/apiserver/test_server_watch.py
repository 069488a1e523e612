"""Watch semantics: ordering under concurrent writes, resume from a version, 410, bookmarks, selectors."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from mockgpu.backends.embedded import EmbeddedCluster

SEED_SPEC = Path(__file__).resolve().parents[2] / "clusters" / "seed-4x2.yaml"


class Stream:
    """A raw watch response read line by line."""

    def __init__(self, cluster: EmbeddedCluster, path: str, timeout: float = 10) -> None:
        ctx = ssl.create_default_context(cafile=str(cluster.state.cert_file))
        port = int(cluster.url.rsplit(":", 1)[1])
        self.conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=timeout)
        self.conn.request("GET", path, headers={"Authorization": f"Bearer {cluster.token}"})
        self.resp = self.conn.getresponse()

    def next(self) -> dict[str, Any] | None:
        line = self.resp.readline()
        return json.loads(line) if line else None

    def close(self) -> None:
        self.conn.close()


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


def test_watch_sees_every_event_in_order_under_concurrent_writes(core, cluster):
    start_rv = core.list_namespaced_pod("default").metadata.resource_version
    events: list[tuple[str, str, int]] = []
    expected = 40 * 2 + 10  # creates + label patches + deletes

    def consume() -> None:
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_pod, "default", resource_version=start_rv, timeout_seconds=30):
            events.append((ev["type"], ev["object"].metadata.name, int(ev["object"].metadata.resource_version)))
            if len(events) >= expected:
                w.stop()

    t = threading.Thread(target=consume)
    t.start()
    api = cluster.api_client()
    c2 = client.CoreV1Api(api)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: c2.create_namespaced_pod("default", _pod(f"w{i}")), range(40)))
        list(pool.map(lambda i: c2.patch_namespaced_pod(f"w{i}", "default", {"metadata": {"labels": {"i": str(i)}}}),
                      range(40)))
        list(pool.map(lambda i: c2.delete_namespaced_pod(f"w{i}", "default"), range(10)))
    t.join(30)
    api.close()
    assert len(events) == expected
    rvs = [rv for _, _, rv in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)  # strictly increasing: nothing reordered
    assert sorted(n for typ, n, _ in events if typ == "ADDED") == sorted(f"w{i}" for i in range(40))
    assert sum(typ == "MODIFIED" for typ, _, _ in events) == 40
    assert sorted(n for typ, n, _ in events if typ == "DELETED") == sorted(f"w{i}" for i in range(10))


def test_watch_without_version_starts_with_current_objects(core, cluster):
    core.create_namespaced_pod("default", _pod("old"))
    s = Stream(cluster, "/api/v1/namespaces/default/pods?watch=true")
    first = s.next()
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "old"
    core.create_namespaced_pod("default", _pod("new"))
    second = s.next()
    assert second["type"] == "ADDED" and second["object"]["metadata"]["name"] == "new"
    s.close()


def test_watch_resumes_from_a_version(core, cluster):
    core.create_namespaced_pod("default", _pod("a"))
    rv = core.read_namespaced_pod("a", "default").metadata.resource_version
    core.create_namespaced_pod("default", _pod("b"))
    core.delete_namespaced_pod("a", "default")
    s = Stream(cluster, f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}")
    got = [s.next(), s.next()]
    s.close()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [("ADDED", "b"), ("DELETED", "a")]


def test_too_old_resource_version_is_410(tmp_path):
    with EmbeddedCluster(SEED_SPEC, home=tmp_path, history=5) as c:
        api = c.api_client()
        core = client.CoreV1Api(api)
        for i in range(20):
            core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
        s = Stream(c, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=2")
        ev = s.next()
        s.close()
        assert ev["type"] == "ERROR"
        assert ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"
        assert ev["object"]["message"].startswith("too old resource version: 2 (")
        api.close()


def test_bookmarks_and_timeout(core, cluster):
    t0 = time.monotonic()
    s = Stream(cluster, "/api/v1/namespaces/default/pods?watch=true&resourceVersion=1&allowWatchBookmarks=true"
                        "&timeoutSeconds=2")
    seen = []
    while (ev := s.next()) is not None:
        seen.append(ev)
    s.close()
    elapsed = time.monotonic() - t0
    assert 1.5 < elapsed < 5
    marks = [e for e in seen if e["type"] == "BOOKMARK"]
    assert marks and marks[-1]["object"]["kind"] == "Pod"
    assert int(marks[-1]["object"]["metadata"]["resourceVersion"]) >= 1


def test_selector_watch_reports_leaving_objects_as_deleted(core, cluster):
    s = Stream(cluster, "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3D")  # unscheduled pods only
    core.create_namespaced_pod("default", _pod("u"))
    assert s.next()["type"] == "ADDED"
    core.create_namespaced_pod_binding("u", "default", client.V1Binding(
        metadata=client.V1ObjectMeta(name="u"), target=client.V1ObjectReference(kind="Node", name="gpu-0")),
        _preload_content=False)
    ev = s.next()
    s.close()
    assert ev["type"] == "DELETED" and ev["object"]["metadata"]["name"] == "u"


def test_send_initial_events_ends_with_bookmark(core, cluster):
    core.create_namespaced_pod("default", _pod("i"))
    s = Stream(cluster, "/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true"
                        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
    first, second = s.next(), s.next()
    s.close()
    assert first["type"] == "ADDED"
    assert second["type"] == "BOOKMARK"
    assert second["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_legacy_watch_path_of_one_object(core, cluster):
    for n in ("one", "two"):
        core.create_namespaced_pod("default", _pod(n))
    s = Stream(cluster, "/api/v1/watch/namespaces/default/pods/two?timeoutSeconds=1")
    got = []
    while (ev := s.next()) is not None:
        got.append((ev["type"], ev["object"]["metadata"]["name"]))
    s.close()
    assert got == [("ADDED", "two")]
