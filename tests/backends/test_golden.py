"""Golden dry-run output per spec (clusters/rendered/<spec>.yaml; workshop also with fake-gpu-operator).

Regenerate after an intended change with ``MOCKGPU_UPDATE_GOLDEN=1 python -m pytest tests/backends``
and review the diff.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mockgpu.backends.base import UpOptions
from mockgpu.backends.kind import render_all

from .conftest import ROOT, SPEC_IDS, SPECS, STATE_DIR, UPDATE_GOLDEN, spec_at

CASES = [(p, "mockgpu") for p in SPECS] + [(ROOT / "clusters" / "workshop.yaml", "fake-gpu-operator")]
IDS = [*SPEC_IDS, "workshop-fake-gpu-operator"]


def _golden(path, plugin):
    suffix = "" if plugin == "mockgpu" else f".{plugin}"
    return ROOT / "clusters" / "rendered" / f"{path.stem}{suffix}.yaml"


def _render(path, plugin):
    spec = spec_at(path)
    return render_all(UpOptions(spec=spec, name=spec.name, device_plugin=plugin), STATE_DIR)


@pytest.mark.parametrize(("path", "plugin"), CASES, ids=IDS)
def test_dry_run_matches_golden(path, plugin):
    out = _render(path, plugin)
    golden = _golden(path, plugin)
    if UPDATE_GOLDEN:
        golden.write_text(out)
    assert golden.exists(), f"{golden} missing: run with MOCKGPU_UPDATE_GOLDEN=1"
    assert out == golden.read_text(), f"{golden.name} differs: review, then regenerate with MOCKGPU_UPDATE_GOLDEN=1"


_SNIPPET = (
    "import sys; from pathlib import Path; from mockgpu.config import load_spec;"
    "from mockgpu.backends.base import UpOptions; from mockgpu.backends.kind import render_all;"
    "s = load_spec(sys.argv[1]); sys.stdout.write(render_all(UpOptions(spec=s, name=s.name), Path(sys.argv[2])))"
)


def test_dry_run_is_stable_across_processes():
    """Same bytes from two interpreters with different hash seeds (no set/dict-order leaks)."""
    outs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, "-c", _SNIPPET, "clusters/workshop.yaml", str(STATE_DIR)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True)
        outs.append(proc.stdout)
    assert outs[0] == outs[1] == _render(ROOT / "clusters" / "workshop.yaml", "mockgpu")
