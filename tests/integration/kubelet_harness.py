"""Test harness: one spec node's device plugin subprocess plus our kubelet-side DeviceManager."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mockgpu.config.clusterspec import load_spec
from mockgpu.control.kubelet.devicemanager import DeviceManager

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "clusters" / "workshop.yaml"
GPU = "nvidia.com/gpu"

NODES = [n.name for n in load_spec(SPEC).nodes()]


def device_plugin_command_present() -> bool:
    r = subprocess.run([sys.executable, "-m", "mockgpu.cli", "device-plugin", "--help"], capture_output=True)
    return r.returncode == 0


requires_device_plugin = pytest.mark.skipif(
    not device_plugin_command_present(), reason="`mockgpu device-plugin` not present"
)


class Node:
    """A DeviceManager and the device plugin subprocess of one spec node, in a short /tmp dir."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dir = Path(tempfile.mkdtemp(prefix="it", dir="/tmp"))
        self.plugin_dir = self.dir / "dp"
        self.driver_dir = self.dir / "driver"
        self.dm = DeviceManager(self.plugin_dir)
        self.proc: subprocess.Popen | None = None
        self.log = self.dir / "plugin.log"

    def start(self) -> Node:
        self.dm.start()
        cmd = [
            sys.executable,
            "-m",
            "mockgpu.cli",
            "device-plugin",
            "--spec",
            str(SPEC),
            "--node",
            self.name,
            "--plugin-dir",
            str(self.plugin_dir),
            "--driver-dir",
            str(self.driver_dir),
        ]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def restart_kubelet(self) -> None:
        """Stop the DeviceManager (kubelet.sock goes) and start a new one (kubelet.sock comes back)."""
        self.dm.stop()
        assert not (self.plugin_dir / "kubelet.sock").exists()
        self.dm = DeviceManager(self.plugin_dir)
        self.dm.start()

    def wait_allocatable(self, want: dict[str, int], timeout: float = 30) -> None:
        ok = self.dm.wait_for(lambda m: m.node_resources()[1] == want, timeout=timeout)
        assert ok, f"{self.name}: allocatable {self.dm.node_resources()[1]} != {want}; plugin log:\n{self.plugin_log()}"

    def plugin_log(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.dm.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
