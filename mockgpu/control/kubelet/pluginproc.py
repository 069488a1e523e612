"""The node's device plugin (and DRA driver) as its own process, as a DaemonSet pod would run it next to the
kubelet.

``PluginProcess(spec_file, node, plugin_dir, driver_dir, log_file)`` runs
``mockgpu device-plugin --spec ... --node ... --plugin-dir ... --driver-dir ...`` (through ``plugin_main``, the
same command without the CLI's other subcommands) in its own session; ``PluginProcess.dra_driver(...)`` runs
``mockgpu dra-driver`` the same way. ``stop()`` sends SIGTERM, then SIGKILL, and reaps it, so it never outlives
the kubelet.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


class PluginProcess:
    def __init__(self, spec_file: Path, node: str, plugin_dir: Path, driver_dir: Path, log_file: Path,
                 argv: list[str] | None = None) -> None:
        self.argv = argv or [sys.executable, "-m", "mockgpu.control.kubelet.plugin_main", "device-plugin",
                             "--spec", str(spec_file), "--node", node, "--plugin-dir", str(plugin_dir),
                             "--driver-dir", str(driver_dir)]
        self.log_file = log_file
        self.proc: subprocess.Popen | None = None

    @classmethod
    def dra_driver(cls, spec_file: Path, node: str, plugin_dir: Path, registry_dir: Path, cdi_dir: Path,
                   driver_dir: Path, kubeconfig: Path, log_file: Path) -> PluginProcess:
        """The node's DRA driver ``gpu.mockgpu.io`` (``mockgpu dra-driver``)."""
        argv = [sys.executable, "-m", "mockgpu.control.kubelet.plugin_main", "dra-driver", "--spec", str(spec_file),
                "--node", node, "--plugin-dir", str(plugin_dir), "--registry-dir", str(registry_dir),
                "--cdi-dir", str(cdi_dir), "--driver-dir", str(driver_dir), "--kubeconfig", str(kubeconfig)]
        return cls(spec_file, node, plugin_dir, cdi_dir, log_file, argv=argv)

    def start(self) -> PluginProcess:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True, close_fds=True)
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the plugin (tests use this to make it vanish)."""
        if self.alive():
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
            except ProcessLookupError:
                pass
        self.proc.wait(5)

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-n:]
        except OSError:
            return ""
