"""The embedded backend: a local control plane (API server + store) on 127.0.0.1, no Docker needed.

``EmbeddedBackend`` serves ``mockgpu up/down/status``; ``EmbeddedCluster`` is the Python API for
notebooks and tests. The state-dir layout is described in ``state``.
"""

from mockgpu.backends.embedded.backend import EmbeddedBackend
from mockgpu.backends.embedded.cluster import EmbeddedCluster
from mockgpu.backends.embedded.state import ClusterState, mockgpu_home

__all__ = ["ClusterState", "EmbeddedBackend", "EmbeddedCluster", "mockgpu_home"]
