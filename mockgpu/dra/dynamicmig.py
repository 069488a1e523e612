"""MIG instances made on demand: while a claim holding a MIG placement device is prepared, the node's fake
driver (``mockgpu.gpu.driver``: ``inventory.json`` and a memory ledger per device) has that MIG instance, so a
workload given its UUID finds it, as NVIDIA's DRA driver creates a MIG device in NodePrepareResources and
destroys it in NodeUnprepareResources.

Stateless: the prepared devices are read back from the CDI specs in the node's CDI directory (each CDI device
names its ResourceSlice devices in the annotation ``gpu.mockgpu.io/devices``), so a restarted driver rebuilds
the same driver directory. Simplified: the instance's GI ID and ``Device N`` index follow ``mockgpu.gpu.mig``'s
numbering for its placement; a device plugin process that restarts on the same node rewrites the static
inventory until the DRA driver's next prepare or unprepare.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

from mockgpu.dra.slices import DRIVER, mig_placements
from mockgpu.gpu.catalog import get_model
from mockgpu.gpu.driver import write_node_driver
from mockgpu.gpu.inventory import MigInstance, NodeInventory
from mockgpu.gpu.mig import gi_id_for

log = logging.getLogger(__name__)
DEVICES_ANNOTATION = f"{DRIVER}/devices"


def prepared_devices(cdi_dir: Path) -> list[str]:
    """Device names of every prepared claim, from the CDI specs' annotations."""
    out: list[str] = []
    for path in sorted(Path(cdi_dir).glob(f"{DRIVER}-gpu_*.json")):
        try:
            spec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for dev in spec.get("devices") or []:
            names = ((dev.get("annotations") or {}).get(DEVICES_ANNOTATION) or "").split(",")
            out.extend(n for n in names if n and n not in out)
    return out


def with_mig_instances(inventory: NodeInventory, devices: list[str]) -> NodeInventory:
    """``inventory`` plus a MIG instance for each MIG placement device in ``devices``."""
    gpus = []
    for g in inventory.gpus:
        placed = [m for m in mig_placements(inventory, g) if m.name in devices]
        if not placed:
            gpus.append(g)
            continue
        slots = get_model(g.model).memory_slots
        by_gi = sorted(placed, key=lambda m: gi_id_for(slots, m.start, m.size))
        mig = tuple(MigInstance(
            uuid=m.uuid, profile=m.profile.name, profile_id=m.profile.id, parent_index=g.index, parent_uuid=g.uuid,
            mig_index=k, gi_id=gi_id_for(slots, m.start, m.size), ci_id=0, placement_start=m.start,
            placement_size=m.size, memory_mib=m.profile.memory_mib, sm_count=m.profile.sm_count)
            for k, m in enumerate(by_gi))
        gpus.append(replace(g, mig=g.mig + mig))
    return replace(inventory, gpus=tuple(gpus))


def refresh_driver_dir(driver_dir: Path, inventory: NodeInventory, cdi_dir: Path) -> None:
    """Write the node's driver directory with the MIG instances of the prepared claims."""
    try:
        write_node_driver(driver_dir, with_mig_instances(inventory, prepared_devices(cdi_dir)))
    except OSError as exc:
        log.warning("driver directory %s not written: %s", driver_dir, exc.strerror)
