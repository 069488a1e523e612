"""Stable device identities: GPU and MIG UUIDs and PCI bus ids, derived from names, never random.

A learner who restarts a cluster sees the same UUIDs, and two nodes never share one. UUIDs are
UUIDv5 (SHA-1) in a mockgpu namespace over ``<cluster>/<node>/gpu/<index>`` (MIG: ``.../gi/<id>``),
printed in NVIDIA's forms ``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`` and ``MIG-...`` (R470+).
"""

from __future__ import annotations

import hashlib
import re
import uuid

# A fixed namespace so the same names always give the same UUIDs (uuid5 of the project's domain).
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "mockgpu.io")

GPU_UUID_RE = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MIG_UUID_RE = re.compile(r"^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def gpu_uuid(cluster: str, node: str, index: int) -> str:
    """``GPU-...`` UUID of GPU ``index`` on ``node`` of ``cluster``."""
    return "GPU-" + str(uuid.uuid5(NAMESPACE, f"{cluster}/{node}/gpu/{index}"))


def mig_uuid(cluster: str, node: str, index: int, gi_id: int, ci_id: int = 0) -> str:
    """``MIG-...`` UUID of the compute instance ``ci_id`` of GPU instance ``gi_id`` on GPU ``index``."""
    return "MIG-" + str(uuid.uuid5(NAMESPACE, f"{cluster}/{node}/gpu/{index}/gi/{gi_id}/ci/{ci_id}"))


def pci_bus_id(cluster: str, node: str, index: int) -> str:
    """A PCI bus id in nvidia-smi's form ``00000000:BB:00.0``.

    Buses are spread like a DGX's (distinct, increasing with the index) and salted by the node so two
    nodes do not look identical; the bus number stays below 0xF0.
    """
    salt = hashlib.sha256(f"{cluster}/{node}".encode()).digest()[0] % 8
    bus = 0x07 + salt + 0x0C * index
    return f"00000000:{bus % 0xF0:02X}:00.0"
