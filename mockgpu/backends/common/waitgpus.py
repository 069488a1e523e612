"""Waiting until a real cluster's nodes advertise mockgpu's GPUs (the last step of ``up`` on kind and on an existing
cluster): ``nvidia.com/*`` in node allocatable from the device plugin, ResourceSlices from the DRA driver."""

from __future__ import annotations

import json
from typing import Any

from mockgpu.backends.common.run import Progress, Runner
from mockgpu.config.clusterspec import ClusterSpec
from mockgpu.config.nodelabels import NODE_LABEL
from mockgpu.dra.slices import DRIVER
from mockgpu.errors import MockgpuError

WAIT_SECONDS = 180.0
POLL_SECONDS = 2.0


def _gpu_allocatable(node: dict[str, Any]) -> dict[str, int]:
    alloc = node.get("status", {}).get("allocatable", {})
    out: dict[str, int] = {}
    for key, value in alloc.items():
        if key.startswith("nvidia.com/"):
            try:
                out[key] = int(value)
            except ValueError:
                continue
    return out


def _dra_pools(slices: dict[str, Any]) -> dict[str, int]:
    """Spec node -> devices of its complete ``gpu.mockgpu.io`` pool (every slice of the pool's generation seen)."""
    pools: dict[str, list[dict[str, Any]]] = {}
    for s in slices.get("items", []):
        spec = s.get("spec") or {}
        if spec.get("driver") == DRIVER and spec.get("nodeName"):
            pools.setdefault(spec["nodeName"], []).append(spec)
    out = {}
    for node, specs in pools.items():
        generation = max(int(p.get("pool", {}).get("generation", 0)) for p in specs)
        current = [p for p in specs if int(p.get("pool", {}).get("generation", 0)) == generation]
        if len(current) >= int(current[0].get("pool", {}).get("resourceSliceCount", 1)):
            out[node] = sum(len(p.get("devices") or []) for p in current)
    return out


def wait_for_gpus(runner: Runner, kubectl: list[str], spec: ClusterSpec, progress: Progress) -> None:
    """Poll until every spec node with device-plugin GPUs shows some ``nvidia.com/*`` allocatable > 0 and every
    node with DRA GPUs has published its whole ``gpu.mockgpu.io`` pool of ResourceSlices.

    Deliberately loose about *which* resources (MIG strategy and time-slicing decide the names and
    counts; that is the device plugin's business): it prints what each node advertises instead.
    """
    want = {n.name for n in spec.nodes() if n.gpu is not None and n.gpu.device_plugin_gpus()}
    want_dra = {n.name for n in spec.nodes() if n.gpu is not None and n.gpu.dra_gpus()}
    waited = 0.0
    while True:
        res = runner.check([*kubectl, "get", "nodes", "-o", "json"])
        seen: dict[str, dict[str, int]] = {}
        for item in json.loads(res.stdout).get("items", []):
            spec_node = item.get("metadata", {}).get("labels", {}).get(NODE_LABEL)
            gpus = {k: v for k, v in _gpu_allocatable(item).items() if v > 0}
            if spec_node in want and gpus:
                seen[spec_node] = gpus
        published: dict[str, int] = {}
        if want_dra:
            res = runner.run([*kubectl, "get", "resourceslices", "-o", "json"])
            if res.returncode == 0:
                published = {n: c for n, c in _dra_pools(json.loads(res.stdout)).items() if n in want_dra}
        if set(seen) == want and set(published) == want_dra:
            for node in sorted(want | want_dra):
                parts = [f"{k}={v}" for k, v in sorted(seen.get(node, {}).items())]
                if node in published:
                    parts.append(f"{DRIVER}: {published[node]} devices in ResourceSlices")
                progress.note(f"{node}: " + ", ".join(parts))
            return
        if waited >= WAIT_SECONDS:
            missing = ", ".join(sorted(want - set(seen)))
            if missing:
                raise MockgpuError(f"after {WAIT_SECONDS:.0f}s no GPUs in allocatable on {missing}: see "
                                   f"`kubectl -n mockgpu-system logs ds/mockgpu-device-plugin`")
            missing = ", ".join(sorted(want_dra - set(published)))
            raise MockgpuError(f"after {WAIT_SECONDS:.0f}s no {DRIVER} ResourceSlices of {missing}: see "
                               f"`kubectl -n mockgpu-system logs ds/mockgpu-dra-driver`")
        runner.sleep(POLL_SECONDS)
        waited += POLL_SECONDS
