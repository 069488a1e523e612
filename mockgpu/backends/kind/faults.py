"""Fault injection on a kind cluster (``KindCluster.inject_fault / clear_faults / faults``): the same host-side state
as on the local backends (``mockgpu.gpu.faults``), written inside each kind node, beside its driver folder.

In a kind node the fake driver is ``/var/lib/mockgpu/driver`` and the faults are ``/var/lib/mockgpu/faults/xids.json``
(``backends/common/nodepaths.py``); the device plugin and DRA driver DaemonSets mount both, and the plugin's
``Allocate`` (the DRA driver's CDI spec) gives workloads the faults read-only. The file is read with
``docker exec <node> cat`` and replaced with ``docker exec -i <node> sh -c`` writing a temporary file renamed into
place (readers see the old or the new list, never half), as root inside the node, which is where kind's pods are
root too (docs/kind.md: kind's nodes are outside the workload sandbox's threat model). Simplified: two concurrent
writers (two ``inject`` calls at once from different processes) may lose one event; the local backends lock.
GPUs are named as elsewhere: the index on the node or a GPU/MIG UUID, resolved from the spec's inventory (the same
UUIDs the node's driver holds).
"""

from __future__ import annotations

import json
import time

from mockgpu.backends.common.faults import FaultRecord, resolve_gpu
from mockgpu.backends.common.nodepaths import FAULTS_DIR
from mockgpu.backends.common.run import Runner
from mockgpu.backends.kind.config import kind_node_names
from mockgpu.config import ClusterSpec
from mockgpu.config.inventory import node_inventory
from mockgpu.errors import MockgpuError
from mockgpu.gpu.faults import XIDS, XidEvent, parse_events
from mockgpu.gpu.inventory import NodeInventory

WRITE = (f"umask 022 && mkdir -p {FAULTS_DIR} && cat > {FAULTS_DIR}/.{XIDS}.tmp && "
         f"mv -f {FAULTS_DIR}/.{XIDS}.tmp {FAULTS_DIR}/{XIDS}")


class KindFaults:
    """The faults of kind cluster ``name`` made from ``spec``, through ``docker exec`` into its nodes."""

    def __init__(self, runner: Runner, spec: ClusterSpec, name: str) -> None:
        self.runner, self.spec, self.name = runner, spec, name
        self.containers = {node: container for container, node in kind_node_names(spec, name).items()}

    def _inventory(self, node: str) -> NodeInventory:
        if node not in self.containers:
            raise MockgpuError(f"cluster {self.name} has no node {node!r} (nodes: {', '.join(self.containers)})",
                               exit_code=2)
        inv = node_inventory(self.spec, node)
        if not inv.gpus:
            raise MockgpuError(f"node {node} has no GPUs", exit_code=2)
        return inv

    def _read(self, node: str) -> list[XidEvent]:
        res = self.runner.run(["docker", "exec", self.containers[node], "cat", f"{FAULTS_DIR}/{XIDS}"], timeout=60)
        if res.returncode != 0:
            if "No such file" in res.stderr:
                return []
            raise MockgpuError(f"cannot read the faults of node {node} ({self.containers[node]}): "
                               f"{(res.stderr.strip().splitlines() or ['exit code ' + str(res.returncode)])[-1]}")
        return parse_events(res.stdout.encode())

    def _write(self, node: str, events: list[XidEvent]) -> None:
        doc = json.dumps([e.to_json() for e in events])
        self.runner.check(["docker", "exec", "-i", self.containers[node], "sh", "-c", WRITE], input=doc, timeout=60)

    def inject(self, node: str, gpu: int | str, xid: int) -> FaultRecord:
        inv = self._inventory(node)
        index, uuid = resolve_gpu(inv, gpu)
        if isinstance(xid, bool) or not isinstance(xid, int) or xid <= 0:
            raise MockgpuError(f"an Xid is a positive integer, not {xid!r}", exit_code=2)
        ev = XidEvent(uuid, xid, time.time())
        self._write(node, [*self._read(node), ev])
        return FaultRecord(node, index, uuid, xid, ev.time)

    def clear(self, node: str | None = None, gpu: int | str | None = None) -> int:
        if gpu is not None and node is None:
            raise MockgpuError("say which node the GPU is on (--node)", exit_code=2)
        removed = 0
        for name in [node] if node else [n for n in self.containers if node_inventory(self.spec, n).gpus]:
            inv = self._inventory(name)
            old = self._read(name)
            only = resolve_gpu(inv, gpu)[1] if gpu is not None else None
            kept = [e for e in old if only is not None and e.uuid != only]
            if len(kept) != len(old):
                self._write(name, kept)
                removed += len(old) - len(kept)
        return removed

    def list(self) -> list[FaultRecord]:
        out = []
        for name in self.containers:
            inv = node_inventory(self.spec, name)
            if not inv.gpus:
                continue
            index = {g.uuid: g.index for g in inv.gpus} | {m.uuid: g.index for g in inv.gpus for m in g.mig}
            out += [FaultRecord(name, index.get(e.uuid, -1), e.uuid, e.xid, e.time) for e in self._read(name)]
        return sorted(out, key=lambda r: (r.time, r.node, r.gpu))


__all__ = ["WRITE", "KindFaults"]
