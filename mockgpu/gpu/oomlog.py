"""An append-only log of CUDA out-of-memory failures in a node's driver directory: ``<dir>/oom.log``.

Fake CUDA appends one JSON line per failed allocation (``time`` in seconds since the epoch, ``device``
UUID, ``pid``, ``namespace``, ``pod``, ``container``, ``requested_bytes``, ``free_bytes``), so a GPU-state
publisher can show the moment one pod's allocation failed. Lines are written with one ``O_APPEND``
write each (atomic for lines this short on a local file system), so processes never interleave. The file is
writable by pods and read by root (the GPU-state publisher): it is reached through ``mockgpu.gpu.safedir``
(no symlink followed, only a regular file, only its last MiB read) and a line of the wrong shape is skipped.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from mockgpu.gpu.ledger import ProcessIdentity
from mockgpu.gpu.safedir import Dir

OOM_LOG = "oom.log"
MAX_READ = 1 << 20  # read at most the last MiB: a runaway loop must not make readers slow


def record_oom(directory: str | Path, device: str, who: ProcessIdentity, requested: int, free: int) -> None:
    """Append one OOM event; never raises (a workload's OOM must surface as the CUDA error, not an I/O one)."""
    line = json.dumps({"time": time.time(), "device": device, "pid": who.pid, "namespace": who.namespace,
                       "pod": who.pod, "container": who.container, "requested_bytes": int(requested),
                       "free_bytes": int(free)}) + "\n"
    try:
        with Dir.open(directory) as top:
            top.append(OOM_LOG, line.encode())
    except OSError:
        pass


def read_ooms(directory: str | Path) -> list[dict[str, Any]]:
    """Every recorded OOM event, oldest first (a torn or foreign line is skipped)."""
    try:
        with Dir.open(directory) as top:
            data = top.read_tail(OOM_LOG, MAX_READ)
    except OSError:
        return []
    out = []
    for raw in data.splitlines():
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        if _well_formed(ev):
            out.append(ev)
    return out


def _is_num(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _well_formed(ev: object) -> bool:
    """An event of the shape ``record_oom`` writes (readers index and format its fields)."""
    return (isinstance(ev, dict) and isinstance(ev.get("device"), str)
            and all(isinstance(ev.get(k, ""), str) for k in ("namespace", "pod", "container"))
            and all(_is_num(ev.get(k, 0)) for k in ("time", "requested_bytes", "free_bytes"))
            and 0 <= ev.get("time", 0) < 1e11)


def oom_log_mtime(directory: str | Path) -> float:
    try:
        with Dir.open(directory) as top:
            return top.mtime(OOM_LOG)
    except OSError:
        return 0.0
