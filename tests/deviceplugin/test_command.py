"""``mockgpu device-plugin``: --list, bad input, and a clean SIGTERM shutdown of the real process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fake_kubelet import FakeKubelet

from mockgpu.cli import main

ROOT = Path(__file__).resolve().parents[2]
WORKSHOP = str(ROOT / "clusters" / "workshop.yaml")


def test_list_mig_node(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["device-plugin", "--spec", WORKSHOP, "--node", "mig-0", "--list"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["RESOURCE", "SOCKET", "DEVICE", "ID", "GPU", "NUMA"]
    assert out.count("nvidia.com/mig-1g.10gb  nvidia-mig-1g.10gb.sock  MIG-") == 8
    assert out.rstrip().endswith("nvidia.com/mig-1g.10gb: 8, nvidia.com/mig-2g.20gb: 1, nvidia.com/mig-3g.40gb: 1")


@pytest.mark.parametrize(("argv", "message"), [
    (["--spec", WORKSHOP, "--node", "nope", "--list"], "no node named 'nope'"),
    (["--spec", "/no/such/spec.yaml", "--node", "x", "--list"], "cannot read"),
    (["--spec", WORKSHOP, "--node", "whole-0"], "--plugin-dir is required"),
], ids=["unknown-node", "missing-spec", "no-plugin-dir"])
def test_bad_input_is_one_line_exit_2(argv, message, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["device-plugin", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mockgpu: ") and message in err and err.count("\n") == 1


def test_serves_registers_and_stops_cleanly_on_sigterm() -> None:
    d = Path(tempfile.mkdtemp(prefix="dp-", dir="/tmp"))
    kubelet = FakeKubelet(d).start()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockgpu.cli", "device-plugin", "--spec", WORKSHOP, "--node", "shared-0",
         "--plugin-dir", str(d), "--driver-dir", str(d / "driver")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        req, _ = kubelet.next_registration(timeout=30)
        assert (req.resource_name, req.endpoint) == ("nvidia.com/gpu", "nvidia-gpu.sock")
        assert (d / "driver" / "inventory.json").exists()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert not (d / "nvidia-gpu.sock").exists()
        assert "Registered nvidia.com/gpu" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kubelet.stop()
        shutil.rmtree(d, ignore_errors=True)
