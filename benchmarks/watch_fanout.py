"""Benchmark of watch fan-out on the embedded API server (issue 17): what many open watches cost the others.

``mockgpu up`` of the seed cluster (a daemon of its own), then: GET latency (one config map, p50/p99 over
``--gets`` requests) idle; then with ``--watches`` open watches on config maps while ``--updates`` updates fan
out to all of them (GETs measured meanwhile); then after the watches close. The daemon's RSS (``/proc``) is
reported at each stage, so memory not given back after the watches close shows.

    python benchmarks/watch_fanout.py [--watches 1000] [--updates 200] [--gets 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "clusters" / "seed-4x2.yaml"
CMS = "/api/v1/namespaces/default/configmaps"


def mockgpu(home: Path, *args: str) -> None:
    env = {**os.environ, "MOCKGPU_HOME": str(home), "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "mockgpu.cli", *args], env=env, capture_output=True, text=True,
                   timeout=120, check=True)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def gets(s: aiohttp.ClientSession, url: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        async with s.get(f"{url}{CMS}/target") as r:
            await r.read()
        out.append(time.perf_counter() - t0)
    return out


async def run(url: str, headers: dict, ctx: ssl.SSLContext, pid: int, args: argparse.Namespace) -> None:
    def stage(name: str, lat: list[float] | None = None) -> None:
        figures = f"GET p50 {pct(lat, 50) * 1000:.1f} ms, p99 {pct(lat, 99) * 1000:.1f} ms; " if lat else ""
        print(f"{name:32s} {figures}server RSS {rss_mb(pid):.0f} MB", flush=True)

    async with aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(ssl=ctx)) as s:
        async with s.post(f"{url}{CMS}", json={"metadata": {"name": "target"}, "data": {"n": "0"}}) as r:
            assert r.status == 201, await r.text()
        stage("idle", await gets(s, url, args.gets))
        received = 0
        watch_session = aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(ssl=ctx, limit=0),
                                              timeout=aiohttp.ClientTimeout(total=None, sock_read=None))
        responses = []

        async def reader(resp: aiohttp.ClientResponse) -> None:
            nonlocal received
            async for _ in resp.content:
                received += 1

        for _ in range(args.watches):
            responses.append(await watch_session.get(f"{url}{CMS}?watch=true&resourceVersion=0"))
        readers = [asyncio.create_task(reader(r)) for r in responses]
        stage(f"{args.watches} watches open")

        async def updates() -> None:
            payload = {"data": {"n": "x" * 2000}}
            for i in range(args.updates):
                payload["data"]["i"] = str(i)
                async with s.patch(f"{url}{CMS}/target", json=payload,
                                   headers={"Content-Type": "application/merge-patch+json"}) as r:
                    await r.read()

        upd = asyncio.create_task(updates())
        lat = await gets(s, url, args.gets)
        await upd
        stage(f"during {args.updates} updates", lat)
        deadline = time.monotonic() + 60
        while received < args.watches * (args.updates + 1) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        print(f"{'events delivered':32s} {received} of {args.watches * (args.updates + 1)}", flush=True)
        for task in readers:
            task.cancel()
        for resp in responses:
            resp.close()
        await watch_session.close()
        await asyncio.sleep(3)
        stage("after the watches closed", await gets(s, url, args.gets))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--watches", type=int, default=1000)
    ap.add_argument("--updates", type=int, default=200)
    ap.add_argument("--gets", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mockgpu-bench-") as tmp:
        home = Path(tmp)
        mockgpu(home, "up", "--spec", str(SPEC))
        try:
            cfg = json.loads((home / "seed-4x2" / "cluster.json").read_text())
            endpoint = json.loads((home / "seed-4x2" / "endpoint.json").read_text())
            ctx = ssl.create_default_context(cafile=str(home / "seed-4x2" / "apiserver.crt"))
            asyncio.run(run(f"https://127.0.0.1:{endpoint['port']}", {"Authorization": f"Bearer {cfg['token']}"},
                            ctx, endpoint["pid"], args))
        finally:
            mockgpu(home, "down", "--name", "seed-4x2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
