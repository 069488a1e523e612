"""The embedded backend: a local control plane (API server + store) on 127.0.0.1, no Docker needed.

``EmbeddedBackend`` is the backend (``mockgpu up/down/status``, ``LabCluster``); ``EmbeddedCluster`` its ``Cluster``,
also the Python API tests use directly. The state-dir layout is described in ``backends/common/state.py``.
"""

from mockgpu.backends.embedded.backend import EmbeddedBackend
from mockgpu.backends.embedded.cluster import EmbeddedCluster

__all__ = ["EmbeddedBackend", "EmbeddedCluster"]
