"""Benchmark of the embedded scheduler: pods scheduled per second, end to end through the API.

Three processes, as on a real control plane: the embedded API server alone (an ``EmbeddedCluster`` with no
kubelets and no scheduler of its own, in a child process), the scheduler under test (this process, nothing
else in it), and the users (a child process creating N one-GPU pods from 4 client threads and watching until
every pod is bound). 100 KWOK-style nodes with 8 GPUs each are created through the API. The scheduler runs
one profile, ``bench-scheduler`` (upstream's default plugins), named by the benchmark's pods. Time runs from
the first create until the watch has seen every pod bound. Figures are medians; a fresh cluster per run.

``--peer upstream`` measures the real thing in the same run, interleaved: the same nodes and pods on the
upstream backend's control plane (kube-apiserver + etcd, kube-controller-manager, and the real kube-scheduler
v1.37.2 running the same ``bench-scheduler`` profile of default plugins, at ``-v=1``). Its client rate limit
is raised from the default (qps 50, burst 100, which alone caps binding at about 50 pods/s) to 5000, so the
ratio compares the two control planes, not a configured throttle.

    python benchmarks/scheduler.py [--runs 3] [--pods 800] [--nodes 100] [--gpus 8] [--profile] [--peer upstream]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import multiprocessing as mp
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mockgpu.backends.embedded import EmbeddedCluster  # noqa: E402
from mockgpu.backends.upstream import UpstreamCluster  # noqa: E402
from mockgpu.backends.upstream.binaries import missing  # noqa: E402
from mockgpu.control.scheduler import Scheduler  # noqa: E402
from mockgpu.control.scheduler.api import RawApi, watch_events  # noqa: E402
from mockgpu.sched.config import parse_config  # noqa: E402

PROFILE = "bench-scheduler"
CPU: dict[str, list[float]] = {"embedded": [], "upstream": []}  # scheduler-process CPU ms per pod, per run
PEER_CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
               "clientConnection": {"qps": 5000, "burst": 5000}, "profiles": [{"schedulerName": PROFILE}]}


def node(i: int, gpus: int) -> dict:
    res = {"cpu": "64", "memory": "512Gi", "pods": "110", "ephemeral-storage": "100Gi", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"kwok-{i}", "labels": {"kubernetes.io/hostname": f"kwok-{i}", "type": "kwok"}},
            "status": {"capacity": res, "allocatable": res,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def pod(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"bench-{i}", "namespace": "default"},
            "spec": {"schedulerName": PROFILE, "containers": [
                {"name": "main", "image": "mockgpu/workload", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


class BoundCounter:
    """A pod watch (its own connection) that notes when ``target`` pods have a node."""

    def __init__(self, api: RawApi, target: int) -> None:
        self.api, self.target = api, target
        self.bound: set[str] = set()
        self.done = threading.Event()
        self.finished_at = 0.0
        rv = api.list("pods")["metadata"]["resourceVersion"]
        self.resp = api.watch("pods", rv, 600, 120.0)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for ev in watch_events(self.resp):
                obj = ev.get("object") or {}
                if ev.get("type") in ("ADDED", "MODIFIED") and (obj.get("spec") or {}).get("nodeName"):
                    self.bound.add(obj["metadata"]["name"])
                    if len(self.bound) >= self.target:
                        self.finished_at = time.perf_counter()
                        self.done.set()
                        return
        except Exception:
            self.done.set()

    def close(self) -> None:
        try:
            self.resp.shutdown()
        except Exception:
            pass


def _client(url: str, ca: str, token: str) -> RawApi:
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host, cfg.ssl_ca_cert = url, ca
    cfg.api_key, cfg.api_key_prefix = {"authorization": token}, {"authorization": "Bearer"}
    return RawApi(client.ApiClient(cfg))


def drive(url: str, ca: str, token: str, n: int, out: mp.Queue) -> None:
    """Child process: watch pods, create ``n`` from 4 threads, report (create seconds, all-bound seconds)."""
    counter = BoundCounter(_client(url, ca, token), n)
    clients = [_client(url, ca, token) for _ in range(4)]
    start = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: clients[i % 4].request("POST", "/api/v1/namespaces/default/pods", body=pod(i)),
                      range(n)))
    created = time.perf_counter() - start
    ok = counter.done.wait(300) and len(counter.bound) >= n
    counter.close()
    out.put((created, counter.finished_at - start if ok else None, len(counter.bound)))


def serve(home: str, name: str, out: mp.Queue, stop: Any) -> None:
    """Child process: an API-only embedded cluster until ``stop`` is set."""
    with EmbeddedCluster(None, name=name, home=home, delete_on_exit=True) as cluster:
        out.put((cluster.url, str(cluster.state.cert_file), cluster.token))
        stop.wait()


def serve_upstream(home: str, name: str, out: mp.Queue, stop: Any) -> None:
    """Child process: the real control plane, no kubelets (an empty spec), until ``stop`` is set."""
    config = Path(home) / f"{name}-scheduler.yaml"
    config.write_text(json.dumps(PEER_CONFIG))
    with UpstreamCluster(None, name=name, home=home, delete_on_exit=True, scheduler_config=config,
                         scheduler_verbosity=1) as cluster:
        out.put((cluster.url, str(cluster.state.cert_file), cluster.token, str(cluster.state.dir)))
        stop.wait()


def _cpu_seconds(marker: str) -> float:
    """User+system CPU of the kube-scheduler process whose command line names ``marker`` (its state folder)."""
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            if cmd and cmd[0].endswith(b"kube-scheduler") and any(marker.encode() in a for a in cmd):
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    raise SystemExit(f"no kube-scheduler process of {marker}")


def peer_run(home: Path, run: int, nodes: int, gpus: int, n: int) -> float:
    ctx = mp.get_context("spawn")
    out, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=serve_upstream, args=(str(home), f"bench-peer-{run}", out, stop))
    server.start()
    try:
        url, ca, token, state_dir = out.get(timeout=300)
        api = _client(url, ca, token)
        for i in range(nodes):
            api.request("POST", "/api/v1/nodes", body=node(i, gpus))
        time.sleep(2.0)  # the scheduler's node informer (no way to ask it; kube-scheduler sees them in ms)
        users = ctx.Process(target=drive, args=(url, ca, token, n, (result := ctx.Queue())))
        cpu0 = _cpu_seconds(state_dir)
        users.start()
        created, elapsed, bound = result.get(timeout=600)
        cpu = _cpu_seconds(state_dir) - cpu0
        users.join(30)
        api.client.close()
        if elapsed is None:
            raise SystemExit(f"upstream: only {bound}/{n} pods bound")
        print(f"run {run} (kube-scheduler): {n} pods on {nodes}x{gpus} GPUs: created in {created:.2f}s, all bound "
              f"after {elapsed:.2f}s -> {n / elapsed:.0f} pods/s; kube-scheduler CPU {cpu / n * 1000:.2f} ms/pod",
              flush=True)
        CPU["upstream"].append(cpu / n * 1000)
        return n / elapsed
    finally:
        stop.set()
        server.join(60)
        if server.is_alive():
            server.terminate()


def one_run(home: Path, run: int, nodes: int, gpus: int, n: int, profile: bool) -> float:
    ctx = mp.get_context("spawn")
    out, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=serve, args=(str(home), f"bench-sched-{run}", out, stop))
    server.start()
    try:
        url, ca, token = out.get(timeout=120)
        return _measure(url, ca, token, run, nodes, gpus, n, profile)
    finally:
        stop.set()
        server.join(30)
        if server.is_alive():
            server.terminate()


def _measure(url: str, ca: str, token: str, run: int, nodes: int, gpus: int, n: int, profile: bool) -> float:
    api = _client(url, ca, token)
    for i in range(nodes):
        api.request("POST", "/api/v1/nodes", body=node(i, gpus))
    config = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           "profiles": [{"schedulerName": PROFILE}]}, "<bench>")
    sched = Scheduler(api.client, config, seed=run)
    prof = cProfile.Profile() if profile else None
    if prof is not None:  # profile the loop thread itself (cProfile sees one thread only)
        loop = sched._run
        sched._thread = threading.Thread(target=lambda: prof.runcall(loop), daemon=True)
    sched.start()
    try:
        sched.wait_synced(30)
        while len(sched.cache.nodes()) < nodes:
            time.sleep(0.01)
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        users = ctx.Process(target=drive, args=(url, ca, token, n, out))
        cpu0 = time.process_time()
        users.start()
        created, elapsed, bound = out.get(timeout=600)
        cpu = time.process_time() - cpu0
        users.join(30)
        if elapsed is None:
            raise SystemExit(f"only {bound}/{n} pods bound")
        print(f"run {run}: {n} pods on {nodes}x{gpus} GPUs: created in {created:.2f}s, all bound after "
              f"{elapsed:.2f}s -> {n / elapsed:.0f} pods/s; scheduler process CPU {cpu / n * 1000:.2f} ms/pod, "
              f"of which schedule_one {sched.cycle_seconds / n * 1000:.2f} ms ({sched.cycles} cycles)", flush=True)
        CPU["embedded"].append(cpu / n * 1000)
        return n / elapsed
    finally:
        sched.stop()
        api.client.close()
        if prof is not None:
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pods", type=int, default=800)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--profile", action="store_true", help="cProfile the scheduler's loop thread in the first run")
    ap.add_argument("--peer", choices=("upstream",), help="also measure the real control plane, runs interleaved")
    args = ap.parse_args()
    if args.pods > args.nodes * args.gpus:
        ap.error("--pods must fit: at most nodes x gpus one-GPU pods")
    if args.peer and (problem := missing()):
        ap.error(problem)
    rates: list[float] = []
    peers: list[float] = []
    with tempfile.TemporaryDirectory(prefix="mockgpu-bench-sched-") as tmp:
        for r in range(args.runs):
            rates.append(one_run(Path(tmp), r, args.nodes, args.gpus, args.pods, args.profile and r == 0))
            if args.peer:
                peers.append(peer_run(Path(tmp), r, args.nodes, args.gpus, args.pods))
    what = f"({args.nodes} nodes x {args.gpus} GPUs, {args.pods} one-GPU pods, {args.runs} runs)"
    print(f"median: {statistics.median(rates):.0f} pods/s scheduled end to end, scheduler process CPU "
          f"{statistics.median(CPU['embedded']):.2f} ms/pod {what}")
    if peers:
        print(f"median, kube-scheduler on the real control plane: {statistics.median(peers):.0f} pods/s, "
              f"kube-scheduler CPU {statistics.median(CPU['upstream']):.2f} ms/pod; embedded / upstream: "
              f"{statistics.median(r / p for r, p in zip(rates, peers, strict=True)):.2f}x (median of per-run ratios)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
