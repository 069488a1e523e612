"""Host files outside a runtime's root that a pod's planted symlinks point at, and the check that root-side
cleanup left them as they were (importable from the test packages)."""

from __future__ import annotations

import os
from pathlib import Path


def make_host(tmp_path: Path) -> dict[str, Path]:
    """A host dir with a file and a nested dir: ``{"dir", "file", "nested"}``."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret").write_text("host file\n")
    (outside / "sub" / "kept").write_text("host dir\n")
    return {"dir": outside, "file": outside / "secret", "nested": outside / "sub"}


def intact(host: dict[str, Path]) -> bool:
    """Every host path still there, with its content, and still owned by this test's user."""
    return (host["dir"].is_dir() and host["file"].read_text() == "host file\n"
            and (host["nested"] / "kept").read_text() == "host dir\n"
            and all(p.stat().st_uid == os.getuid() for p in host.values()))
