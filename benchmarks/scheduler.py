"""Benchmark of the embedded scheduler: pods scheduled per second, end to end through the API.

Three processes, as on a real control plane: the embedded API server alone (an ``EmbeddedCluster`` with no
kubelets and no scheduler of its own, in a child process), the scheduler under test (this process, nothing
else in it), and the users (a child process creating N one-GPU pods from 4 client threads and watching until
every pod is bound). 100 KWOK-style nodes with 8 GPUs each are created through the API. The scheduler runs
one profile, ``bench-scheduler`` (upstream's default plugins), named by the benchmark's pods. Time runs from
the first create until the watch has seen every pod bound. Figures are medians; a fresh cluster per run.

    python benchmarks/scheduler.py [--runs 3] [--pods 800] [--nodes 100] [--gpus 8] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing as mp
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
from mockgpu.control.scheduler import Scheduler  # noqa: E402
from mockgpu.control.scheduler.api import RawApi, watch_events  # noqa: E402
from mockgpu.sched.config import parse_config  # noqa: E402

PROFILE = "bench-scheduler"
CPU: list[float] = []  # scheduler-process CPU ms per pod, per run


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
        CPU.append(cpu / n * 1000)
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
    args = ap.parse_args()
    if args.pods > args.nodes * args.gpus:
        ap.error("--pods must fit: at most nodes x gpus one-GPU pods")
    with tempfile.TemporaryDirectory(prefix="mockgpu-bench-sched-") as tmp:
        rates = [one_run(Path(tmp), r, args.nodes, args.gpus, args.pods, args.profile and r == 0)
                 for r in range(args.runs)]
    print(f"median: {statistics.median(rates):.0f} pods/s scheduled end to end, scheduler process CPU "
          f"{statistics.median(CPU):.2f} ms/pod ({args.nodes} nodes x {args.gpus} GPUs, {args.pods} one-GPU pods, "
          f"{args.runs} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
