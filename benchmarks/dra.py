"""Benchmark of the DRA allocator in the pure core: one ``schedule_one`` for a pod with one ResourceClaim.

100 nodes × 8 A100-SXM4-80GB GPUs published as the shared DRA contract says (per node a devices slice with
8 whole GPUs and their MIG placement devices — 18 per GPU — and a shared-counters slice), the default profile.
Cases: a claim for one whole GPU (class ``gpu.mockgpu.io``), the same with a CEL selector on memory, and the
worst case where every GPU but one on the last node is allocated already (the search visits every node's
devices). Warm figures: the pool index is built and the CEL programs compiled before timing (the scheduler
loop keeps both between cycles). Median of ``--runs``.

    python benchmarks/dra.py [--runs 20] [--nodes 100] [--gpus 8]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mockgpu.sched.config import default_config  # noqa: E402
from mockgpu.sched.cycle import schedule_one  # noqa: E402
from mockgpu.sched.dra.snapshot import DraSnapshot  # noqa: E402
from mockgpu.sched.snapshot import NodeInfo  # noqa: E402
from tests.sched.dra_builders import CLASSES, claim, claim_pod, node_slices, request  # noqa: E402

MEM_40 = 'device.capacity["gpu.mockgpu.io"].memory.compareTo(quantity("40Gi")) >= 0'


def _node(name: str) -> dict:
    return {"metadata": {"name": name}, "spec": {},
            "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}}}


def _time(pod: dict, nodes: list[NodeInfo], dra: DraSnapshot, runs: int) -> tuple[float, float, str | None]:
    """Median wall and thread-CPU milliseconds of one ``schedule_one`` (CPU is the steadier figure on a busy
    machine), and the node chosen."""
    profile = default_config().profiles["default-scheduler"]
    res = schedule_one(pod, nodes, profile, random.Random(0), dra=dra)  # warm: index, CEL programs
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.thread_time()
        res = schedule_one(pod, nodes, profile, random.Random(0), dra=dra)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000, res.selected_node


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--gpus", type=int, default=8)
    args = ap.parse_args()
    names = [f"node-{i:03d}" for i in range(args.nodes)]
    nodes = [NodeInfo.from_node(_node(n)) for n in names]
    slices = [s for n in names for s in node_slices(n, "A100-SXM4-80GB", args.gpus)]
    devices = sum(len(s["spec"].get("devices") or []) for s in slices)
    print(f"{args.nodes} nodes x {args.gpus} GPUs, {len(slices)} slices, {devices} devices, runs={args.runs}")

    t0 = time.perf_counter()
    DraSnapshot(classes=CLASSES, slices=slices).slice_index.pools_for(nodes[0].node)
    print(f"pool index build: {(time.perf_counter() - t0) * 1000:.1f} ms")

    cases = {
        "one whole GPU": {"default/c": claim("c", request("gpu"))},
        "one GPU with >= 40Gi (CEL)": {"default/c": claim("c", request("gpu", selectors=[MEM_40]))},
    }
    for label, claims in cases.items():
        dra = DraSnapshot(classes=CLASSES, slices=slices, claims=claims)
        ms, cpu, where = _time(claim_pod("p", "c"), nodes, dra, args.runs)
        print(f"{label}: median {ms:.2f} ms per schedule_one, CPU {cpu:.2f} ms (chose {where})")

    taken = [(f"g{i}", n, f"gpu-{g}") for i, (n, g) in enumerate((n, g) for n in names for g in range(args.gpus))]
    taken = taken[:-1]  # every GPU but the last node's last one
    others = {"default/o": claim("o", *[request(r) for r, _, _ in taken], allocated=taken)}
    others["default/c"] = claim("c", request("gpu"))
    dra = DraSnapshot(classes=CLASSES, slices=slices, claims=others)
    ms, cpu, where = _time(claim_pod("p", "c"), nodes, dra, max(3, args.runs // 4))
    print(f"one whole GPU, {len(taken)} GPUs already allocated: median {ms:.2f} ms per schedule_one, "
          f"CPU {cpu:.2f} ms (chose {where})")


if __name__ == "__main__":
    main()
