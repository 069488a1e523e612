"""Benchmark of the DRA allocator in the pure core: one ``schedule_one`` for a pod with one ResourceClaim.

100 nodes × 8 A100-SXM4-80GB GPUs under DRA, their ResourceSlices exactly as the driver publishes them
(``mockgpu.dra.slices.node_slices`` on each node's inventory from a cluster spec: whole GPUs, their MIG placement
devices and the shared-counter slices), the project's DeviceClasses, the default profile.
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

import yaml  # noqa: E402

from mockgpu.config.clusterspec import parse_spec  # noqa: E402
from mockgpu.config.inventory import node_inventory  # noqa: E402
from mockgpu.dra.slices import node_slices  # noqa: E402
from mockgpu.sched.config import default_config  # noqa: E402
from mockgpu.sched.cycle import schedule_one  # noqa: E402
from mockgpu.sched.dra.snapshot import DraSnapshot  # noqa: E402
from mockgpu.sched.snapshot import NodeInfo  # noqa: E402
from tests.sched.dra_builders import claim, claim_pod, request  # noqa: E402

CLASSES = {d["metadata"]["name"]: d
           for d in yaml.safe_load_all((ROOT / "clusters" / "dra" / "deviceclasses.yaml").read_text())}

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
    spec = parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "bench"},
                       "spec": {"nodePools": [{"name": "node", "count": args.nodes, "gpu": {
                           "model": "A100-SXM4-80GB", "count": args.gpus, "management": "dra"}}]}})
    names = [n.name for n in spec.nodes()]
    nodes = [NodeInfo.from_node(_node(n)) for n in names]
    slices = [s for n in names for s in node_slices(node_inventory(spec, n))]
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
