"""``KindCluster``: the kind backend's ``Cluster`` (``backends/base.py``).

``start`` runs ``KindBackend.create`` (the steps of ``mockgpu up --backend kind``). Owned by the calling process (a
lab on ``MOCKGPU_BACKEND=kind``), it also follows kube-scheduler's log (``schedresults``) in threads of that process, so
the pods carry the real scheduler's results as on the other backends, until ``stop`` or ``delete``. kind clusters
cannot be stopped and resumed here: ``stop`` only ends that following; ``delete`` is ``mockgpu down``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from mockgpu.backends.base import ClusterInfo, UpOptions
from mockgpu.backends.kind.faults import KindFaults
from mockgpu.backends.kind.schedresults import SchedulerResults
from mockgpu.control.scheduler.config import load_scheduler_config
from mockgpu.errors import MockgpuError


class _KindSteps(Protocol):
    """What ``KindCluster`` needs of ``KindBackend`` (which imports this module, so it is not imported here)."""

    def is_available(self) -> str | None: ...
    def create(self, opts: UpOptions) -> ClusterInfo: ...
    def down(self, name: str) -> None: ...
    def cluster_names(self) -> list[str]: ...
    def kubeconfig_path(self, opts: UpOptions) -> Path: ...


class KindCluster:
    """Cluster ``opts.name`` of a ``KindBackend``."""

    def __init__(self, backend: _KindSteps, opts: UpOptions) -> None:
        self.backend, self.opts, self.name = backend, opts, opts.name
        self.results: SchedulerResults | None = None  # owned: kube-scheduler's results onto the pods
        self._info: ClusterInfo | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.backend.kubeconfig_path(self.opts)

    def start(self) -> KindCluster:
        self._info = self.backend.create(self.opts)
        if self.opts.owned:
            config = load_scheduler_config(self.opts.spec, self.opts.scheduler_config)
            weights = {name: p.score_weights() for name, p in config.profiles.items()}
            self.results = SchedulerResults(self.api_client(), weights).start()
        return self

    def wait_ready(self, timeout: float | None = None) -> None:
        """``create`` returns once every GPU node advertises its GPUs (``common/waitgpus.py``): nothing more."""

    def stop(self) -> None:
        if self.results is not None:
            self.results.stop()
            self.results = None

    def delete(self) -> None:
        self.stop()
        if self.backend.is_available() is None and self.name in self.backend.cluster_names():
            self.backend.down(self.name)

    def api_client(self) -> Any:
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig), context=f"kind-{self.name}")

    def info(self) -> ClusterInfo:
        return self._info or ClusterInfo(self.name, "kind", "", self.kubeconfig, "stopped")

    # Faults: written inside the kind nodes, beside /var/lib/mockgpu/driver (backends/kind/faults.py)
    def _faults(self) -> KindFaults:
        runner = getattr(self.backend, "runner", None)
        if runner is None:
            raise MockgpuError("fault injection on kind needs the kind backend's runner", exit_code=2)
        return KindFaults(runner, self.opts.spec, self.name)

    def inject_fault(self, node: str, gpu: int | str, xid: int) -> Any:
        return self._faults().inject(node, gpu, xid)

    def clear_faults(self, node: str | None = None, gpu: int | str | None = None) -> int:
        return self._faults().clear(node, gpu)

    def faults(self) -> list[Any]:
        return self._faults().list()
