"""The kubelets' own API (the part a real kube-apiserver calls): ``GET /containerLogs/<ns>/<pod>/<container>``.

A real kube-apiserver serves ``pods/log`` by proxying to the node's kubelet at the node's InternalIP and
``status.daemonEndpoints.kubeletEndpoint.Port``. The fake kubelets of one cluster share one such server on
127.0.0.1 (every fake node's InternalIP): it answers only clients presenting a certificate signed by the
cluster CA (the API server's kubelet-client certificate), over TLS with a CA-signed serving certificate.
Logs are read from the same files the embedded API server reads (``apiserver.podlogs``), with the same
query parameters (``follow``, ``previous``, ``tailLines``, ``limitBytes``, ``sinceSeconds``/``sinceTime``,
``timestamps``). Simplified: ``/exec``, ``/attach``,
``/portForward``, ``/stats`` and ``/metrics`` are not served (404).
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from mockgpu.apimachinery.status import StatusError
from mockgpu.control.apiserver import podlogs

PodLookup = Callable[[str, str], "dict[str, Any] | None"]


class KubeletServer:
    """``KubeletServer(port, state_dir, lookup, cert=, key=, client_ca=)``; ``start()`` / ``stop()``."""

    def __init__(self, port: int, state_dir: Path, lookup: PodLookup, *, cert: Path, key: Path,
                 client_ca: Path) -> None:
        self.port, self.state_dir, self.lookup = port, Path(state_dir), lookup
        self.ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(client_ca))
        self.ssl.load_cert_chain(str(cert), str(key))
        self.ssl.verify_mode = ssl.CERT_REQUIRED
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        ns, name, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        pod = self.lookup(ns, name)
        if pod is None:
            return web.Response(status=404, text=f'pod "{name}" not found on this node')
        request = request.clone(rel_url=request.rel_url.update_query({"container": container}))
        try:
            return await podlogs.serve_log(request, self.state_dir, pod, lambda: self.lookup(ns, name))
        except StatusError as exc:  # the kubelet answers in plain text; the API server wraps it in a Status
            return web.Response(status=exc.code, text=str(exc))

    def start(self) -> KubeletServer:
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            app = web.Application()
            app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs)
            self._runner = web.AppRunner(app, access_log=None)
            try:
                loop.run_until_complete(self._runner.setup())
                site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self.ssl)
                loop.run_until_complete(site.start())
            except BaseException as exc:  # noqa: BLE001 - reported to start()
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="kubelet-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if errors:
            raise errors[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop = self._thread = None
