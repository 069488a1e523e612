"""Injected GPU faults (Xid events): host-side state next to the node's driver directory, which pods cannot write.

A real GPU's faults come from the hardware through the kernel driver (``NVRM: Xid (PCI:...): 79, GPU has fallen
off the bus``), never from a process using the GPU. The fake keeps them the same way out of the workloads' reach:
the node's driver directory (``<node>/driver``) is mounted read-write into the containers given its GPUs, so the
faults live in its sibling ``<node>/faults`` instead, which

* is created by the cluster's own user (root for a root cluster) with mode 0755 and is written only by it
  (``mockgpu fault inject|clear``, ``Cluster.inject_fault``), through ``mockgpu.gpu.safedir``: one name at a
  time from an open descriptor, nothing followed, replaced atomically under an ``flock``;
* reaches a container only as a read-only mount at ``/run/mockgpu/faults`` (the device plugin's ``Allocate`` and
  the DRA driver's CDI spec add it next to the driver directory): bubblewrap binds it ``--ro-bind``, the fallback
  layers give it a Landlock read rule, and a root cluster's workload user (65532) is not its owner anyway.

``Driver.health()`` (``mockgpu.gpu.driver``) stays the one read path: it reads the events through ``FaultLog``.
Inside a container the same sibling rule finds them (``/run/mockgpu/driver`` -> ``/run/mockgpu/faults``; in the
fallback layers both are at their host paths). Which Xid does what follows NVIDIA's Xid catalog and
k8s-device-plugin (docs/faults.md).

File: ``<faults>/xids.json``, ``[{"uuid", "xid", "time"}]`` oldest first, guarded by ``<faults>/xids.lock``.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mockgpu.errors import MockgpuError
from mockgpu.gpu.safedir import Dir

FAULTS = "faults"  # the sibling of the driver directory
CONTAINER_FAULTS_DIR = "/run/mockgpu/faults"  # next to CONTAINER_DRIVER_DIR (/run/mockgpu/driver)
XIDS, XIDS_LOCK = "xids.json", "xids.lock"
MAX_XIDS_BYTES = 4 << 20
MAX_EVENTS = 10_000  # the oldest go first beyond this (a runaway injection loop cannot grow the file forever)

# What the kernel driver logs for the Xids mockgpu gives a meaning (NVIDIA Xid catalog, docs/faults.md).
XID_NAMES = {
    13: "Graphics Engine Exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda applications "
        "and hitting a DBE",
    48: "DBE (Double Bit Error) ECC Error",
    79: "GPU has fallen off the bus",
}
# Xids NVIDIA's device plugin treats as application errors that leave the GPU healthy
# (k8s-device-plugin internal/rm/health.go: 13, 31, 43, 45, 68, 109).
APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})
# The GPU is gone from the PCIe bus: NVML answers NVML_ERROR_GPU_IS_LOST, nvidia-smi cannot get a handle.
LOST_XIDS = frozenset({79})
# An uncorrectable (double-bit) ECC error: the contexts on the GPU get cudaErrorECCUncorrectable.
ECC_XIDS = frozenset({48})


class FaultsUnreadable(MockgpuError):
    """The faults file exists but cannot be read: health is unknown, never assumed healthy."""


def faults_dir_for(driver_dir: str | Path) -> Path:
    """Where the faults of the node whose driver directory is ``driver_dir`` live: its sibling ``faults``."""
    return Path(driver_dir).parent / FAULTS


NODE_DIRS = "node-dirs.json"  # in a node's private root: where its driver and faults directories are


def record_node_dirs(root: Path, driver_dir: Path) -> None:
    """Say in the node's root (0700, the kubelet's: no pod reaches it) where its driver directory and the faults
    beside it are, for ``mockgpu fault`` (a root kubelet's sandbox layer may have moved them out of the root)."""
    doc = {"driver": str(driver_dir), "faults": str(faults_dir_for(driver_dir))}
    with Dir.open(root) as d:
        d.write_atomic(NODE_DIRS, json.dumps(doc).encode())
        os.chmod(NODE_DIRS, 0o600, dir_fd=d.fd)  # the node's state is its kubelet's alone (privatefs' mode)


def node_dirs(root: Path) -> dict[str, Path] | None:
    """What ``record_node_dirs`` wrote (None before the node's kubelet first started, or on a node without GPUs)."""
    try:
        with Dir.open(root) as d:
            doc = json.loads(d.read(NODE_DIRS, 1 << 16))
        return {"driver": Path(doc["driver"]), "faults": Path(doc["faults"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class XidEvent:
    """One injected Xid on a GPU or MIG instance (by UUID)."""

    uuid: str
    xid: int
    time: float

    def to_json(self) -> dict[str, Any]:
        return {"uuid": self.uuid, "xid": self.xid, "time": self.time}


def parse_events(raw: bytes) -> list[XidEvent]:
    """The events of a file; entries of the wrong shape are ignored (defence in depth: only the owner writes it)."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(doc, list):
        return []
    out = []
    for e in doc:
        if (isinstance(e, dict) and isinstance(e.get("uuid"), str) and isinstance(e.get("xid"), int)
                and not isinstance(e["xid"], bool) and isinstance(e.get("time", 0), int | float)):
            out.append(XidEvent(e["uuid"], e["xid"], float(e.get("time", 0))))
    return out


class FaultLog:
    """The Xid events of one node's faults directory."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)

    @classmethod
    def for_driver(cls, driver_dir: str | Path) -> FaultLog:
        return cls(faults_dir_for(driver_dir))

    def events(self) -> list[XidEvent]:
        """Every recorded event, oldest first; none when the directory or file is absent. Unreadable (a pod of the
        ``landlock`` layer shares the kubelet's uid, and Landlock does not mediate chmod: it can ``chmod 0`` the
        file) raises FaultsUnreadable: a hidden fault never reads as a healthy GPU."""
        try:
            with Dir.open(self.dir) as top:
                return parse_events(top.read(XIDS, MAX_XIDS_BYTES))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise FaultsUnreadable(f"cannot read the injected faults in {self.dir}: {exc.strerror or exc}") from None

    def _edit(self, fn: Callable[[list[XidEvent]], list[XidEvent]]) -> list[XidEvent]:
        with Dir.open(self.dir, create=True) as top:
            fd = top.open_lock(XIDS_LOCK)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    old = parse_events(top.read(XIDS, MAX_XIDS_BYTES))
                except FileNotFoundError:
                    old = []
                new = fn(old)[-MAX_EVENTS:]
                top.write_atomic(XIDS, json.dumps([e.to_json() for e in new]).encode())  # a fresh 0644 file
                os.fchmod(top.fd, 0o755)
                return new
            finally:
                os.close(fd)

    def inject(self, uuid: str, xid: int, *, now: float | None = None) -> XidEvent:
        """Record an Xid on a device (as the kernel driver would log it)."""
        if isinstance(xid, bool) or not isinstance(xid, int) or xid <= 0:
            raise ValueError(f"an Xid is a positive integer, not {xid!r}")
        ev = XidEvent(uuid, xid, time.time() if now is None else now)
        self._edit(lambda old: [*old, ev])
        return ev

    def clear(self, uuids: set[str] | None = None) -> int:
        """Forget the events of ``uuids`` (all when None): a fake GPU reset. Returns how many were removed."""
        removed = 0

        def drop(old: list[XidEvent]) -> list[XidEvent]:
            nonlocal removed
            kept = [e for e in old if uuids is not None and e.uuid not in uuids]
            removed = len(old) - len(kept)
            return kept

        self._edit(drop)
        return removed


__all__ = ["APPLICATION_XIDS", "CONTAINER_FAULTS_DIR", "ECC_XIDS", "FAULTS", "LOST_XIDS", "XID_NAMES", "FaultLog",
           "FaultsUnreadable", "XidEvent", "faults_dir_for", "parse_events",
           "node_dirs", "record_node_dirs"]
