"""An append-only log of CUDA out-of-memory failures in a node's driver directory: ``<dir>/oom.log``.

Fake CUDA appends one JSON line per failed allocation (``time`` in seconds since the epoch, ``device``
UUID, ``pid``, ``namespace``, ``pod``, ``container``, ``requested_bytes``, ``free_bytes``), so a GPU-state
publisher can show the moment one pod's allocation failed. Lines are written with one ``O_APPEND``
write each (atomic for lines this short on a local file system), so processes never interleave.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from mockgpu.gpu.ledger import ProcessIdentity

OOM_LOG = "oom.log"
MAX_READ = 1 << 20  # read at most the last MiB: a runaway loop must not make readers slow


def record_oom(directory: str | Path, device: str, who: ProcessIdentity, requested: int, free: int) -> None:
    """Append one OOM event; never raises (a workload's OOM must surface as the CUDA error, not an I/O one)."""
    line = json.dumps({"time": time.time(), "device": device, "pid": who.pid, "namespace": who.namespace,
                       "pod": who.pod, "container": who.container, "requested_bytes": int(requested),
                       "free_bytes": int(free)}) + "\n"
    try:
        fd = os.open(Path(directory) / OOM_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def read_ooms(directory: str | Path) -> list[dict[str, Any]]:
    """Every recorded OOM event, oldest first (a torn or foreign line is skipped)."""
    path = Path(directory) / OOM_LOG
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - MAX_READ))
            data = fh.read()
    except OSError:
        return []
    out = []
    for raw in data.splitlines():
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        if isinstance(ev, dict) and "device" in ev:
            out.append(ev)
    return out


def oom_log_mtime(directory: str | Path) -> float:
    try:
        return (Path(directory) / OOM_LOG).stat().st_mtime
    except OSError:
        return 0.0
