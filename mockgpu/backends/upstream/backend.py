"""``UpstreamBackend``: the ``Backend`` behind ``mockgpu up/down/status --backend upstream``."""

from __future__ import annotations

import sys
from pathlib import Path

from mockgpu.backends.base import ClusterInfo, UpOptions, check_local_options
from mockgpu.backends.embedded.state import mockgpu_home
from mockgpu.backends.upstream import binaries
from mockgpu.backends.upstream.cluster import UpstreamCluster, destroy, stop
from mockgpu.backends.upstream.state import UpstreamState
from mockgpu.errors import MockgpuError


def _progress(step: str, seconds: float) -> None:
    print(f"  {step}: {seconds:.1f} s", file=sys.stderr, flush=True)


class UpstreamBackend:
    """The real kube-apiserver, etcd, kube-controller-manager and kube-scheduler (built by
    ``scripts/upstream-build``) as local processes, with mockgpu's kubelets; state under ``$MOCKGPU_HOME``."""

    name = "upstream"

    def __init__(self, home: str | Path | None = None) -> None:
        self.home = mockgpu_home(home)

    def is_available(self) -> str | None:
        return binaries.missing()

    def up(self, opts: UpOptions) -> ClusterInfo:
        check_local_options(opts)
        cluster = UpstreamCluster(opts.spec, name=opts.name, home=self.home, kubeconfig=opts.kubeconfig,
                                  scheduler_config=opts.scheduler_config, progress=_progress)
        state = cluster.state
        if opts.dry_run:
            how = "would resume" if state.exists() else "would create"
            target = opts.kubeconfig or state.default_kubeconfig
            print(f"cluster '{opts.name}' (upstream {binaries.versions()['KUBERNETES_VERSION']}): {how}; "
                  f"kubeconfig {target}")
            return ClusterInfo(opts.name, self.name, "https://127.0.0.1:<free port>", Path(target), how)
        how = "already running" if state.running() else "resumed" if state.exists() else "created"
        print(f"starting upstream {binaries.versions()['KUBERNETES_VERSION']} control plane for '{opts.name}' "
              f"({how})", file=sys.stderr, flush=True)
        try:
            cluster.start()
        except BaseException:
            if opts.retain and cluster.created:
                print(f"kept the half-created cluster in {state.dir} (--retain)", file=sys.stderr)
            raise
        return ClusterInfo(opts.name, self.name, cluster.url, cluster.kubeconfig, f"running ({how})")

    def down(self, name: str) -> None:
        state = UpstreamState.of(name, self.home)
        if not state.dir.exists() or not state.is_upstream():
            raise MockgpuError(f"no upstream cluster named '{name}' (see mockgpu status)", exit_code=2)
        stop(state)
        destroy(state)

    def list(self) -> list[ClusterInfo]:
        out: list[ClusterInfo] = []
        if not self.home.is_dir():
            return out
        for d in sorted(self.home.iterdir()):
            state = UpstreamState(d.name, d)
            if not state.exists() or not state.is_upstream():
                continue
            config = state.read_config()
            port = config.get("ports", {}).get("apiserver")
            out.append(ClusterInfo(d.name, self.name, f"https://127.0.0.1:{port}",
                                   Path(config.get("kubeconfig") or state.default_kubeconfig),
                                   "running" if state.running() else "stopped"))
        return out
