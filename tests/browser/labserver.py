"""A throwaway JupyterLab server for browser tests: its own port, token, root and Jupyter dirs, all in tmp.

Nothing is read from or written to the user's home (config, data, runtime, settings, workspaces and
IPython dirs all point into the temporary folder), and ``stop()`` leaves no server or kernel behind.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "labs"


def artifacts_dir() -> Path:
    """Where every run's screenshots go (``artifacts/`` is gitignored); MOCKGPU_ARTIFACTS overrides."""
    d = Path(os.environ.get("MOCKGPU_ARTIFACTS", ROOT / "artifacts")) / "browser"
    d.mkdir(parents=True, exist_ok=True)
    return d


# User settings that keep a headless, offline Lab quiet and fully rendered: no news or update checks
# (this machine has no network), no extension manager (it queries PyPI), and no cell virtualisation
# (with windowing, off-screen cells are not in the DOM, so a test could not see their outputs).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/extensionmanager-extension/plugin.jupyterlab-settings": {"enabled": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def free_port() -> int:
    """A loopback port nobody listens on right now (the server is told not to retry others)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_labs_without_outputs(src: Path, dst: Path) -> list[Path]:
    """Copy every notebook (and other files) of ``src`` to ``dst``, with outputs and counts cleared,
    so whatever the browser shows after "Run All Cells" was produced by this run, not stored."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    notebooks = sorted(dst.rglob("*.ipynb"))  # the learner copies and labs/solutions/
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
        nb.metadata.pop("widgets", None)
        nbformat.write(nb, path)
    return notebooks


@dataclass
class LabServer:
    root: Path  # the folder Lab serves
    home: Path  # where its Jupyter dirs, log and settings live
    port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    command: list[str] | None = None  # what to run instead of ``python -m jupyterlab ...`` (e.g. ``mockgpu lab``)
    proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def runtime_dir(self) -> Path:
        return self.home / "runtime"

    @property
    def log_path(self) -> Path:
        return self.home / "jupyterlab.log"

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}{path}{sep}token={self.token}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        dirs = {"JUPYTER_CONFIG_DIR": "config", "JUPYTER_DATA_DIR": "data", "JUPYTER_RUNTIME_DIR": "runtime",
                "JUPYTERLAB_SETTINGS_DIR": "settings", "JUPYTERLAB_WORKSPACES_DIR": "workspaces",
                "IPYTHONDIR": "ipython", "MPLCONFIGDIR": "mpl"}
        for var, sub in dirs.items():
            (self.home / sub).mkdir(parents=True, exist_ok=True)
            env[var] = str(self.home / sub)
        env["JUPYTER_PREFER_ENV_PATH"] = "1"  # the kernel spec of this interpreter's env, not ~/.local
        env["JUPYTER_TOKEN"] = self.token  # not on the command line, where `ps` would show it
        env.pop("JUPYTER_PATH", None)
        env["MOCKGPU_HOME"] = str(self.mockgpu_home)  # clusters the labs start live in tmp, not ~/.mockgpu
        env.pop("MOCKGPU_KUBECONFIG", None)  # labs start their own embedded cluster, never the user's
        return env

    def write_settings(self) -> None:
        config = {"LabApp": {"news_url": None, "extension_manager": "readonly",
                             "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate"}}
        (self.home / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
        for name, values in LAB_SETTINGS.items():
            plugin_dir, file = name.rsplit("/", 1)
            path = self.home / "settings" / plugin_dir / file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0", f"--ServerApp.root_dir={self.root}",
                "--ServerApp.shutdown_no_activity_timeout=900", "--ServerApp.terminals_enabled=False"]
        if os.geteuid() == 0:  # CI containers run as root; Jupyter refuses that unless told
            argv.append("--allow-root")
        return argv

    def start(self, timeout: float = 90.0) -> None:
        env = self.env()  # makes the dirs the settings go into
        self.write_settings()
        log = open(self.log_path, "wb")  # the child writes to its own copy of the fd
        self.proc = subprocess.Popen(self.command or self.argv(), env=env, cwd=self.root, stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.api("GET", "/api/status", timeout=2)
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.3)
        raise TimeoutError(f"JupyterLab did not answer within {timeout:.0f}s:\n{self.log_tail()}")

    def api(self, method: str, path: str, timeout: float = 10):
        req = urllib.request.Request(self.base_url + path, method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    @property
    def mockgpu_home(self) -> Path:
        return self.home / "mockgpu"

    def _pids(self, match) -> list[int]:
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if match(entry):
                    pids.append(int(entry.name))
            except OSError:  # gone, or not ours to read
                continue
        return pids

    def kernel_pids(self) -> list[int]:
        """Processes whose command line names a connection file in this server's runtime dir: its kernels."""
        marker = str(self.runtime_dir).encode()
        return self._pids(lambda e: marker in (e / "cmdline").read_bytes())

    def workload_pids(self) -> list[int]:
        """Processes that inherited this server's MOCKGPU_HOME: the server, its kernels and whatever the labs'
        clusters started (workload containers run in sessions of their own; the kubelet passes MOCKGPU_*
        variables through to them)."""
        marker = f"MOCKGPU_HOME={self.mockgpu_home}".encode()
        return self._pids(lambda e: marker in (e / "environ").read_bytes().split(b"\0"))

    def shutdown_kernels(self) -> None:
        """Ask the server to shut every kernel down (what closing a notebook with "shut down kernel" does)."""
        try:
            for k in self.api("GET", "/api/kernels", timeout=5) or []:
                self.api("DELETE", f"/api/kernels/{k['id']}", timeout=20)
        except (OSError, urllib.error.URLError, ValueError):
            pass

    def stop(self) -> None:
        """Shut kernels down through the API, stop the server, then kill whatever of ours is left."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.shutdown_kernels()
            self.proc.send_signal(signal.SIGTERM)  # Jupyter Server shuts down its kernels on SIGTERM
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        # kernels and workloads run in sessions of their own; end any left (a lab that failed before its
        # lab.close()), by pid
        for pid in self.kernel_pids() + self.workload_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc = None
