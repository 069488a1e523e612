"""scripts/runc-capfilter: capabilities missing from the bounding set leave the OCI config (create/run
--bundle) and the process file (exec --process); everything else passes through to the real runc."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "runc-capfilter"
NO_SYS_RESOURCE = "000001fffeffffff"  # this machine's CapBnd: every capability but CAP_SYS_RESOURCE (24)
ALL = "000001ffffffffff"

pytestmark = pytest.mark.skipif(shutil.which("jq") is None or shutil.which("bash") is None,
                                reason="needs bash and jq")


def _run(tmp_path: Path, capbnd: str, *args: str) -> list[str]:
    log = tmp_path / "argv"
    fake = tmp_path / "runc"
    fake.write_text(f'#!/bin/sh\necho "$@" > {log}\n')
    fake.chmod(0o755)
    env = {**os.environ, "MOCKGPU_REAL_RUNC": str(fake), "MOCKGPU_CAPBND": capbnd}
    subprocess.run(["bash", str(SCRIPT), *args], env=env, check=True)
    return log.read_text().split()


def _caps(*names: str) -> list[str]:
    return [f"CAP_{n}" for n in names]


def test_create_drops_what_the_bounding_set_lacks_and_calls_runc(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    caps = {k: _caps("CHOWN", "SYS_RESOURCE", "SYS_ADMIN") for k in ("bounding", "effective", "permitted")}
    (bundle / "config.json").write_text(json.dumps({"process": {"capabilities": caps, "args": ["x"]}}))
    argv = _run(tmp_path, NO_SYS_RESOURCE, "--root", "/r", "create", "--bundle", str(bundle), "id1")
    assert argv == ["--root", "/r", "create", "--bundle", str(bundle), "id1"]
    got = json.loads((bundle / "config.json").read_text())["process"]
    assert all(v == _caps("CHOWN", "SYS_ADMIN") for v in got["capabilities"].values())
    assert got["args"] == ["x"]


def test_exec_process_file_is_filtered_too(tmp_path):
    proc = tmp_path / "process.json"
    proc.write_text(json.dumps({"capabilities": {"bounding": _caps("SYS_RESOURCE", "KILL")}, "args": ["sh"]}))
    _run(tmp_path, NO_SYS_RESOURCE, "exec", f"--process={proc}", "id1")
    assert json.loads(proc.read_text())["capabilities"]["bounding"] == _caps("KILL")


def test_a_full_bounding_set_changes_nothing(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    text = json.dumps({"process": {"capabilities": {"bounding": _caps("SYS_RESOURCE")}}})
    (bundle / "config.json").write_text(text)
    _run(tmp_path, ALL, "create", "-b", str(bundle), "id1")
    assert (bundle / "config.json").read_text() == text
