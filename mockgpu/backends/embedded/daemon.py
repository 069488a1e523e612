"""The control-plane daemon of an embedded cluster: start it detached, wait until it answers, stop it.

``spawn`` double-forks when the calling process has no other threads (fast: the modules are already
imported), else starts ``python -m mockgpu.backends.embedded.daemon STATE_DIR`` in a new session. Either
way the daemon runs ``run_daemon``: stdout/stderr go to ``<state>/apiserver.log``. The daemon serves the API,
then starts the control plane (scheduler and one kubelet per node, ``controlplane``) and reports its progress in
``<state>/controlplane.json`` (``{"state": "starting"|"ready"|"failed", "error"}``), which ``wait_control_plane``
reads. On SIGTERM it stops the control plane (containers, device plugins) before the API server.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

from mockgpu.backends.common.controlplane import ControlPlane
from mockgpu.backends.common.process import log_tail, process_alive
from mockgpu.backends.common.state import ClusterState
from mockgpu.backends.embedded.nodes import spec_nodes
from mockgpu.control.apiserver.discovery import RESOURCES
from mockgpu.control.apiserver.handlers import ResourceAPI
from mockgpu.control.apiserver.server import ENDPOINT_NAME, APIServer, lock_held, read_endpoint
from mockgpu.errors import MockgpuError
from mockgpu.privatefs import open_private, write_private

PID_NAME = "apiserver.pid"
CONTROL_PLANE_NAME = "controlplane.json"


def node_seed(state: ClusterState):  # noqa: ANN201 - a Seed
    """Register the spec's nodes in a fresh store."""
    spec = state.load_spec()

    def seed(api: ResourceAPI) -> None:
        for node in spec_nodes(spec):
            api.create(RESOURCES["nodes"], "", node)

    return seed


def make_server(state: ClusterState, *, mode: str, bookmark_interval: float = 5.0,
                history: int = 10000, seed_nodes: bool = True) -> APIServer:
    """The API server; ``seed_nodes``: register placeholder Nodes (only when no kubelets will register them)."""
    config = state.read_config()
    return APIServer(state.dir, config["token"], port=int(config.get("port") or 0),
                     seed=node_seed(state) if seed_nodes else None,
                     bookmark_interval=bookmark_interval, history=history, mode=mode,
                     tls=(state.cert_file, state.key_file), gates=state.load_spec().feature_gates())


def run_daemon(state_dir: Path) -> int:
    """The daemon's main: serve until SIGTERM."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    state = ClusterState(Path(state_dir).name, Path(state_dir))
    write_private(state.dir / PID_NAME, str(os.getpid()))
    # The daemon never validates manifests: keep ``kubernetes.dynamic`` from importing kubernetes-validate
    # (a test dependency whose JSON-schema grammars take over a second to build) when the client is imported.
    sys.modules.setdefault("kubernetes_validate", None)
    try:
        server = make_server(state, mode="daemon", seed_nodes=False)
        asyncio.run(_serve(state, server))
    except Exception:
        logging.getLogger("mockgpu.apiserver").exception("control plane failed")
        return 1
    return 0


def _report(state: ClusterState, phase: str, error: str = "") -> None:
    write_private(state.dir / CONTROL_PLANE_NAME, json.dumps({"state": phase, "error": error}))


async def _serve(state: ClusterState, server: APIServer) -> None:
    """Serve the API, start the control plane on it, and on SIGTERM stop both (control plane first)."""
    server.mode = "daemon"
    await server.start()
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, done.set)
    cp = ControlPlane(state, server.url, server.token)
    try:
        _report(state, "starting")
        try:
            await loop.run_in_executor(None, cp.start)
            _report(state, "ready")
        except Exception as exc:
            logging.getLogger("mockgpu.controlplane").exception("control plane failed to start")
            _report(state, "failed", str(exc))
            done.set()
        await done.wait()
    finally:
        await loop.run_in_executor(None, cp.stop)
        await server.stop()


def wait_control_plane(state: ClusterState, timeout: float = 60.0) -> None:
    """Block until the daemon's scheduler and kubelets run (every node Ready); MockgpuError if they failed."""
    deadline = time.monotonic() + timeout
    path = state.dir / CONTROL_PLANE_NAME
    while time.monotonic() < deadline:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            doc = {}
        if doc.get("state") == "ready":
            return
        if doc.get("state") == "failed":
            raise MockgpuError(f"the control plane of '{state.name}' failed to start: {doc.get('error')} "
                               f"(see {state.log_file})")
        endpoint = read_endpoint(state.dir)
        if endpoint is not None and endpoint.get("pid") and not process_alive(int(endpoint["pid"])):
            raise MockgpuError(f"the control plane of '{state.name}' exited during start: {log_tail(state.log_file)}")
        time.sleep(0.02)
    raise MockgpuError(f"the nodes of '{state.name}' were not Ready within {timeout:.0f}s (see {state.log_file})")


