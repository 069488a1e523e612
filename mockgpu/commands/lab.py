"""``mockgpu lab``: JupyterLab on ``labs/`` with everything installed."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from mockgpu.errors import MockgpuError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lab", help="start JupyterLab on the labs/ folder")
    p.add_argument("--labs", default=None, help="folder of notebooks (default: labs/ of this checkout)")
    p.add_argument("--port", type=int, default=8888)
    p.add_argument("--no-browser", action="store_true")
    p.set_defaults(func=run)


def labs_dir(explicit: str | None) -> Path:
    """The labs folder: the one asked for, else ``labs/`` beside the package's checkout."""
    d = Path(explicit) if explicit else Path(__file__).resolve().parents[2] / "labs"
    if not d.is_dir():
        raise MockgpuError(f"no labs folder at {d}; pass --labs DIR")
    return d


def run(args: argparse.Namespace) -> int:
    d = labs_dir(args.labs)
    exe = shutil.which("jupyter")
    if exe is None:
        raise MockgpuError("JupyterLab is not installed; run ./scripts/lab, which installs it")
    argv = [exe, "lab", f"--notebook-dir={d}", f"--port={args.port}", "--ip=127.0.0.1"]
    if args.no_browser:
        argv.append("--no-browser")
    os.execv(exe, argv)
    return 0  # not reached
