"""The kind backend: a real multi-node Kubernetes in Docker with mockgpu's device plugin (or
run.ai's fake-gpu-operator). ``render_all(opts)`` is the dry-run output; see ``docs/kind.md``."""

from mockgpu.backends.kind.backend import KindBackend
from mockgpu.backends.kind.render import render_all

__all__ = ["KindBackend", "render_all"]
