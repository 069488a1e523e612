"""The one cluster lifecycle every backend implements, and how callers find a backend by name.

Like kind's ``pkg/cluster``: a ``Provider`` (here ``Backend``) creates, lists and deletes clusters by name, with
options checked before any side effect (``UpOptions``, kind's ``CreateOption``s), and hands out a cluster's
kubeconfig. Everything that starts a cluster goes through it: ``mockgpu up/down/status`` (``commands/cluster.py``)
with ``Backend.up``/``down``/``list``, and the labs' helper (``widgets/labkit.py``) and tests with
``Backend.cluster(opts)``, a ``Cluster`` handle whose ``start`` is that same ``up`` path, kept by the calling process
(``owned``: it lives until the handle's ``delete``). Each backend is one folder behind this interface; what two
backends share lives in ``backends/common/``, never in another backend's folder (``tests/test_imports.py``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mockgpu.config import ClusterSpec
from mockgpu.errors import MockgpuError

# name -> "module:Class"; imported lazily so a missing optional tool never breaks another backend.
BACKENDS: dict[str, str] = {
    "embedded": "mockgpu.backends.embedded:EmbeddedBackend",
    "kind": "mockgpu.backends.kind:KindBackend",
    "kubeconfig": "mockgpu.backends.kubeconfig:KubeconfigBackend",
    "upstream": "mockgpu.backends.upstream:UpstreamBackend",
}

# The backends whose pods run on this machine under mockgpu's kubelets, in the workload sandbox
# (mockgpu.control.kubelet.sandbox); kind's and a kubeconfig's pods run in real containers elsewhere.
SANDBOXED_BACKENDS = frozenset({"embedded", "upstream"})


@dataclass(frozen=True)
class UpOptions:
    """Options for ``Backend.up`` and ``Backend.cluster``; checked before any side effect."""

    spec: ClusterSpec
    name: str  # cluster name (defaults to the spec's metadata.name)
    kubeconfig: Path | None = None  # where to write the kubeconfig (backend default when None)
    scheduler_config: Path | None = None  # overrides the spec's schedulerConfig
    dry_run: bool = False
    device_plugin: str = "mockgpu"  # or "fake-gpu-operator" (kind only)
    retain: bool = False  # keep a half-created cluster for debugging instead of cleaning up
    # A cluster owned by the calling process (a lab's, a test's): served from it where the backend can (embedded:
    # a thread), deleted by the handle's ``delete`` (and, embedded, by ``mockgpu status`` once that process is gone).
    owned: bool = False
    control_plane: bool = True  # False: the API server only (embedded; tests that play scheduler and kubelets)
    stop_grace: float | None = None  # seconds a container gets at stop (embedded kubelets; None: the kubelet's 2 s)


@dataclass(frozen=True)
class ClusterInfo:
    """One running (or stopped) cluster, as ``mockgpu status`` lists it."""

    name: str
    backend: str
    endpoint: str
    kubeconfig: Path
    state: str  # e.g. "running", "stopped"
    # Kueue's manager runs next to it and its webhooks answer (spec.kueue.enabled on a backend with ``Traits.kueue``)
    kueue: bool = False


@dataclass(frozen=True)
class Traits:
    """What a caller must know about where a backend's pods run and how its scheduler reports."""

    sandboxed: bool  # pods run on this machine under mockgpu's kubelets, in the workload sandbox
    # the scheduler's results (mockgpu.io/*-result annotations) reach a pod just after its decision, recorded from
    # the real kube-scheduler's log (common/recorder.py); the embedded scheduler writes them before it binds
    results_after_decision: bool = False
    # (image, pull policy) every workload must name: kind's kubelets run the image (the loaded mockgpu image),
    # mockgpu's kubelets run the command whatever the image says (None)
    workload_image: tuple[str, str] | None = None
    wait_factor: float = 1.0  # real containers and controllers take seconds, not milliseconds, on a loaded machine
    # Kueue (spec.kueue) can run here: it needs a real API server (CRDs, admission webhooks), so upstream and kind;
    # whether it runs in a given cluster is ``ClusterInfo.kueue``
    kueue: bool = False


