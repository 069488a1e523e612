"""Benchmark of the embedded API server on the seed cluster (clusters/seed-4x2.yaml).

Reports, as medians / percentiles over several runs:
  * ``mockgpu up`` to ready: wall time of the whole command (fresh cluster, daemon started, answering);
  * create -> watch-event latency for pods (p50, p99): a pod is POSTed and the time until its ADDED event
    arrives on an open watch is measured;
  * sustained pod creates/s with 8 concurrent clients (each its own keep-alive HTTPS connection).

Clients are aiohttp with plain JSON (not the official client, whose model layer would dominate the
figures); everything runs on 127.0.0.1 and stops by itself.

Both are measured on the seed cluster as ``mockgpu up`` leaves it: its scheduler, controllers and kubelets
run and react to the benchmark's pods (the first eight are scheduled and started, the rest stay Pending), so
the figures are a user's, not an idle API server's.

``--peer upstream`` measures the real thing in the same run: ``mockgpu up --backend upstream`` of the same
spec, and the same latency and create figures against its kube-apiserver v1.37.2 + etcd (with the real
scheduler and controller manager and mockgpu's kubelets), then prints embedded/upstream ratios.

    python benchmarks/apiserver.py [--runs 5] [--latency-pods 300] [--creates 2000] [--peer upstream]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "clusters" / "seed-4x2.yaml"


def mockgpu(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MOCKGPU_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mockgpu.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120, check=True)


def bench_up(home: Path, runs: int, backend: str = "embedded") -> list[float]:
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        mockgpu(home, "up", "--spec", str(SPEC), "--name", f"bench-up-{i}", "--backend", backend)
        times.append(time.perf_counter() - t0)
        mockgpu(home, "down", "--name", f"bench-up-{i}")
    return times


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "busybox",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


async def bench_latency(url: str, headers: dict, ctx: ssl.SSLContext, n: int) -> list[float]:
    sent: dict[str, float] = {}
    got: dict[str, float] = {}
    arrived: dict[str, asyncio.Event] = {}
    async with aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(ssl=ctx)) as s:
        async with s.get(f"{url}/api/v1/namespaces/default/pods") as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        async with s.get(f"{url}/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}",
                         timeout=aiohttp.ClientTimeout(total=None, sock_read=60)) as watch:

            async def reader() -> None:
                async for line in watch.content:
                    ev = json.loads(line)
                    name = ev["object"]["metadata"]["name"]
                    if ev["type"] == "ADDED" and name in sent:
                        got[name] = time.perf_counter()
                        arrived[name].set()
                        if len(got) == n:
                            return

            task = asyncio.create_task(reader())
            for i in range(n):
                name = f"lat-{i}"
                arrived[name] = asyncio.Event()
                sent[name] = time.perf_counter()
                async with s.post(f"{url}/api/v1/namespaces/default/pods", json=pod(name)) as r:
                    assert r.status == 201, await r.text()
                await asyncio.wait_for(arrived[name].wait(), 10)  # one at a time: latency, not throughput
            await task
    return [got[k] - sent[k] for k in sent]


async def bench_creates(url: str, headers: dict, ctx: ssl.SSLContext, total: int, run: int, clients: int = 8) -> float:
    per = total // clients

    async def client(c: int) -> None:
        async with aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(ssl=ctx, limit=1)) as s:
            for i in range(per):
                async with s.post(f"{url}/api/v1/namespaces/default/pods", json=pod(f"t{run}-{c}-{i}")) as r:
                    if r.status != 201:
                        raise RuntimeError(await r.text())
                    await r.read()

    t0 = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    return per * clients / (time.perf_counter() - t0)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def bench_server(who: str, url: str, token: str, ca: str, args: argparse.Namespace) -> tuple[float, float]:
    """Latency and creates/s against one API server; prints them; returns (p50 latency s, median creates/s)."""
    headers = {"Authorization": f"Bearer {token}"}
    ctx = ssl.create_default_context(cafile=ca)
    lats = asyncio.run(bench_latency(url, headers, ctx, args.latency_pods))
    print(f"{who}: create -> watch event (pods, n={len(lats)}): p50 {pct(lats, 50) * 1000:.2f} ms, "
          f"p99 {pct(lats, 99) * 1000:.2f} ms", flush=True)
    rates = [asyncio.run(bench_creates(url, headers, ctx, args.creates, run)) for run in range(3)]
    print(f"{who}: sustained pod creates, 8 concurrent clients: median {statistics.median(rates):.0f}/s "
          f"(runs: {', '.join(f'{r:.0f}' for r in rates)}; {args.creates} pods each)", flush=True)
    return pct(lats, 50), statistics.median(rates)


def report_up(who: str, ups: list[float]) -> float:
    print(f"{who}: mockgpu up -> ready (seed-4x2, fresh): median {statistics.median(ups) * 1000:.0f} ms "
          f"(min {min(ups) * 1000:.0f}, max {max(ups) * 1000:.0f}, n={len(ups)})", flush=True)
    return statistics.median(ups)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--latency-pods", type=int, default=300)
    ap.add_argument("--creates", type=int, default=2000)
    ap.add_argument("--peer", choices=("upstream",), help="also measure kube-apiserver + etcd in the same run")
    args = ap.parse_args()
    if args.peer:
        from mockgpu.backends.upstream.binaries import missing

        if problem := missing():
            ap.error(problem)
    with tempfile.TemporaryDirectory(prefix="mockgpu-bench-") as tmp:
        home = Path(tmp)
        up = report_up("embedded", bench_up(home, args.runs))
        mockgpu(home, "up", "--spec", str(SPEC))
        try:
            cfg = json.loads((home / "seed-4x2" / "cluster.json").read_text())
            endpoint = json.loads((home / "seed-4x2" / "endpoint.json").read_text())
            ours = bench_server("embedded", f"https://127.0.0.1:{endpoint['port']}", cfg["token"],
                                str(home / "seed-4x2" / "apiserver.crt"), args)
        finally:
            mockgpu(home, "down", "--name", "seed-4x2")
        if not args.peer:
            return 0
        sys.path.insert(0, str(ROOT))
        from mockgpu.backends.upstream import UpstreamCluster

        peer_up = report_up("upstream", bench_up(home, args.runs, "upstream"))
        with UpstreamCluster(SPEC, name="bench-peer", home=home, delete_on_exit=True) as cluster:
            theirs = bench_server("upstream (kube-apiserver + etcd)", cluster.url, cluster.token,
                                  str(cluster.state.cert_file), args)
        print(f"embedded / upstream: up {up / peer_up:.2f}x the time, create->watch p50 {ours[0] / theirs[0]:.2f}x "
              f"the latency, creates/s {ours[1] / theirs[1]:.2f}x the rate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
