"""``GET pods/<name>/log`` on the embedded API server, reading the CRI files the kubelet writes: previous,
timestamps, since, tail and limitBytes from the end, PodLogOptions validation (422 as upstream), and follow
across a rotation."""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kubernetes import client

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.control.apiserver.podlogs import container_log_dir
from mockgpu.control.kubelet.containerlogs import LogRotation, LogWriter, cri_line

SEED_SPEC = Path(__file__).resolve().parents[2] / "clusters" / "seed-4x2.yaml"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    with EmbeddedCluster(SEED_SPEC, home=tmp_path_factory.mktemp("home")) as c:
        yield c


@pytest.fixture(scope="module")
def core(cluster: EmbeddedCluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api_client())


def bound_pod(core: client.CoreV1Api, cluster: EmbeddedCluster, name: str) -> Path:
    """A pod on gpu-0 and the dir its container ``main`` logs to."""
    core.create_namespaced_pod("default", {"metadata": {"name": name}, "spec": {
        "nodeName": "gpu-0", "containers": [{"name": "main", "image": "x"}]}})
    uid = core.read_namespaced_pod(name, "default").metadata.uid
    d = container_log_dir(cluster.state.dir, "default", name, uid, "main")
    d.mkdir(parents=True)
    return d


def test_previous_current_timestamps_and_since(core, cluster) -> None:
    d = bound_pod(core, cluster, "runs")
    (d / "0.log").write_bytes(cri_line("stdout", "first run", when=T0))
    with pytest.raises(client.exceptions.ApiException) as exc:
        core.read_namespaced_pod_log("runs", "default", previous=True)
    body = json.loads(exc.value.body)
    assert (exc.value.status, body["message"]) == (400, 'previous terminated container "main" in pod "runs" not found')
    now = datetime.now(UTC)
    (d / "1.log").write_bytes(cri_line("stdout", "old", when=now - timedelta(hours=1))
                              + cri_line("stderr", "new", when=now))
    assert core.read_namespaced_pod_log("runs", "default", previous=True) == "first run\n"
    assert core.read_namespaced_pod_log("runs", "default") == "old\nnew\n"
    assert core.read_namespaced_pod_log("runs", "default", since_seconds=60) == "new\n"
    assert core.read_namespaced_pod_log("runs", "default", previous=True, timestamps=True) == \
        "2026-01-01T00:00:00.000000000Z first run\n"


def raw_log(cluster: EmbeddedCluster, pod: str, query: str) -> tuple[int, dict]:
    """GET pods/<pod>/log?<query> as sent (the Python client has no sinceTime): (status, Status body)."""
    cfg = cluster.api_client().configuration
    req = urllib.request.Request(f"{cfg.host}/api/v1/namespaces/default/pods/{pod}/log?{query}",
                                 headers={"Authorization": f"Bearer {cluster.token}"})
    try:
        with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=cfg.ssl_ca_cert)) as r:
            return r.status, {}
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


# Status code and message as kube-apiserver v1.37.2 answers them (compared on the upstream backend)
@pytest.mark.parametrize(("query", "code", "message"), [
    ("tailLines=-1", 422, 'PodLogOptions "opts" is invalid: tailLines: Invalid value: -1: must be greater than or '
                          "equal to 0"),
    ("limitBytes=0", 422, 'PodLogOptions "opts" is invalid: limitBytes: Invalid value: 0: must be greater than 0'),
    ("sinceSeconds=0", 422, 'PodLogOptions "opts" is invalid: sinceSeconds: Invalid value: 0: must be greater '
                            "than 0"),
    ("sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", 422,
     'PodLogOptions "opts" is invalid: []: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified'),
    ("tailLines=-1&limitBytes=0", 422, 'PodLogOptions "opts" is invalid: [tailLines: Invalid value: -1: must be '
                                       "greater than or equal to 0, limitBytes: Invalid value: 0: must be greater "
                                       "than 0]"),
    ("tailLines=abc", 400, 'strconv.ParseInt: parsing "abc": invalid syntax'),
    ("sinceTime=yesterday", 400, 'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse '
                                 '"yesterday" as "2006"'),
])
def test_invalid_options(core, cluster, query: str, code: int, message: str) -> None:
    if not core.list_namespaced_pod("default", field_selector="metadata.name=opts").items:
        bound_pod(core, cluster, "opts")
    status, body = raw_log(cluster, "opts", query)
    assert (status, body["message"]) == (code, message)
    if code == 422:
        assert (body["reason"], body["details"]["kind"]) == ("Invalid", "PodLogOptions")


def test_tail_and_limit_bytes_of_a_large_log(core, cluster) -> None:
    d = bound_pod(core, cluster, "big")
    chunk = b"".join(cri_line("stdout", f"line {i}", when=T0) for i in range(1000))
    with (d / "0.log").open("wb") as fh:
        for _ in range(400):  # ~20 MB
            fh.write(chunk)
        fh.write(cri_line("stdout", "the end", when=T0))
    assert core.read_namespaced_pod_log("big", "default", tail_lines=1) == "the end\n"
    assert core.read_namespaced_pod_log("big", "default", tail_lines=3, limit_bytes=10) == "line 998\nl"


def test_follow_goes_on_across_a_rotation(core, cluster) -> None:
    d = bound_pod(core, cluster, "chatty")
    writer = LogWriter(d / "0.log", LogRotation(max_size=4096, max_files=5))
    want = [f"line {i:04d} " + "x" * 80 for i in range(300)]  # ~36 kB: about 9 rotations

    def write() -> None:
        for i, text in enumerate(want):
            writer._write(cri_line("stdout", text))
            if i % 20 == 19:
                time.sleep(0.15)  # the reader keeps up, as it does with a real container's pace
        writer.close()
        core.patch_namespaced_pod_status("chatty", "default", {"status": {"phase": "Succeeded"}})

    t = threading.Thread(target=write)
    t.start()
    resp = core.read_namespaced_pod_log("chatty", "default", follow=True, _preload_content=False)
    text = resp.read().decode()
    t.join()
    assert len(list(d.iterdir())) == 5  # rotated (and pruned) while followed
    assert text.splitlines() == want
