"""The kubelet's plugin watcher for its plugin registry directory (``plugins_registry``), as upstream's
``pkg/kubelet/pluginmanager`` does it: a socket appearing there is a plugin asking to register.

For each new socket the watcher dials it, calls ``Registration.GetInfo``, hands the answer to the handler of
the plugin's type (only ``DRAPlugin`` here), and reports the outcome with ``NotifyRegistrationStatus``
(``plugin_registered`` and the error). A socket that disappears deregisters its plugin; a socket whose file
is replaced (a restarted plugin) registers again.

Simplified: the directory is polled (default every 0.2 s) instead of watched with fsnotify; a socket that
does not answer GetInfo is tried again on the next scan, but a plugin the handler refused is tried again only
when its socket file changes (upstream's reconciler retries it every second).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import grpc

from mockgpu.control.kubelet.endpoint import go_rpc_error
from mockgpu.dra.api import pluginregistration_v1_pb2 as rpb
from mockgpu.dra.api import pluginregistration_v1_pb2_grpc as rpb_grpc

log = logging.getLogger(__name__)
DIAL_TIMEOUT = 5.0


class PluginHandler(Protocol):
    def validate_plugin(self, name: str, endpoint: str, versions: list[str]) -> None: ...

    def register_plugin(self, name: str, endpoint: str, versions: list[str]) -> None: ...

    def deregister_plugin(self, name: str, endpoint: str) -> None: ...


@dataclass
class _Registered:
    key: tuple[int, int]  # (inode, ctime_ns) of the socket file when it was registered
    type: str
    name: str
    endpoint: str
    ok: bool


class PluginWatcher:
    def __init__(self, registry_dir: Path, handlers: dict[str, PluginHandler], interval: float = 0.2) -> None:
        self.dir = Path(registry_dir)
        self.handlers = handlers
        self.interval = interval
        self.plugins: dict[str, _Registered] = {}  # socket path -> what it registered
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> PluginWatcher:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._loop, name=f"pluginwatcher-{self.dir.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        for path in list(self.plugins):
            self._deregister(path)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.scan()
            except Exception as exc:  # a racing file operation; the next scan sees the new state
                log.debug("plugin registry scan failed: %s", exc)
            self._stop.wait(self.interval)

    def scan(self) -> None:
        """One pass: register new or replaced sockets, deregister vanished ones."""
        seen: dict[str, tuple[int, int]] = {}
        for entry in os.scandir(self.dir):
            if entry.name.startswith("."):
                continue  # upstream ignores hidden files
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISSOCK(st.st_mode):
                seen[entry.path] = (st.st_ino, st.st_ctime_ns)
        for path in [p for p in self.plugins if p not in seen or self.plugins[p].key != seen[p]]:
            self._deregister(path)
        for path, key in seen.items():
            if path not in self.plugins:
                self._register(path, key)

    def _deregister(self, path: str) -> None:
        reg = self.plugins.pop(path)
        if reg.ok and reg.type in self.handlers:
            log.info("deregistering %s plugin %s (%s)", reg.type, reg.name, path)
            self.handlers[reg.type].deregister_plugin(reg.name, reg.endpoint)

    def _register(self, path: str, key: tuple[int, int]) -> None:
        with grpc.insecure_channel(f"unix://{path}") as ch:
            stub = rpb_grpc.RegistrationStub(ch)
            try:
                info = stub.GetInfo(rpb.InfoRequest(), timeout=DIAL_TIMEOUT)
            except grpc.RpcError as exc:  # not serving yet: the next scan tries again
                log.info("GetInfo of plugin socket %s failed: %s", path, go_rpc_error(exc))
                return
            versions = list(info.supported_versions)
            handler = self.handlers.get(info.type)
            error = ""
            try:
                if handler is None:
                    raise ValueError(f"no handler registered for plugin type: {info.type} at socket {path}")
                handler.validate_plugin(info.name, info.endpoint, versions)
                handler.register_plugin(info.name, info.endpoint, versions)
            except Exception as exc:
                error = f"RegisterPlugin error -- plugin registration failed with err: {exc}"
                log.warning("plugin %s at %s: %s", info.name, path, error)
            self.plugins[path] = _Registered(key, info.type, info.name, info.endpoint, not error)
            try:
                stub.NotifyRegistrationStatus(rpb.RegistrationStatus(plugin_registered=not error, error=error),
                                              timeout=DIAL_TIMEOUT)
            except grpc.RpcError as exc:
                if not error:  # the plugin refused our success: upstream logs it and carries on
                    log.warning("NotifyRegistrationStatus to %s failed: %s", path, go_rpc_error(exc))
