"""The node's device plugin (and DRA driver) as its own process, as a DaemonSet pod would run it next to the
kubelet, restarted with back-off when it dies.

``PluginProcess(spec_file, node, plugin_dir, driver_dir, log_file, backoff=BackOff())`` runs
``mockgpu device-plugin --spec ... --node ... --plugin-dir ... --driver-dir ...`` (through ``plugin_main``, the
same command without the CLI's other subcommands) in its own session; ``PluginProcess.dra_driver(...)`` runs
``mockgpu dra-driver`` the same way. ``stop()`` sends SIGTERM, then SIGKILL, and reaps it, so it never outlives
the kubelet.

Restart: with a ``BackOff``, a process that exits (crash, ``kill -9``) while the kubelet runs is started again
after the back-off delay, as the kubelet restarts a DaemonSet pod's container (restartPolicy Always) with
upstream's container back-off (``pkg/kubelet/kuberuntime``: 10 s, doubling, capped at 5 min, reset once the
container has run for 10 min). The new process registers over ``kubelet.sock`` again and the device manager
takes its ListAndWatch (``devicemanager``). Without a back-off (``backoff=None``) it is not restarted.
The delays are configurable (``KubeletOptions.plugin_backoff``); the log file is appended to across restarts.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from mockgpu.privatefs import open_private, private_dir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BackOff:
    """Upstream's container restart back-off (kubelet ``initialBackOff``/``MaxContainerBackOff``)."""

    initial: float = 10.0
    cap: float = 300.0
    reset_after: float = 600.0  # upstream forgets the back-off once a container ran 2 × cap without failing

    def next(self, delay: float) -> float:
        return min(delay * 2, self.cap)


class PluginProcess:
    def __init__(self, spec_file: Path, node: str, plugin_dir: Path, driver_dir: Path, log_file: Path,
                 argv: list[str] | None = None, backoff: BackOff | None = None) -> None:
        self.argv = argv or [sys.executable, "-m", "mockgpu.control.kubelet.plugin_main", "device-plugin",
                             "--spec", str(spec_file), "--node", node, "--plugin-dir", str(plugin_dir),
                             "--driver-dir", str(driver_dir)]
        self.log_file = log_file
        self.backoff = backoff
        self.proc: subprocess.Popen | None = None
        self.restarts = 0  # how many times the supervisor started it again
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None

    @classmethod
    def dra_driver(cls, spec_file: Path, node: str, plugin_dir: Path, registry_dir: Path, cdi_dir: Path,
                   driver_dir: Path, kubeconfig: Path, log_file: Path, backoff: BackOff | None = None) -> PluginProcess:
        """The node's DRA driver ``gpu.mockgpu.io`` (``mockgpu dra-driver``)."""
        argv = [sys.executable, "-m", "mockgpu.control.kubelet.plugin_main", "dra-driver", "--spec", str(spec_file),
                "--node", node, "--plugin-dir", str(plugin_dir), "--registry-dir", str(registry_dir),
                "--cdi-dir", str(cdi_dir), "--driver-dir", str(driver_dir), "--kubeconfig", str(kubeconfig)]
        return cls(spec_file, node, plugin_dir, cdi_dir, log_file, argv=argv, backoff=backoff)

    def start(self) -> PluginProcess:
        self._stopping.clear()
        with self._lock:
            self._spawn()
        if self.backoff is not None:
            self._supervisor = threading.Thread(target=self._supervise, name=f"plugin-{self.log_file.stem}",
                                                daemon=True)
            self._supervisor.start()
        return self

    def _spawn(self) -> None:
        private_dir(self.log_file.parent)
        with os.fdopen(open_private(self.log_file, os.O_WRONLY | os.O_APPEND), "ab") as log_fh:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log_fh, stderr=log_fh,
                                         start_new_session=True, close_fds=True)

    def _supervise(self) -> None:
        """Wait for the process; when it exits on its own, start it again after the back-off."""
        assert self.backoff is not None
        delay = self.backoff.initial
        while not self._stopping.is_set():
            proc, started = self.proc, time.monotonic()
            assert proc is not None
            rc = proc.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= self.backoff.reset_after:
                delay = self.backoff.initial
            log.warning("%s (pid %d) exited with %s; restarting it in %.1f s (back-off)",
                        " ".join(self.argv[3:5]), proc.pid, rc, delay)
            if self._stopping.wait(delay):
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                try:
                    self._spawn()
                except OSError as exc:  # tried again after the next delay
                    log.warning("restarting %s failed: %s", self.argv[3], exc)
                    continue
                finally:
                    delay = self.backoff.next(delay)
                self.restarts += 1

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the plugin (tests use this to make it vanish; with a back-off it comes back)."""
        if self.alive():
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        with self._lock:  # no restart can start while we stop the current process
            self._stop_proc(timeout)
        if self._supervisor is not None:
            self._supervisor.join(timeout)
            self._supervisor = None

    def _stop_proc(self, timeout: float) -> None:
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
