"""The one interface every backend implements, and how the CLI finds a backend by name.

Like kind's providers: a small protocol in front, each backend in its own folder behind it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

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
    """Options for ``Backend.up``; checked before any side effect."""

    spec: ClusterSpec
    name: str  # cluster name (defaults to the spec's metadata.name)
    kubeconfig: Path | None = None  # where to write the kubeconfig (backend default when None)
    scheduler_config: Path | None = None  # overrides the spec's schedulerConfig
    dry_run: bool = False
    device_plugin: str = "mockgpu"  # or "fake-gpu-operator" (kind only)
    retain: bool = False  # keep a half-created cluster for debugging instead of cleaning up


@dataclass(frozen=True)
class ClusterInfo:
    """One running (or stopped) cluster, as ``mockgpu status`` lists it."""

    name: str
    backend: str
    endpoint: str
    kubeconfig: Path
    state: str  # e.g. "running", "stopped"


class Backend(Protocol):
    """What a backend does. Errors a user can fix are raised as MockgpuError."""

    name: str

    def is_available(self) -> str | None:
        """None when usable here; otherwise one line saying what is missing and how to fix it."""

    def up(self, opts: UpOptions) -> ClusterInfo:
        """Create or resume the cluster and wait until it is ready; returns where it is."""

    def down(self, name: str) -> None:
        """Stop the cluster and delete its state."""

    def list(self) -> list[ClusterInfo]:
        """Clusters this backend knows about."""


def check_local_options(opts: UpOptions) -> None:
    """Refuse options only a real kubelet can honour, and a missing --scheduler-config, before any side effect
    (for the backends whose kubelets are mockgpu's: embedded, upstream)."""
    if opts.device_plugin != "mockgpu":
        raise MockgpuError(f"--device-plugin {opts.device_plugin} needs a real kubelet; use --backend kind",
                           exit_code=2)
    if opts.scheduler_config is not None and not Path(opts.scheduler_config).is_file():
        raise MockgpuError(f"scheduler config {opts.scheduler_config} does not exist", exit_code=2)


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (MockgpuError listing the known ones otherwise)."""
    target = BACKENDS.get(name)
    if target is None:
        raise MockgpuError(f"unknown backend '{name}' (known: {', '.join(BACKENDS)})", exit_code=2)
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)()
