"""Creating, starting, stopping and deleting upstream clusters; ``UpstreamCluster`` is the backend's ``Cluster``.

The supervisor (``daemon``) always runs detached, so ``mockgpu up``, a notebook's ``LabCluster`` and the
tests run the same processes. ``UpstreamCluster(spec, home=...)`` is the ``Cluster`` of ``backends/base.py``, as
``EmbeddedCluster`` is: ``start()``, ``wait_ready()``, ``stop()``, ``delete()``, ``api_client()``, ``kubeconfig``,
``info()``, and a context manager.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mockgpu.backends.base import ClusterInfo
from mockgpu.backends.common.controlplane import remove_node_dirs
from mockgpu.backends.common.faults import HostFaults
from mockgpu.backends.common.kubeconfig import api_client_for, remove_kubeconfig, write_kubeconfig
from mockgpu.backends.common.process import log_tail, process_alive
from mockgpu.backends.common.spec import resolve_spec
from mockgpu.backends.upstream import binaries
from mockgpu.backends.upstream.pki import ensure_pki
from mockgpu.backends.upstream.state import (
    BACKEND,
    ENDPOINT_NAME,
    PID_NAME,
    PROGRESS_NAME,
    UpstreamState,
    new_config,
)
from mockgpu.config import ClusterSpec
from mockgpu.control.scheduler.config import load_scheduler_config
from mockgpu.errors import MockgpuError
from mockgpu.privatefs import open_private

START_TIMEOUT = 300.0  # a cold kube-apiserver on a loaded 2-core machine takes tens of seconds


def prepare(state: UpstreamState, spec: ClusterSpec, *, kubeconfig: Path | None = None,
            scheduler_config: Path | None = None) -> tuple[dict[str, Any], bool]:
    """(config, created): resume the existing cluster's config, else write a new state dir and PKI."""
    kubeconfig = Path(kubeconfig).expanduser().absolute() if kubeconfig is not None else None
    if state.exists():
        if not state.is_upstream():
            raise MockgpuError(f"cluster '{state.name}' exists and is not an upstream cluster "
                               f"(mockgpu down --name {state.name} first)", exit_code=2)
        config = state.read_config()
        if kubeconfig is not None and str(kubeconfig) != config.get("kubeconfig"):
            config["kubeconfig"] = str(kubeconfig)
            state.write_config(config)
        return config, False
    load_scheduler_config(spec, scheduler_config)  # an invalid file fails here, with its field path
    sched = scheduler_config or spec.scheduler_config_path()
    config = new_config(state.name, scheduler_config=Path(sched).resolve() if sched else None,
                        kubeconfig=Path(kubeconfig or state.default_kubeconfig))
    state.save_spec(spec)
    ensure_pki(state.dir / "pki", state.name)
    state.write_config(config)
    return config, True


def spawn(state: UpstreamState) -> None:
    """Start the supervisor in a new session; it outlives the calling process."""
    for name in (ENDPOINT_NAME, PID_NAME, PROGRESS_NAME):
        (state.dir / name).unlink(missing_ok=True)
    with os.fdopen(open_private(state.log_file, os.O_WRONLY | os.O_APPEND), "ab") as log:
        subprocess.Popen([sys.executable, "-m", "mockgpu.backends.upstream.daemon", str(state.dir)],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)


def _progress(state: UpstreamState) -> dict[str, Any]:
    try:
        return json.loads((state.dir / PROGRESS_NAME).read_text())
    except (OSError, ValueError):
        return {}


def wait_ready(state: UpstreamState, timeout: float = START_TIMEOUT,
               progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
    """Block until the supervisor reports ready; ``progress(step, seconds)`` is called once per finished step."""
    deadline = time.monotonic() + timeout
    seen: set[str] = set()
    started = False
    while time.monotonic() < deadline:
        doc = _progress(state)
        for step, at in (doc.get("timings") or {}).items():
            if step not in seen:
                seen.add(step)
                if progress:
                    progress(step, at)
        if doc.get("state") == "ready":
            return doc
        if doc.get("state") == "failed":
            raise MockgpuError(f"the upstream control plane of '{state.name}' failed to start: {doc.get('error')} "
                               f"(see {state.dir / 'logs'} and {state.log_file})")
        started = started or state.running()
        if started and not state.running():
            raise MockgpuError(f"the upstream supervisor of '{state.name}' exited: {log_tail(state.log_file)}")
        time.sleep(0.1)
    raise MockgpuError(f"the upstream cluster '{state.name}' was not ready within {timeout:.0f} s "
                       f"(last step: {_progress(state).get('step')}; see {state.log_file})")


def stop(state: UpstreamState, timeout: float = 60.0) -> None:
    """SIGTERM the supervisor (it stops kubelets, then the components) and wait until it is gone."""
    if not state.running():
        return
    try:
        pid = int((state.dir / PID_NAME).read_text())
    except (OSError, ValueError):
        raise MockgpuError(f"cluster '{state.name}' is running but its pid is unknown; see {state.dir}") from None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not state.running() and not process_alive(pid):  # the lock goes a moment before the interpreter exits
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)  # its components die with it (PR_SET_PDEATHSIG)
    time.sleep(0.5)
    if state.running():
        raise MockgpuError(f"could not stop the upstream control plane of '{state.name}' (pid {pid})")