class Cluster(Protocol):
    """One cluster of a backend (``Backend.cluster``): nothing happens until ``start``."""

    name: str

    @property
    def kubeconfig(self) -> Path:
        """The kubeconfig file that reaches it (written by ``start``)."""

    def start(self) -> Cluster:
        """Create the cluster, or resume it when its state exists, and return once it is ready (``wait_ready``)."""

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until the API answers and every node is Ready with its GPUs (MockgpuError after ``timeout``)."""

    def stop(self) -> None:
        """Stop serving it; its state stays, so ``start`` resumes the same cluster."""

    def delete(self) -> None:
        """Stop it and delete its state (on a handle never started: whatever an earlier run of that name left)."""

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for it."""

    def info(self) -> ClusterInfo:
        """Where it is, as ``mockgpu status`` shows it."""

    def inject_fault(self, node: str, gpu: int | str, xid: int) -> Any:
        """Inject Xid ``xid`` on GPU ``gpu`` (its index on the node, or a GPU/MIG UUID) of ``node``, in host-side
        state pods cannot write; returns the record (``backends/common/faults.FaultRecord``: node, gpu, uuid, xid,
        time). MockgpuError where the backend cannot (kind, a kubeconfig's cluster: not yet)."""

    def clear_faults(self, node: str | None = None, gpu: int | str | None = None) -> int:
        """Forget injected faults (of one GPU, one node, or every node); returns how many were removed."""

    def faults(self) -> list[Any]:
        """Every injected fault (records as ``inject_fault`` returns), oldest first."""


class Backend(Protocol):
    """What a backend does (kind's ``Provider``). Errors a user can fix are raised as MockgpuError."""

    name: str
    traits: Traits

    def is_available(self) -> str | None:
        """None when usable here; otherwise one line saying what is missing and how to fix it."""

    def cluster(self, opts: UpOptions) -> Cluster:
        """A handle on cluster ``opts.name`` (options checked here, before any side effect)."""

    def up(self, opts: UpOptions) -> ClusterInfo:
        """Create or resume the cluster and wait until it is ready; returns where it is."""

    def down(self, name: str) -> None:
        """Stop the cluster and delete its state."""

    def list(self) -> list[ClusterInfo]:
        """Clusters this backend knows about."""

    def status(self, name: str) -> ClusterInfo | None:
        """Cluster ``name`` as ``list`` shows it; None when this backend has no such cluster."""

    def kubeconfig(self, name: str) -> Path:
        """The kubeconfig of cluster ``name`` (MockgpuError when there is no such cluster)."""


def status_of(backend: Backend, name: str) -> ClusterInfo | None:
    """``Backend.status`` for backends that list their clusters cheaply."""
    return next((c for c in backend.list() if c.name == name), None)


def kubeconfig_of(backend: Backend, name: str) -> Path:
    """``Backend.kubeconfig`` from ``status``; MockgpuError naming the backend when there is no such cluster."""
    info = backend.status(name)
    if info is None:
        raise MockgpuError(f"no {backend.name} cluster named '{name}' (see mockgpu status)", exit_code=2)
    return info.kubeconfig


def check_local_options(opts: UpOptions) -> None:
    """Refuse options only a real kubelet can honour, and a missing --scheduler-config, before any side effect
    (for the backends whose kubelets are mockgpu's: embedded, upstream)."""
    if opts.device_plugin != "mockgpu":
        raise MockgpuError(f"--device-plugin {opts.device_plugin} needs a real kubelet; use --backend kind",
                           exit_code=2)
    if opts.scheduler_config is not None and not Path(opts.scheduler_config).is_file():
        raise MockgpuError(f"scheduler config {opts.scheduler_config} does not exist", exit_code=2)


def get_backend(name: str, *, home: str | Path | None = None) -> Backend:
    """The backend called ``name`` (MockgpuError listing the known ones otherwise); ``home``: where the local
    backends keep their clusters' state (default ``$MOCKGPU_HOME``; tests pin it)."""
    target = BACKENDS.get(name)
    if target is None:
        raise MockgpuError(f"unknown backend '{name}' (known: {', '.join(BACKENDS)})", exit_code=2)
    module, cls = target.split(":")
    factory = getattr(importlib.import_module(module), cls)
    backend: Backend = factory(home=home) if home is not None else factory()
    return backend
