"""Fault injection for the backends whose kubelets are mockgpu's (embedded, upstream): ``mockgpu fault`` and
``Cluster.inject_fault / clear_faults / faults``.

Each node's kubelet says in its private root where its driver directory and the ``faults`` directory beside it
are (``mockgpu.gpu.faults.record_node_dirs``, called by the kubelet); the events go there through ``FaultLog``,
written as the cluster's own user, never into anything a pod can write. The device plugin, the DRA driver, the
GPU-state publisher, fake CUDA and fake ``nvidia-smi`` all see them through ``Driver.health()``.

A GPU is named by its index on the node (``0``), or by a GPU or MIG UUID.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mockgpu.backends.common.state import ClusterState, node_root
from mockgpu.errors import MockgpuError
from mockgpu.gpu.driver import Driver, DriverNotFound
from mockgpu.gpu.faults import XID_NAMES, XidEvent, node_dirs
from mockgpu.gpu.inventory import NodeInventory


@dataclass(frozen=True)
class FaultRecord:
    """One injected fault, as ``mockgpu fault list`` shows it."""

    node: str
    gpu: int  # the GPU's index on its node (a MIG instance's parent)
    uuid: str  # the GPU or MIG instance the Xid was injected on
    xid: int
    time: float  # seconds since the epoch

    @property
    def meaning(self) -> str:
        """The Xid's description in NVIDIA's catalog, where mockgpu gives it a meaning (docs/faults.md)."""
        return XID_NAMES.get(self.xid, "")

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "gpu": self.gpu, "uuid": self.uuid, "xid": self.xid, "time": self.time}


def resolve_gpu(inv: NodeInventory, gpu: int | str) -> tuple[int, str]:
    """(index, UUID) of the GPU or MIG instance ``gpu`` names in a node's inventory; MockgpuError otherwise."""
    text = str(gpu).strip()
    for g in inv.gpus:
        if text in (str(g.index), g.uuid):
            return g.index, g.uuid
        for m in g.mig:
            if text == m.uuid:
                return g.index, m.uuid
    known = ", ".join(str(g.index) for g in inv.gpus)
    raise MockgpuError(f"node {inv.node} has no GPU {text!r} (its GPUs: {known or 'none'}; or give a GPU or MIG UUID)",
                       exit_code=2)


def _index_of(driver: Driver, uuid: str) -> int:
    for g in driver.inventory.gpus:
        if uuid == g.uuid or any(uuid == m.uuid for m in g.mig):
            return g.index
    return -1


class LocalFaults:
    """The faults of one cluster whose nodes run on this machine."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def _nodes(self) -> list[str]:
        return [n.name for n in self.state.load_spec().nodes()]

    def driver(self, node: str) -> Driver:
        """The node's driver (MockgpuError when the cluster has no such node, or it has no GPUs or never started)."""
        if node not in self._nodes():
            raise MockgpuError(f"cluster {self.state.name} has no node {node!r} (nodes: {', '.join(self._nodes())})",
                               exit_code=2)
        dirs = node_dirs(node_root(self.state, node))
        if dirs is None:
            raise MockgpuError(f"node {node} has no GPUs, or its kubelet has not started yet", exit_code=2)
        try:
            return Driver(dirs["driver"])
        except DriverNotFound as exc:
            raise MockgpuError(f"node {node}: {exc}", exit_code=2) from None

    def inject(self, node: str, gpu: int | str, xid: int) -> FaultRecord:
        driver = self.driver(node)
        index, uuid = resolve_gpu(driver.inventory, gpu)
        ev = driver.faults.inject(uuid, int(xid))
        return FaultRecord(node, index, ev.uuid, ev.xid, ev.time)

    def clear(self, node: str | None = None, gpu: int | str | None = None) -> int:
        """Forget the faults of one GPU, one node, or (no node) every node; returns how many were removed."""
        if gpu is not None and node is None:
            raise MockgpuError("say which node the GPU is on (--node)", exit_code=2)
        removed = 0
        for name in [node] if node else self._started():
            driver = self.driver(name)
            removed += driver.faults.clear({resolve_gpu(driver.inventory, gpu)[1]} if gpu is not None else None)
        return removed

    def _started(self) -> list[str]:
        return [n for n in self._nodes() if node_dirs(node_root(self.state, n)) is not None]

    def list(self) -> list[FaultRecord]:
        out = []
        for name in self._started():
            try:
                driver = self.driver(name)
            except MockgpuError:
                continue
            out += [_record(name, driver, e) for e in driver.faults.events()]
        return sorted(out, key=lambda r: (r.time, r.node, r.gpu))


def _record(node: str, driver: Driver, e: XidEvent) -> FaultRecord:
    return FaultRecord(node, _index_of(driver, e.uuid), e.uuid, e.xid, e.time)


class HostFaults:
    """The ``Cluster`` fault methods of a backend whose nodes' directories are on this machine (embedded,
    upstream): one home for what both clusters answer, through ``LocalFaults`` over the cluster's ``state``."""

    state: ClusterState

    def inject_fault(self, node: str, gpu: int | str, xid: int) -> FaultRecord:
        """Inject Xid ``xid`` on GPU ``gpu`` (index or GPU/MIG UUID) of ``node``, host-side (pods cannot)."""
        return LocalFaults(self.state).inject(node, gpu, xid)

    def clear_faults(self, node: str | None = None, gpu: int | str | None = None) -> int:
        """Forget injected faults (of a GPU, a node, or all): a fake GPU reset. Returns how many were removed."""
        return LocalFaults(self.state).clear(node, gpu)

    def faults(self) -> list[FaultRecord]:
        """Every injected fault, oldest first."""
        return LocalFaults(self.state).list()


__all__ = ["FaultRecord", "HostFaults", "LocalFaults", "resolve_gpu"]
