"""Liveness of the local backends' detached processes (the embedded daemon, the upstream supervisor) and the last
line of their logs, for one-line errors when they die during start."""

from __future__ import annotations

import os
from pathlib import Path


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, left unreaped by a container's init, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def log_tail(path: Path) -> str:
    """The last non-empty line of the log at ``path`` ("no log" when there is none)."""
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1] if lines else "no log"
