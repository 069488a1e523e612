"""Benchmark of the embedded API server on the seed cluster (clusters/seed-4x2.yaml).

Reports, as medians / percentiles over several runs:
  * ``mockgpu up`` to ready: wall time of the whole command (fresh cluster, daemon started, answering);
  * create -> watch-event latency for pods (p50, p99): a pod is POSTed and the time until its ADDED event
    arrives on an open watch is measured;
  * sustained pod creates/s with 8 concurrent clients (each its own keep-alive HTTPS connection).

Clients are aiohttp with plain JSON (not the official client, whose model layer would dominate the
figures); everything runs on 127.0.0.1 and stops by itself.

    python benchmarks/apiserver.py [--runs 5] [--latency-pods 300] [--creates 2000]
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


def bench_up(home: Path, runs: int) -> list[float]:
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        mockgpu(home, "up", "--spec", str(SPEC), "--name", f"bench-up-{i}")
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--latency-pods", type=int, default=300)
    ap.add_argument("--creates", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mockgpu-bench-") as tmp:
        home = Path(tmp)
        ups = bench_up(home, args.runs)
        print(f"mockgpu up -> ready (seed-4x2, fresh): median {statistics.median(ups) * 1000:.0f} ms "
              f"(min {min(ups) * 1000:.0f}, max {max(ups) * 1000:.0f}, n={len(ups)})")
        kubeconfig = mockgpu(home, "up", "--spec", str(SPEC)).stdout.strip().splitlines()[-1]
        try:
            cfg = json.loads((home / "seed-4x2" / "cluster.json").read_text())
            endpoint = json.loads((home / "seed-4x2" / "endpoint.json").read_text())
            url = f"https://127.0.0.1:{endpoint['port']}"
            headers = {"Authorization": f"Bearer {cfg['token']}"}
            ctx = ssl.create_default_context(cafile=str(home / "seed-4x2" / "apiserver.crt"))
            lats = asyncio.run(bench_latency(url, headers, ctx, args.latency_pods))
            print(f"create -> watch event (pods, n={len(lats)}): p50 {pct(lats, 50) * 1000:.2f} ms, "
                  f"p99 {pct(lats, 99) * 1000:.2f} ms")
            rates = [asyncio.run(bench_creates(url, headers, ctx, args.creates, run)) for run in range(3)]
            print(f"sustained pod creates, 8 concurrent clients: median {statistics.median(rates):.0f}/s "
                  f"(runs: {', '.join(f'{r:.0f}' for r in rates)}; {args.creates} pods each; kubeconfig {kubeconfig})")
        finally:
            mockgpu(home, "down", "--name", "seed-4x2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
