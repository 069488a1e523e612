"""Checks on a structurally valid spec that need knowledge beyond its shape (GPU topology indices;
the GPU catalog and MIG placement rules are checked here too once ``mockgpu.gpu`` provides them)."""

from __future__ import annotations

from mockgpu.config.clusterspec import ClusterSpec
from mockgpu.errors import ConfigError


def check_spec(spec: ClusterSpec) -> None:
    """Raise ConfigError for the first semantic problem in ``spec``."""
    seen: set[str] = set()
    for i, pool in enumerate(spec.spec.nodePools):
        base = f"spec.nodePools[{i}]"
        if pool.name in seen:
            raise ConfigError(spec.source, f"{base}.name", f"duplicate pool name '{pool.name}'")
        seen.add(pool.name)
        if pool.gpu is None:
            continue
        g, gpath = pool.gpu, f"{base}.gpu"
        numa = g.topology.numa
        if numa is not None and len(numa) != g.count:
            raise ConfigError(spec.source, f"{gpath}.topology.numa",
                              f"has {len(numa)} entries but the pool has {g.count} GPUs")
        for j, group in enumerate(g.topology.nvlink):
            for idx in group:
                if not 0 <= idx < g.count:
                    raise ConfigError(spec.source, f"{gpath}.topology.nvlink[{j}]",
                                      f"GPU index {idx} out of range 0..{g.count - 1}")
        for j, entry in enumerate(g.mig):
            if entry.devices != "all":
                for idx in entry.devices:
                    if not 0 <= idx < g.count:
                        raise ConfigError(spec.source, f"{gpath}.mig[{j}].devices",
                                          f"GPU index {idx} out of range 0..{g.count - 1}")
