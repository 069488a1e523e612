"""``EmbeddedBackend``: the ``Backend`` behind ``mockgpu up/down/status --backend embedded``."""

from __future__ import annotations

from pathlib import Path

from mockgpu.backends.base import ClusterInfo, Traits, UpOptions, check_local_options, kubeconfig_of, status_of
from mockgpu.backends.common.state import ClusterState, mockgpu_home
from mockgpu.backends.embedded import daemon
from mockgpu.backends.embedded.cluster import BACKEND, EmbeddedCluster, backend_of, destroy
from mockgpu.control.kubelet.kubelet import KubeletOptions
from mockgpu.errors import MockgpuError


class EmbeddedBackend:
    """Clusters served by a local control-plane daemon on 127.0.0.1 (or, owned, from a thread of the calling
    process); state under ``$MOCKGPU_HOME``."""

    name = BACKEND
    traits = Traits(sandboxed=True)

    def __init__(self, home: str | Path | None = None) -> None:
        self.home = mockgpu_home(home)

    def is_available(self) -> str | None:
        return None  # pure Python: nothing to install

    def cluster(self, opts: UpOptions) -> EmbeddedCluster:
        """Owned: served from this process, deleted with it; else the detached daemon ``mockgpu up`` starts."""
        check_local_options(opts)
        control = opts.control_plane or not opts.owned  # the daemon always runs the control plane
        kubelet_options = KubeletOptions(stop_grace=opts.stop_grace) if opts.stop_grace is not None else None
        return EmbeddedCluster(opts.spec, name=opts.name, home=self.home, kubeconfig=opts.kubeconfig,
                               in_process=opts.owned, delete_on_exit=opts.owned, kubelets=control, scheduler=control,
                               scheduler_config=opts.scheduler_config, kubelet_options=kubelet_options,
                               device_plugin=opts.device_plugin, retain=opts.retain)

    def up(self, opts: UpOptions) -> ClusterInfo:
        cluster = self.cluster(opts)
        state = cluster.state
        if state.exists() and backend_of(state) != self.name:  # before a dry run says what it would do
            raise MockgpuError(f"cluster '{opts.name}' exists on the {backend_of(state)} backend "
                               f"(mockgpu down --name {opts.name} first)", exit_code=2)
        if opts.dry_run:
            target = Path(opts.kubeconfig) if opts.kubeconfig else state.default_kubeconfig
            how = "would resume" if state.exists() else "would create"
            print(f"cluster '{opts.name}' (embedded): {how}; kubeconfig {target}")  # a dry run's whole output
            return ClusterInfo(opts.name, self.name, "https://127.0.0.1:<free port>", target, how)
        return cluster.start().info()

    def down(self, name: str) -> None:
        state = ClusterState(name, self.home / name)
        if not state.dir.exists() or (state.exists() and backend_of(state) != self.name):
            raise MockgpuError(f"no embedded cluster named '{name}' (see mockgpu status)", exit_code=2)
        daemon.stop(state)
        destroy(state)

    def list(self) -> list[ClusterInfo]:
        out: list[ClusterInfo] = []
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

    def status(self, name: str) -> ClusterInfo | None:
        return status_of(self, name)

    def kubeconfig(self, name: str) -> Path:
        return kubeconfig_of(self, name)
