"""The client-go test program (tests/goclient: a Go client that speaks protobuf, as every Go client does by
default) for the protobuf tests: built with ``go build`` into ``.cache/goclient/`` (keyed by its sources, so
normally a no-op; the first build compiles client-go, about 90 s). Skips only where Go is absent, saying so;
fails when Go is present and the build fails."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "goclient"


def require_goclient() -> Path:
    """The built program; pytest.skip only when ``go`` is not installed."""
    digest = hashlib.sha256(b"".join((SOURCE / n).read_bytes() for n in ("main.go", "go.mod", "go.sum")))
    binary = ROOT / ".cache" / "goclient" / f"protoclient-{digest.hexdigest()[:16]}"
    if binary.exists():
        return binary
    if shutil.which("go") is None:
        pytest.skip("go is not installed: the client-go test program cannot be built here (install Go)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["go", "build", "-o", str(binary), "."], cwd=SOURCE, capture_output=True, text=True,
                          env={**os.environ, "CGO_ENABLED": "0"}, timeout=900)
    if done.returncode != 0:
        pytest.fail(f"go build of tests/goclient failed: {done.stderr[-2000:]}")
    return binary


def run_scenario(binary: Path, kubeconfig: Path, namespace: str) -> dict[str, dict[str, Any]]:
    """step → what the Go client decoded (``object``) or the Status it got (``status``)."""
    done = subprocess.run([str(binary), "scenario", str(kubeconfig), namespace], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {line.pop("step"): line for line in lines}
