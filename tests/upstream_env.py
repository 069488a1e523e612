"""The upstream binaries for tests: skip only where Go is absent (saying so); where Go is present, build
what is missing with scripts/upstream-build (cached, so normally a no-op) and fail if that fails."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mockgpu.backends.upstream import binaries

ROOT = Path(__file__).resolve().parents[1]


def require_upstream() -> Path:
    """The folder of upstream binaries; pytest.skip only when ``go`` is not installed."""
    if binaries.missing(binaries.ALL) is None:
        return binaries.bin_dir()
    if shutil.which("go") is None:
        pytest.skip("go is not installed: the upstream control plane cannot be built here "
                    "(install Go, then ./scripts/upstream-build)")
    done = subprocess.run([str(ROOT / "scripts" / "upstream-build")], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"scripts/upstream-build failed: {done.stderr[-2000:]}")
    problem = binaries.missing(binaries.ALL)
    assert problem is None, problem
    return binaries.bin_dir()


def require_kueue() -> Path:
    """The folder of upstream binaries with Kueue's manager and manifests (``scripts/upstream-build kueue``);
    pytest.skip only when ``go`` is not installed and they are absent."""
    bins = require_upstream()
    if binaries.kueue_missing() is None:
        return bins
    if shutil.which("go") is None:
        pytest.skip(f"go is not installed and Kueue is not built: {binaries.kueue_missing()}")
    done = subprocess.run([str(ROOT / "scripts" / "upstream-build"), "kueue"], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"scripts/upstream-build kueue failed: {done.stderr[-2000:]}")
    problem = binaries.kueue_missing()
    assert problem is None, problem
    return bins


def require_e2e() -> Path:
    """``e2e.test`` (Kubernetes' sig-api-machinery e2e specs, ``scripts/upstream-build e2e``) next to the upstream
    binaries; pytest.skip only when ``go`` is not installed and it is absent."""
    bins = require_upstream()
    if binaries.missing(("e2e.test",)) is None:
        return bins / "e2e.test"
    if shutil.which("go") is None:
        pytest.skip(f"go is not installed and e2e.test is not built: {binaries.missing(('e2e.test',))}")
    done = subprocess.run([str(ROOT / "scripts" / "upstream-build"), "e2e"], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"scripts/upstream-build e2e failed: {done.stderr[-2000:]}")
    problem = binaries.missing(("e2e.test",))
    assert problem is None, problem
    return bins / "e2e.test"
