"""The cluster spec a backend starts from: a path, a parsed ``ClusterSpec``, or none (an empty cluster).

Like kind's ``CreateWithConfigFile`` / ``CreateWithRawConfig``: one resolver, so every backend and the CLI read
a spec the same way (``mockgpu.config.load_spec`` validates it, with the field path of any problem).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mockgpu.config import ClusterSpec, load_spec
from mockgpu.config.clusterspec import parse_spec

EMPTY_SPEC: dict[str, Any] = {"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec",
                              "metadata": {"name": "mockgpu"}, "spec": {"nodePools": []}}


def resolve_spec(spec: str | Path | ClusterSpec | None) -> ClusterSpec:
    """``spec`` as a ``ClusterSpec``: loaded from a file, as given, or the empty spec (no nodes) for None."""
    if spec is None:
        return parse_spec(EMPTY_SPEC)
    if isinstance(spec, ClusterSpec):
        return spec
    return load_spec(spec)
