"""``EmbeddedBackend``: the ``Backend`` behind ``mockgpu up/down/status --backend embedded``."""

from __future__ import annotations

import contextlib
from pathlib import Path

from mockgpu.backends.base import ClusterInfo, UpOptions, check_local_options
from mockgpu.backends.embedded import daemon
from mockgpu.backends.embedded.cluster import destroy, prepare, publish
from mockgpu.backends.embedded.state import ClusterState, mockgpu_home
from mockgpu.control.scheduler.config import load_scheduler_config
from mockgpu.errors import MockgpuError


def _backend_of(state: ClusterState) -> str:
    try:
        return str(state.read_config().get("backend") or "embedded")
    except MockgpuError:
        return "embedded"  # unreadable state: let the embedded backend report or clean it


class EmbeddedBackend:
    """Clusters served by a local control-plane daemon on 127.0.0.1; state under ``$MOCKGPU_HOME``."""

    name = "embedded"

    def __init__(self, home: str | Path | None = None) -> None:
        self.home = mockgpu_home(home)

    def is_available(self) -> str | None:
        return None  # pure Python: nothing to install

    def up(self, opts: UpOptions) -> ClusterInfo:
        check_local_options(opts)
        state = ClusterState(opts.name, self.home / opts.name)
        if state.exists() and _backend_of(state) != self.name:
            raise MockgpuError(f"cluster '{opts.name}' exists on the {_backend_of(state)} backend "
                               f"(mockgpu down --name {opts.name} first)", exit_code=2)
        kubeconfig = Path(opts.kubeconfig) if opts.kubeconfig else None
        if not opts.dry_run and not state.exists():  # an invalid config fails here, before anything starts
            load_scheduler_config(opts.spec, opts.scheduler_config)
        if opts.dry_run:
            target = kubeconfig or state.default_kubeconfig
            how = "would resume" if state.exists() else "would create"
            print(f"cluster '{opts.name}' (embedded): {how}; kubeconfig {target}")  # a dry run's whole output
            return ClusterInfo(opts.name, self.name, "https://127.0.0.1:<free port>", target,
                               "would resume" if state.exists() else "would create")
        config, created = prepare(state, opts.spec, kubeconfig=kubeconfig, scheduler_config=opts.scheduler_config,
                                  device_plugin=opts.device_plugin)
        how = "created"
        try:
            endpoint = daemon.running_endpoint(state)
            how = "already running" if endpoint is not None else "created" if created else "resumed"
            if endpoint is None:
                daemon.spawn(state)
                endpoint = daemon.wait_ready(state, config["token"])
            daemon.wait_control_plane(state)  # every node Ready, its device plugins registered
        except BaseException:
            if how != "already running":
                with contextlib.suppress(MockgpuError):
                    daemon.stop(state)
            if created and not opts.retain:
                destroy(state)
            raise
        port = int(endpoint["port"])
        path = publish(state, config, port)
        return ClusterInfo(opts.name, self.name, f"https://127.0.0.1:{port}", path, f"running ({how})")

    def down(self, name: str) -> None:
        state = ClusterState(name, self.home / name)
        if not state.dir.exists() or (state.exists() and _backend_of(state) != self.name):
            raise MockgpuError(f"no embedded cluster named '{name}' (see mockgpu status)", exit_code=2)
        daemon.stop(state)
        destroy(state)

    def list(self) -> list[ClusterInfo]:
        out = []
        if not self.home.is_dir():
            return out
        for d in sorted(self.home.iterdir()):
            state = ClusterState(d.name, d)
            if not state.exists():
                continue
            try:
                config = state.read_config()
            except MockgpuError:
                continue
            if config.get("backend") != "embedded":
                continue
            endpoint = daemon.running_endpoint(state)
            if endpoint is None and state.is_ephemeral():
                destroy(state)  # a lab's cluster whose kernel is gone (killed before it could clean up)
                continue
            port = (endpoint or {}).get("port") or config.get("port")
            out.append(ClusterInfo(d.name, self.name, f"https://127.0.0.1:{port}" if port else "-",
                                   Path(config.get("kubeconfig") or state.default_kubeconfig),
                                   "running" if endpoint is not None else "stopped"))
        return out