def publish(state: UpstreamState, config: dict[str, Any]) -> Path:
    """Write the user's kubeconfig (token of ``system:masters``, the cluster CA)."""
    port = int(config["ports"]["apiserver"])
    return write_kubeconfig(Path(config["kubeconfig"]), state.name, f"https://127.0.0.1:{port}", config["token"],
                            state.cert_file.read_bytes())


def destroy(state: UpstreamState) -> None:
    remove_node_dirs(state)
    if state.exists():
        with contextlib.suppress(MockgpuError):
            kc = Path(state.read_config().get("kubeconfig") or state.default_kubeconfig)
            if state.dir not in kc.parents:
                remove_kubeconfig(kc, state.name)
    shutil.rmtree(state.dir, ignore_errors=True)


class UpstreamCluster(HostFaults):  # the fault methods: backends/common/faults.py
    """A mockgpu cluster on the real control plane; a context manager that starts and stops it."""

    def __init__(self, spec: str | Path | ClusterSpec | None = None, *, name: str | None = None,
                 home: str | Path | None = None, kubeconfig: str | Path | None = None,
                 scheduler_config: str | Path | None = None, delete_on_exit: bool = False,
                 scheduler_verbosity: int | None = None, controllers: str | None = None,
                 apiserver_args: tuple[str, ...] | None = None,
                 progress: Callable[[str, float], None] | None = None, retain: bool = False) -> None:
        self.spec = resolve_spec(spec)
        self.name = name or self.spec.name
        self.state = UpstreamState.of(self.name, home)
        self.delete_on_exit = delete_on_exit
        self._kubeconfig = Path(kubeconfig) if kubeconfig else None
        self.scheduler_config = Path(scheduler_config) if scheduler_config else None
        self.scheduler_verbosity = scheduler_verbosity  # 10: the scheduler logs every plugin's score per node
        self.controllers = controllers  # kube-controller-manager --controllers (default "*")
        self.apiserver_args = list(apiserver_args) if apiserver_args is not None else None  # more flags
        self.progress = progress
        self.retain = retain  # keep a half-created cluster (``mockgpu up --retain``)
        self.config: dict[str, Any] = {}
        self.created = False
        self.how = ""  # after start: "created", "resumed" or "already running"

    @property
    def kubeconfig(self) -> Path:
        return Path(self.config.get("kubeconfig") or self._kubeconfig or self.state.default_kubeconfig)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.config['ports']['apiserver']}"

    @property
    def token(self) -> str:
        return str(self.config["token"])

    def start(self) -> UpstreamCluster:
        problem = binaries.missing() or (binaries.kueue_missing() if self.spec.spec.kueue.enabled else None)
        if problem:
            raise MockgpuError(problem, exit_code=2)
        self.config, created = prepare(self.state, self.spec, kubeconfig=self._kubeconfig,
                                       scheduler_config=self.scheduler_config)
        self.created = created
        self.how = "already running" if self.state.running() else "created" if created else "resumed"
        wanted = {"schedulerVerbosity": self.scheduler_verbosity, "controllers": self.controllers,
                  "apiserverExtraArgs": self.apiserver_args}
        changed = {k: v for k, v in wanted.items() if v is not None and self.config.get(k) != v}
        if changed:  # read by the supervisor when it starts the components
            self.config.update(changed)
            self.state.write_config(self.config)
        try:
            if not self.state.running():
                spawn(self.state)
            self.wait_ready()
        except BaseException:
            with contextlib.suppress(MockgpuError):
                stop(self.state)
            if created and not self.retain:
                destroy(self.state)
            raise
        publish(self.state, self.config)
        return self

    def wait_ready(self, timeout: float | None = None) -> None:
        wait_ready(self.state, START_TIMEOUT if timeout is None else timeout, progress=self.progress)

    def stop(self) -> None:
        stop(self.state)

    def delete(self) -> None:
        self.stop()
        destroy(self.state)

    def api_client(self) -> Any:
        return api_client_for(self.url, self.state.cert_file, self.token)

    def info(self) -> ClusterInfo:
        return ClusterInfo(self.name, BACKEND, self.url if self.config else "", self.kubeconfig,
                           f"running ({self.how})" if self.how else "stopped",
                           kueue=bool(self.how) and self.spec.spec.kueue.enabled)

    def component_log(self, component: str) -> Path:
        return self.state.layout.log(component)

    def __enter__(self) -> UpstreamCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.delete_on_exit:
            self.delete()
        else:
            self.stop()
