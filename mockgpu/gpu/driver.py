"""The fake driver: one directory per node that holds the node's GPUs and their live state.

Every process that plays a part on the node (the device plugin, the kubelet's workloads, fake CUDA,
fake ``nvidia-smi``, a GPU-state publisher) opens the same directory. On this machine its path comes
from the environment variable ``MOCKGPU_DRIVER_DIR``; inside a container it is mounted at
``CONTAINER_DRIVER_DIR`` (``/run/mockgpu/driver``).

On-disk layout::

    <dir>/inventory.json          the node's hardware (NodeInventory as JSON, plus driver and CUDA
                                  versions); rewritten only when it changes
    <dir>/ledgers/<UUID>.json     memory ledger of one physical GPU or one MIG instance (mockgpu.gpu.ledger)
    <dir>/ledgers/<UUID>.lock     its fcntl lock file
    <dir>/ledgers/procs/*.lock    process leases: a live process holds a shared flock on its own
    <dir>/oom.log                 CUDA out-of-memory failures, one JSON line each (mockgpu.gpu.oomlog)

Injected faults (Xid events) are not in it: they live in the sibling ``<dir>/../faults``, which pods
cannot write (``mockgpu.gpu.faults``); ``health()`` reads them there and stays the one read path of a
device's health.

Everything in the directory may have been written by a pod (it is mounted read-write into the containers
given the node's GPUs), and root reads it (the kubelet's GPU-state publisher, the device plugin's health
check) and writes it (the layout, ledgers): all of it goes through ``mockgpu.gpu.safedir`` (no symlink
followed, bounded reads, atomic replacement) and what is parsed is checked (device UUIDs are plain names).
``write_node_driver(..., owner=)`` gives the directory and its ``ledgers``/``procs`` to the workload user
once, so nobody needs to chown what is inside.

Time-sliced replicas (device IDs ``<UUID>::<n>``) share their physical GPU's ledger: the replica
suffix is stripped before any lookup. A MIG instance has its own ledger; the parent GPU's memory in
the snapshot is the sum of its instances'.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mockgpu.errors import MockgpuError
from mockgpu.gpu.faults import APPLICATION_XIDS, ECC_XIDS, LOST_XIDS, FaultLog, faults_dir_for
from mockgpu.gpu.inventory import MigInstance, NodeInventory, PhysicalGPU, inventory_from_dict, inventory_to_dict
from mockgpu.gpu.ledger import LEDGERS, PROCS, Ledger, ProcessIdentity
from mockgpu.gpu.safedir import Dir, check_name

CONTAINER_DRIVER_DIR = "/run/mockgpu/driver"
ENV_DRIVER_DIR = "MOCKGPU_DRIVER_DIR"
# Shown by nvidia-smi. An R550 driver (550.107.02 is the driver version in the NVIDIA GFD label
# examples of the reference); R550 drivers report CUDA 12.4.
DRIVER_VERSION = "550.107.02"
CUDA_VERSION = "12.4"
MIB = 1 << 20
INVENTORY = "inventory.json"
MAX_INVENTORY_BYTES = 4 << 20


class DriverNotFound(MockgpuError):
    """No driver directory (or no inventory in it): the fake equivalent of 'driver not loaded'."""


def base_uuid(device_id: str) -> str:
    """``GPU-...::3`` (a time-sliced replica's device ID) -> ``GPU-...``."""
    return device_id.split("::", 1)[0]


def driver_dir_from_env(env: Mapping[str, str] | None = None) -> Path | None:
    """The driver directory this process should use: ``$MOCKGPU_DRIVER_DIR``, else the container path
    if it exists, else None."""
    src: Mapping[str, str] = os.environ if env is None else env
    if src.get(ENV_DRIVER_DIR):
        return Path(src[ENV_DRIVER_DIR])
    return Path(CONTAINER_DRIVER_DIR) if Path(CONTAINER_DRIVER_DIR, "inventory.json").exists() else None


def _devices(inv: NodeInventory) -> list[PhysicalGPU | MigInstance]:
    out: list[PhysicalGPU | MigInstance] = []
    for g in inv.gpus:
        out.append(g)
        out.extend(g.mig)
    return out


def write_node_driver(directory: str | Path, inventory: NodeInventory, *, owner: tuple[int, int] | None = None
                      ) -> Path:
    """Create or refresh a node's driver directory and its sibling ``faults`` (left as they are, and the caller's:
    never given to ``owner``). Idempotent: ledgers and injected faults are never clobbered.
    ``owner``: (uid, gid) to give the directory, ``ledgers`` and ``ledgers/procs`` to (the workload user,
    when the kubelet runs as root), so workloads can create their files there; files stay whose they are."""
    d = Path(directory)
    doc = {"driver_version": DRIVER_VERSION, "cuda_version": CUDA_VERSION, "inventory": inventory_to_dict(inventory)}
    text = json.dumps(doc, indent=1).encode()
    with Dir.open(d, create=True) as top:
        with top.sub(LEDGERS, create=True, replace=True) as led, led.sub(PROCS, create=True, replace=True) as procs:
            if owner is not None:
                for x in (top, led, procs):
                    x.chown(*owner)
        try:
            current = top.read(INVENTORY, MAX_INVENTORY_BYTES)
        except OSError:
            current = None
        if current != text:
            top.write_atomic(INVENTORY, text)
    for dev in _devices(inventory):
        Ledger.create(d, dev.uuid, dev.memory_mib * MIB)
    with Dir.open(faults_dir_for(d), create=True) as faults:  # the caller's, 0755: pods read it, never write
        os.fchmod(faults.fd, 0o755)
    return d


@dataclass(frozen=True)
class Health:
    """Health of one device as the driver sees it."""

    healthy: bool
    xids: tuple[int, ...]  # every Xid injected on it (or on its parent GPU), oldest first

    @property
    def lost(self) -> bool:
        """The GPU fell off the bus (Xid 79): NVML cannot reach it, its CUDA contexts fail."""
        return any(x in LOST_XIDS for x in self.xids)

    @property
    def ecc_uncorrectable(self) -> bool:
        """A double-bit ECC error (Xid 48) hit it: its CUDA contexts fail with cudaErrorECCUncorrectable."""
        return any(x in ECC_XIDS for x in self.xids)


class Driver:
    """A node's driver directory, opened. Raises DriverNotFound if it holds no inventory."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        try:
            with Dir.open(self.dir) as top:
                doc = json.loads(top.read(INVENTORY, MAX_INVENTORY_BYTES))
            self.driver_version: str = str(doc["driver_version"])
            self.cuda_version: str = str(doc["cuda_version"])
            self.inventory: NodeInventory = inventory_from_dict(doc["inventory"])
            for dev in _devices(self.inventory):  # each names a ledger file: one plain name, nothing else
                check_name(f"{dev.uuid}.json")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise DriverNotFound(f"no mockgpu driver at {self.dir} (no readable inventory.json)") from None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Driver:
        d = driver_dir_from_env(env)
        if d is None:
            raise DriverNotFound(f"no mockgpu driver: {ENV_DRIVER_DIR} is not set and {CONTAINER_DRIVER_DIR} is absent")
        return cls(d)

    # -- memory ---------------------------------------------------------------------------------
    def _known(self, device_id: str) -> str:
        uuid = base_uuid(device_id)
        try:
            self.inventory.device(uuid)
        except KeyError:
            raise MockgpuError(f"node {self.inventory.node} has no device {device_id}") from None
        return uuid

    def ledger(self, device_id: str) -> Ledger:
        """The ledger of a GPU, MIG instance or time-sliced replica (``<UUID>::<n>``)."""
        return Ledger(self.dir, self._known(device_id))

    def register(self, device_id: str, who: ProcessIdentity) -> None:
        self.ledger(device_id).register(who)

    def allocate(self, device_id: str, who: ProcessIdentity, nbytes: int) -> int:
        return self.ledger(device_id).allocate(who, nbytes)

    def free(self, device_id: str, who: ProcessIdentity, handle: int) -> int:
        return self.ledger(device_id).free(who, handle)

    def release(self, device_id: str, who: ProcessIdentity) -> None:
        self.ledger(device_id).release(who)

    def report_utilization(self, device_id: str, who: ProcessIdentity, pct: float) -> None:
        self.ledger(device_id).set_utilization(who, pct)

    def mem_info(self, device_id: str) -> tuple[int, int]:
        """(free, total) bytes of a device."""
        st = self.ledger(device_id).state()
        return st["total_bytes"] - st["used_bytes"], st["total_bytes"]

    # -- health ---------------------------------------------------------------------------------
    @property
    def faults(self) -> FaultLog:
        """The node's injected Xids: host-side, next to this directory, not writable by pods (mockgpu.gpu.faults)."""
        return FaultLog.for_driver(self.dir)

    def inject_xid(self, device_id: str, xid: int) -> None:
        """Record an Xid event on a GPU or MIG instance (as the kernel driver would log it). Only the faults
        directory's owner can (the cluster's user: ``mockgpu fault inject``); a pod cannot."""
        self.faults.inject(self._known(device_id), int(xid))

    def clear_xids(self, device_id: str | None = None) -> int:
        """Forget injected Xids (of one device, or all): a fake GPU reset. Returns how many were removed."""
        return self.faults.clear({base_uuid(device_id)} if device_id else None)

    def health(self) -> dict[str, Health]:
        """Health per device UUID. A device is unhealthy once it, or its parent GPU, had an Xid that is
        not an application error (the NVIDIA device plugin's rule; it never recovers on its own)."""
        events = self.faults.events()
        out: dict[str, Health] = {}
        for dev in _devices(self.inventory):
            ids = {dev.uuid} | ({dev.parent_uuid} if isinstance(dev, MigInstance) else set())
            xids = tuple(e.xid for e in events if e.uuid in ids)
            out[dev.uuid] = Health(healthy=all(x in APPLICATION_XIDS for x in xids), xids=xids)
        return out

    # -- state ----------------------------------------------------------------------------------
    def _state(self, dev: PhysicalGPU | MigInstance) -> dict[str, Any]:
        """A device's ledger state; one a pod broke (removed, replaced, garbled) reads as unused."""
        try:
            return self.ledger(dev.uuid).state()
        except (OSError, ValueError, MockgpuError):
            return {"uuid": dev.uuid, "total_bytes": dev.memory_mib * MIB, "used_bytes": 0, "utilization": 0.0,
                    "processes": []}

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Per device UUID: kind, index, name, total/used MiB, utilization, healthy and processes.

        A MIG-enabled GPU's used memory and processes are those of its instances; its utilization is
        None (nvidia-smi prints N/A for it).
        """
        health = self.health()
        out: dict[str, dict[str, Any]] = {}
        for g in self.inventory.gpus:
            parts: list[PhysicalGPU | MigInstance] = [g, *g.mig] if g.mig else [g]
            states = {p.uuid: self._state(p) for p in parts}
            for m in g.mig:
                out[m.uuid] = _entry("mig", m, states[m.uuid], health[m.uuid], f"{g.product_name} MIG {m.profile}")
                out[m.uuid].update(gpu_index=g.index, mig_index=m.mig_index, gi_id=m.gi_id, ci_id=m.ci_id)
            total = _entry("gpu", g, states[g.uuid], health[g.uuid], g.product_name)
            if g.mig:
                total["used_mib"] += sum(out[m.uuid]["used_mib"] for m in g.mig)
                total["processes"] = [p for m in g.mig for p in out[m.uuid]["processes"]] + total["processes"]
                total["utilization"] = None
            total.update(gpu_index=g.index, pci_bus_id=g.pci_bus_id)
            out[g.uuid] = total
        return out


def _entry(kind: str, dev: PhysicalGPU | MigInstance, st: dict[str, Any], h: Health, name: str) -> dict[str, Any]:
    return {
        "kind": kind, "uuid": dev.uuid, "name": name, "total_mib": dev.memory_mib,
        "used_mib": -(-st["used_bytes"] // MIB), "utilization": round(st["utilization"]), "healthy": h.healthy,
        "xids": list(h.xids),
        "processes": [{**p, "used_mib": -(-p["used_bytes"] // MIB), "device": dev.uuid} for p in st["processes"]],
    }
