"""``UpstreamBackend``: the ``Backend`` behind ``mockgpu up/down/status --backend upstream``."""

from __future__ import annotations

import sys
from pathlib import Path

from mockgpu.backends.base import ClusterInfo, Traits, UpOptions, check_local_options, kubeconfig_of, status_of
from mockgpu.backends.common.state import mockgpu_home
from mockgpu.backends.upstream import binaries
from mockgpu.backends.upstream.cluster import UpstreamCluster, destroy, stop
from mockgpu.backends.upstream.state import BACKEND, UpstreamState
from mockgpu.errors import MockgpuError


def _progress(step: str, seconds: float) -> None:
    print(f"  {step}: {seconds:.1f} s", file=sys.stderr, flush=True)


class UpstreamBackend:
    """The real kube-apiserver, etcd, kube-controller-manager and kube-scheduler (built by
    ``scripts/upstream-build``) as local processes, with mockgpu's kubelets; state under ``$MOCKGPU_HOME``."""

    name = BACKEND
    # the real kube-scheduler's results reach the pods from its log (common/recorder.py, run by the supervisor)
    traits = Traits(sandboxed=True, results_after_decision=True, kueue=True)

    def __init__(self, home: str | Path | None = None) -> None:
        self.home = mockgpu_home(home)

    def is_available(self) -> str | None:
        return binaries.missing()

    def cluster(self, opts: UpOptions) -> UpstreamCluster:
        """The supervisor always runs detached; an owned cluster is the same, deleted by the handle's ``delete``.
        Simplified: ``control_plane=False`` and ``stop_grace`` are not offered (the real control plane always runs
        its scheduler and controllers; the supervisor's kubelets keep their grace)."""
        check_local_options(opts)
        if not opts.control_plane:
            raise MockgpuError("the upstream backend always runs its control plane (control_plane=False is "
                               "embedded only)", exit_code=2)
        return UpstreamCluster(opts.spec, name=opts.name, home=self.home, kubeconfig=opts.kubeconfig,
                               scheduler_config=opts.scheduler_config, retain=opts.retain,
                               progress=None if opts.owned else _progress)

    def up(self, opts: UpOptions) -> ClusterInfo:
        cluster = self.cluster(opts)
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
        return cluster.info()

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
            running = state.running()
            out.append(ClusterInfo(d.name, self.name, f"https://127.0.0.1:{port}",
                                   Path(config.get("kubeconfig") or state.default_kubeconfig),
                                   "running" if running else "stopped",
                                   kueue=running and "kueuePorts" in config and state.load_spec().spec.kueue.enabled))
        return out

    def status(self, name: str) -> ClusterInfo | None:
        return status_of(self, name)

    def kubeconfig(self, name: str) -> Path:
        return kubeconfig_of(self, name)
