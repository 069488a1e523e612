"""The seed cluster's nodes serve dcgm-exporter's metrics, and a real Prometheus (Debian's 2.42) scrapes them.

An embedded seed-4x2 cluster with kubelets and the scheduler runs a training pod holding 7 GiB and an idle holder
of 2 GiB. The exporters are found through the Nodes' annotations (``endpoints``), written as a ``file_sd`` targets
file, and Prometheus, listening on 127.0.0.1 only, scrapes all four nodes; ``DCGM_FI_DEV_FB_USED{pod="trainer"}``
answers 7168 (MiB), the memory the workload holds. Prometheus comes from ``./scripts/prometheus-fetch``
(``.cache/prometheus/bin``), ``$MOCKGPU_PROMETHEUS`` or PATH; without it that test skips, saying so.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import polling
import pytest
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.cli import main
from mockgpu.control.kubelet.exporter import endpoints, write_file_sd

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"
NODES = {f"gpu-{i}" for i in range(4)}
pytestmark = pytest.mark.timeout(240)
wait_for = functools.partial(polling.wait_for, timeout=60.0)


def prometheus_binary() -> str | None:
    for candidate in (os.environ.get("MOCKGPU_PROMETHEUS"), str(ROOT / ".cache" / "prometheus" / "bin" / "prometheus"),
                      shutil.which("prometheus")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def gpu_pod(name: str, *args: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [{
                "name": "main", "image": "mockgpu/workload", "command": ["mockgpu-workload", *args],
                "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def scrape(url: str) -> list[tuple[str, dict[str, str], float]]:
    with urllib.request.urlopen(url, timeout=5) as r:
        return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(r.read().decode())
                for s in f.samples]


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedCluster, dict[str, str]]]:
    home = tmp_path_factory.mktemp("home")
    with EmbeddedCluster(SEED, home=home, kubelets=True, scheduler=True, delete_on_exit=True) as c:
        core = client.CoreV1Api(c.api_client())
        core.create_namespaced_pod("default", gpu_pod("trainer", "train", "--memory", "7GiB", "--duration", "0",
                                                      "--interval", "0.2", "--log-every", "50"))
        core.create_namespaced_pod("default", gpu_pod("idle", "hold", "--memory", "2GiB"))

        def running() -> bool:
            pods = {p.metadata.name: p for p in core.list_namespaced_pod("default").items}
            return all(pods.get(n) is not None and pods[n].status.phase == "Running" for n in ("trainer", "idle"))

        wait_for(running, what="trainer and idle Running")
        nodes = {n: core.read_namespaced_pod(n, "default").spec.node_name for n in ("trainer", "idle")}
        yield c, nodes


def test_every_node_serves_dcgm_metrics_with_the_pods_holding_gpus(seed: tuple[EmbeddedCluster, dict[str, str]]
                                                                   ) -> None:
    cluster, nodes = seed
    urls = endpoints(cluster.api_client())
    assert set(urls) == NODES and all(u.startswith("http://127.0.0.1:") for u in urls.values())

    def held(pod: str) -> tuple[str, dict[str, str], float] | None:
        rows = scrape(urls[nodes[pod]])
        return next((r for r in rows if r[0] == "DCGM_FI_DEV_FB_USED" and r[1].get("pod") == pod), None)

    # the pod is Running (its device allocated) just before its one cudaMalloc: wait for memory, then check it
    trainer = wait_for(lambda: (r := held("trainer")) and r[2] > 0 and r, what="trainer's FB_USED series > 0")
    assert trainer[2] == 7168
    assert (trainer[1]["namespace"], trainer[1]["container"], trainer[1]["Hostname"]) == \
        ("default", "main", nodes["trainer"])
    idle = wait_for(lambda: (r := held("idle")) and r[2] > 0 and r, what="idle's FB_USED series > 0")
    assert idle[2] == 2048

    def util(pod: str) -> float | None:
        rows = scrape(urls[nodes[pod]])
        return next((r[2] for r in rows if r[0] == "DCGM_FI_DEV_GPU_UTIL" and r[1].get("pod") == pod), None)

    assert util("idle") == 0
    wait_for(lambda: (util("trainer") or 0) > 50, what="the trainer past its warm-up")  # training profile, mean 80


def test_cli_lists_and_writes_the_targets(seed: tuple[EmbeddedCluster, dict[str, str]], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    cluster, _ = seed
    urls = endpoints(cluster.api_client())
    kubeconfig = str(cluster.kubeconfig)
    assert main(["metrics", "targets", "--kubeconfig", kubeconfig, "--name", "seed"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{n} {u}" for n, u in sorted(urls.items())]
    out = tmp_path / "targets.json"
    assert main(["metrics", "targets", "--kubeconfig", kubeconfig, "--name", "seed", "--out", str(out)]) == 0
    groups = json.loads(out.read_text())
    assert [(g["targets"], g["labels"]["mockgpu_node"], g["labels"]["mockgpu_cluster"]) for g in groups] == \
        [([u.split("/")[2]], n, "seed") for n, u in sorted(urls.items())]


def test_prometheus_scrapes_the_nodes_and_answers_fb_used_by_pod(
        seed: tuple[EmbeddedCluster, dict[str, str]], tmp_path: Path) -> None:
    binary = prometheus_binary()
    if binary is None:
        pytest.skip("no prometheus binary: run ./scripts/prometheus-fetch (Debian's package, unpacked into .cache)")
    cluster, nodes = seed
    targets = write_file_sd(tmp_path / "targets.json", endpoints(cluster.api_client()), cluster.name)
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({  # YAML is a superset of JSON
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "dcgm", "file_sd_configs": [{"files": [str(targets)],
                                                                     "refresh_interval": "1s"}]}]}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        def query(q: str) -> list[dict] | None:
            url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    body = json.loads(r.read())
            except OSError:
                assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
                return None
            return body["data"]["result"] or None

        up = wait_for(lambda: (r := query('up{job="dcgm"} == 1')) and len(r) == len(NODES) and r,
                      what="Prometheus scraping all four nodes")
        assert {x["metric"]["mockgpu_node"] for x in up} == NODES
        (series,) = wait_for(lambda: query('DCGM_FI_DEV_FB_USED{pod="trainer"} > 0'), what="trainer's FB_USED")
        assert series["value"][1] == "7168"
        m = series["metric"]
        assert (m["namespace"], m["container"], m["Hostname"], m["mockgpu_node"], m["mockgpu_cluster"]) == \
            ("default", "main", nodes["trainer"], nodes["trainer"], cluster.name)
        (idle,) = wait_for(lambda: query('DCGM_FI_DEV_FB_USED{pod="idle"} > 0'), what="idle's FB_USED")
        assert idle["value"][1] == "2048"
        # 8 GPUs, two held: 6 series without a pod
        assert len(wait_for(lambda: query('DCGM_FI_DEV_FB_USED{pod=""}'), what="unheld GPUs")) == 6
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