def spawn(state: ClusterState) -> None:
    """Start the daemon detached from this process (it outlives the ``mockgpu up`` command)."""
    for name in (ENDPOINT_NAME, PID_NAME, CONTROL_PLANE_NAME):
        (state.dir / name).unlink(missing_ok=True)
    if threading.active_count() > 1 or not hasattr(os, "fork"):
        with os.fdopen(open_private(state.log_file, os.O_WRONLY | os.O_APPEND), "ab") as log:
            subprocess.Popen([sys.executable, "-m", "mockgpu.backends.embedded.daemon", str(state.dir)],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                             close_fds=True)
        return
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        return
    code = 1
    try:  # first child: new session, then fork again so the daemon is no session leader and has no parent
        os.setsid()
        if os.fork():
            os._exit(0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        log = os.open(state.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        code = run_daemon(state.dir)
    finally:
        os._exit(code)


def _answers(state: ClusterState, port: int, token: str) -> bool:
    ctx = ssl.create_default_context(cafile=str(state.cert_file))
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=2, context=ctx)
    try:
        conn.request("GET", "/readyz", headers={"Authorization": f"Bearer {token}"})
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def wait_ready(state: ClusterState, token: str, timeout: float = 30.0) -> dict:
    """The endpoint of the daemon once it answers; MockgpuError (with its last log line) if it dies."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while time.monotonic() < deadline:
        endpoint = read_endpoint(state.dir)
        if endpoint and _answers(state, int(endpoint["port"]), token):
            return endpoint
        pid_file = state.dir / PID_NAME
        if pid_file.exists():
            try:
                pid = int(pid_file.read_text() or 0)
            except ValueError:
                pid = 0
            if pid and not process_alive(pid):
                raise MockgpuError(f"the control plane of '{state.name}' exited during start: "
                                   f"{log_tail(state.log_file)} (see {state.log_file})")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    raise MockgpuError(f"the control plane of '{state.name}' did not answer within {timeout:.0f}s "
                       f"(see {state.log_file})")


def running_endpoint(state: ClusterState) -> dict | None:
    """The endpoint of the server holding the state dir, or None when none runs (a stale pid is ignored)."""
    if not state.dir.is_dir() or not lock_held(state.dir):
        return None
    return read_endpoint(state.dir) or {}


def stop(state: ClusterState, timeout: float = 10.0) -> None:
    """SIGTERM the daemon, SIGKILL it if it does not exit in time. Only a live lock holder is signalled."""
    endpoint = running_endpoint(state)
    if endpoint is None:
        return
    if endpoint.get("mode") == "thread":
        raise MockgpuError(f"cluster '{state.name}' is served inside process {endpoint.get('pid')} (a notebook or "
                           "test using EmbeddedCluster); stop it there")
    pid = int(endpoint.get("pid") or 0)
    if not pid:
        raise MockgpuError(f"cluster '{state.name}' is running but its pid is unknown; see {state.dir}")
    for sig, wait in ((signal.SIGTERM, timeout / 2), (signal.SIGKILL, timeout / 2)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not process_alive(pid) or (sig == signal.SIGKILL and not lock_held(state.dir)):
                return
            time.sleep(0.02)
    raise MockgpuError(f"could not stop the control plane of '{state.name}' (pid {pid})")


if __name__ == "__main__":
    sys.exit(run_daemon(Path(sys.argv[1])))
