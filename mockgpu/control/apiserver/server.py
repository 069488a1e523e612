"""One cluster's API server: its store, the HTTP app on 127.0.0.1, and how it runs.

The same ``APIServer`` runs either on the caller's event loop (the daemon: ``run_forever``) or on a
background thread with its own loop (``start_background``: notebooks and tests). Either way it holds an
exclusive lock on the state dir, so two servers never share one database, and it records where it listens
in ``<state>/endpoint.json``.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import signal
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from mockgpu.config.featuregates import DEFAULT as DEFAULT_GATES
from mockgpu.config.featuregates import FeatureGates
from mockgpu.control.apiserver import fieldvalidation, limits
from mockgpu.control.apiserver.app import APIApp
from mockgpu.control.apiserver.discovery import RESOURCES
from mockgpu.control.apiserver.flowcontrolbootstrap import ensure_flowcontrol_objects
from mockgpu.control.apiserver.handlers import ResourceAPI
from mockgpu.control.apiserver.rbacbootstrap import ensure_bootstrap_policy
from mockgpu.control.apiserver.services import ensure_kubernetes_service
from mockgpu.control.apiserver.store import Store
from mockgpu.errors import MockgpuError
from mockgpu.privatefs import open_private, private_dir, write_private

log = logging.getLogger("mockgpu.apiserver")

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
DB_NAME = "store.db"
LOCK_NAME = "apiserver.lock"
ENDPOINT_NAME = "endpoint.json"

Seed = Callable[[ResourceAPI], None]


def lock_held(state_dir: Path, name: str = LOCK_NAME) -> bool:
    """Whether a live process holds the state dir's lock file ``name`` (an flock dies with its process, even on
    SIGKILL)."""
    path = Path(state_dir) / name
    if not path.exists():
        return False
    with os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND), "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


def read_endpoint(state_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((Path(state_dir) / ENDPOINT_NAME).read_text())
    except (OSError, ValueError):
        return None


class APIServer:
    """Store + HTTP app for one state dir. ``seed`` fills a fresh store, after the system namespaces exist."""

    def __init__(self, state_dir: str | Path, token: str, *, port: int = 0, seed: Seed | None = None,
                 bookmark_interval: float = 5.0, history: int = 10000, mode: str = "thread",
                 tls: tuple[Path, Path] | None = None, gates: FeatureGates = DEFAULT_GATES) -> None:
        self.state_dir = Path(state_dir)
        self.tls = tls  # (certificate, key) PEM files; plain HTTP when None
        self.gates = gates  # the cluster spec's feature gates (which gated kinds are served)
        self.mode = mode  # "daemon" or "thread": whether stopping its process stops only the server
        self.token = token
        self.port = port
        self.seed = seed
        self.bookmark_interval = bookmark_interval
        self.history = history
        self.store: Store | None = None
        self.http: APIApp | None = None
        self._runner: web.AppRunner | None = None
        self._lock_fh: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    # ---- on the current loop -----------------------------------------------------------------------------

    async def start(self) -> None:
        private_dir(self.state_dir)
        self._take_lock()
        try:
            self.store = Store(self.state_dir / DB_NAME, history=self.history)
            root_ca = Path(self.tls[0]).read_text() if self.tls else None  # the self-signed cert is the CA
            self.http = APIApp(self.store, self.state_dir, self.token, bookmark_interval=self.bookmark_interval,
                               root_ca=root_ca, gates=self.gates)
            asyncio.get_running_loop().run_in_executor(None, fieldvalidation.compile_all)
            self._bootstrap()
            self._runner = web.AppRunner(self.http.app, access_log=None, handle_signals=False, shutdown_timeout=1.0,
                                         **limits.HTTP_PARSER_LIMITS)
            await self._runner.setup()
            self.port = await self._bind(self.port)
            self.http.address = f"127.0.0.1:{self.port}"
            ensure_kubernetes_service(self.http.api, self.port)
            endpoint = {"pid": os.getpid(), "port": self.port, "url": self.url, "mode": self.mode}
            write_private(self.state_dir / ENDPOINT_NAME, json.dumps(endpoint))
            log.info("API server for %s listening on %s", self.state_dir, self.url)
        except BaseException:
            await self.stop()
            raise

    async def _bind(self, port: int) -> int:
        assert self._runner is not None
        ctx = None
        if self.tls:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
        try:
            site = web.TCPSite(self._runner, "127.0.0.1", port, ssl_context=ctx)
            await site.start()
        except OSError:
            if port == 0:
                raise
            log.warning("port %d is taken; listening on a free port instead", port)
            site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=ctx)
            await site.start()
        server = site._server  # aiohttp keeps the listening socket here
        return int(server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.store is not None:
            self.store.close()
            self.store = None
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None

    def _take_lock(self) -> None:
        fh = os.fdopen(open_private(self.state_dir / LOCK_NAME, os.O_WRONLY | os.O_APPEND), "a")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            owner = (read_endpoint(self.state_dir) or {}).get("pid", "?")
            raise MockgpuError(f"{self.state_dir} is in use by a running API server (pid {owner}); "
                               "stop it first (mockgpu down) or use another cluster name") from None
        self._lock_fh = fh

    def _bootstrap(self) -> None:
        """System namespaces; the seed only into a fresh store (a resumed cluster keeps its own objects)."""
        assert self.http is not None
        api = self.http.api
        fresh = api.store.rv == 0
        for ns in SYSTEM_NAMESPACES:
            if api.store.get("namespaces", "", ns) is None:
                api.create(RESOURCES["namespaces"], "", {"metadata": {"name": ns}})
        ensure_bootstrap_policy(api)
        ensure_flowcontrol_objects(api)
        if self.seed is not None and fresh:
            self.seed(api)

    async def run_forever(self) -> None:
        """Serve until SIGTERM or SIGINT (the daemon's main)."""
        self.mode = "daemon"
        await self.start()
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, done.set)
        try:
            await done.wait()
        finally:
            await self.stop()

    # ---- on a background thread --------------------------------------------------------------------------

    def start_background(self, timeout: float = 30.0) -> None:
        """Start on a daemon thread with its own event loop; returns once the server listens."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name=f"apiserver-{self.state_dir.name}",
                                        daemon=True)
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout)
        except BaseException:
            self._stop_loop()
            raise

    def call(self, fn: Callable[[], Any], timeout: float = 30.0) -> Any:
        """Run ``fn`` on the server's loop thread (the store is single-threaded) and return its result."""
        assert self._loop is not None, "not started with start_background()"

        async def run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def stop_background(self, timeout: float = 30.0) -> None:
        if self._loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.stop(), self._loop).result(timeout)
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(10)
        if not loop.is_running():
            loop.close()
