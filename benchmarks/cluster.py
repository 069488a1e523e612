"""Benchmark of the embedded cluster: ``mockgpu up`` to all nodes Ready, and create→Running for a GPU pod.

1. ``mockgpu up --spec clusters/workshop.yaml`` in a fresh ``$MOCKGPU_HOME``, timed as a user sees it: the
   command returns once the daemon serves the API, the scheduler runs and every node's kubelet has posted
   Ready with its device plugin registered (allocatable from ListAndWatch). ``mockgpu down`` after each run.
   The CLI's own Python start-up is included; the figure without it is the daemon's start (see its log).
2. On one such cluster, N times one after another: create a pod asking for one ``nvidia.com/gpu`` (no
   nodeName: the scheduler binds it, the kubelet admits it through the device plugin and starts ``sleep``),
   and time from the create call until a watch (opened before) sees ``status.phase=Running``; then delete it.
Medians (and p99 for the latency) are printed with the command line.

    python benchmarks/cluster.py [--runs 5] [--pods 50]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "clusters" / "workshop.yaml"


def mockgpu(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MOCKGPU_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mockgpu.cli", *args], env=env, capture_output=True, text=True,
                          check=True)


def time_up(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        home = Path(tempfile.mkdtemp(prefix="mgbench"))
        try:
            t0 = time.perf_counter()
            mockgpu(home, "up", "--spec", str(SPEC))
            out.append(time.perf_counter() - t0)
            mockgpu(home, "down", "--name", "workshop")
        finally:
            shutil.rmtree(home, ignore_errors=True)
    return out


def pod_latencies(n: int) -> list[float]:
    from kubernetes import client, config
    from kubernetes.watch.watch import iter_resp_lines

    home = Path(tempfile.mkdtemp(prefix="mgbench"))
    try:
        mockgpu(home, "up", "--spec", str(SPEC))
        config.load_kube_config(str(home / "workshop" / "kubeconfig"))
        core = client.CoreV1Api()
        running: dict[str, float] = {}
        seen = threading.Condition()
        resp = core.list_namespaced_pod("default", watch=True, _preload_content=False)

        def follow() -> None:
            try:
                for line in iter_resp_lines(resp):
                    obj = json.loads(line)["object"]
                    if (obj.get("status") or {}).get("phase") == "Running":
                        with seen:
                            running.setdefault(obj["metadata"]["name"], time.perf_counter())
                            seen.notify_all()
            except Exception:  # the stream ends when the cluster goes down
                return

        threading.Thread(target=follow, daemon=True).start()
        out = []
        for i in range(n):
            name = f"lat-{i}"
            body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                    "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                             "containers": [{"name": "main", "image": "mockgpu/workload", "command": ["sleep", "30"],
                                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
            t0 = time.perf_counter()
            core.create_namespaced_pod("default", body)
            with seen:
                if not seen.wait_for(lambda name=name: name in running, timeout=30):
                    raise SystemExit(f"{name} not Running within 30 s")
            out.append(running[name] - t0)
            core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
        try:
            resp.shutdown()
        except Exception:
            pass
        mockgpu(home, "down", "--name", "workshop")
        return out
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pods", type=int, default=50)
    args = ap.parse_args()
    ups = time_up(args.runs)
    print(f"mockgpu up (workshop, 3 nodes) to all nodes Ready: median {statistics.median(ups):.2f} s "
          f"over {len(ups)} runs (min {min(ups):.2f}, max {max(ups):.2f})")
    lat = sorted(pod_latencies(args.pods))
    p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
    print(f"create→Running, 1-GPU pod through scheduler and kubelet: p50 {statistics.median(lat) * 1000:.0f} ms, "
          f"p99 {p99 * 1000:.0f} ms over {len(lat)} pods")
    print(f"command: python benchmarks/cluster.py --runs {args.runs} --pods {args.pods}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
