"""Checks on a structurally valid spec that need knowledge beyond its shape: GPU topology indices,
the GPU catalog (models) and MIG placement rules (``mockgpu.gpu.mig``), the NVIDIA device
plugin's ``migStrategy: single`` rule, which GPUs the DRA driver manages (``management``, ``dra``), and the
feature gates as v1.37.2's ``--feature-gates`` checks them (``featuregates``)."""

from __future__ import annotations

from mockgpu.config import featuregates
from mockgpu.config.specmodel import ClusterSpec, GPUSpec
from mockgpu.errors import ConfigError, MockgpuError
from mockgpu.gpu.catalog import GPUModel, get_model
from mockgpu.gpu.mig import place_layout


def check_spec(spec: ClusterSpec) -> None:
    """Raise ConfigError for the first semantic problem in ``spec``."""
    problems = featuregates.errors(spec.spec.featureGates)
    if problems:
        raise ConfigError(spec.source, "spec.featureGates", "; ".join(problems))
    seen: set[str] = set()
    for i, pool in enumerate(spec.spec.nodePools):
        base = f"spec.nodePools[{i}]"
        if pool.name in seen:
            raise ConfigError(spec.source, f"{base}.name", f"duplicate pool name '{pool.name}'")
        seen.add(pool.name)
        if pool.gpu is None:
            continue
        g, gpath = pool.gpu, f"{base}.gpu"
        _check_topology(spec.source, g, gpath)
        try:
            model = get_model(g.model)
        except MockgpuError as exc:
            raise ConfigError(spec.source, f"{gpath}.model", str(exc)) from None
        _check_management(spec.source, g, gpath)
        _check_mig(spec.source, g, gpath, model)


def _check_management(source: str, g: GPUSpec, gpath: str) -> None:
    """``dra.gpus`` only with ``management: both``, naming some but not all GPUs, each once; no static MIG
    layout on a DRA GPU (the driver publishes every MIG placement, made on demand)."""
    if g.management != "both":
        if g.dra is not None:
            raise ConfigError(source, f"{gpath}.dra", f"only allowed with management 'both' (management is "
                                                      f"'{g.management}')")
    else:
        if g.dra is None:
            raise ConfigError(source, f"{gpath}.dra", "required with management 'both': "
                                                      "list the GPUs the DRA driver manages, e.g. {gpus: [0, 1]}")
        idx = g.dra.gpus
        for j, i in enumerate(idx):
            if not 0 <= i < g.count:
                raise ConfigError(source, f"{gpath}.dra.gpus[{j}]", f"GPU index {i} out of range 0..{g.count - 1}")
            if i in idx[:j]:
                raise ConfigError(source, f"{gpath}.dra.gpus[{j}]", f"duplicate GPU index {i}")
        if not idx:
            raise ConfigError(source, f"{gpath}.dra.gpus", "is empty; use management 'devicePlugin'")
        if len(idx) == g.count:
            raise ConfigError(source, f"{gpath}.dra.gpus", "names every GPU; use management 'dra'")
    for i in g.dra_gpus():
        if g.mig_layout_of(i) is not None:
            raise ConfigError(source, f"{gpath}.mig[{_entry_for(g, i)}]",
                              f"GPU {i} is managed by the DRA driver, which publishes every MIG placement as a "
                              "device and needs no MIG layout; enable MIG only on device plugin GPUs")


def _check_topology(source: str, g: GPUSpec, gpath: str) -> None:
    numa = g.topology.numa
    if numa is not None and len(numa) != g.count:
        raise ConfigError(source, f"{gpath}.topology.numa", f"has {len(numa)} entries but the pool has {g.count} GPUs")
    for j, group in enumerate(g.topology.nvlink):
        for idx in group:
            if not 0 <= idx < g.count:
                raise ConfigError(source, f"{gpath}.topology.nvlink[{j}]",
                                  f"GPU index {idx} out of range 0..{g.count - 1}")
    for j, entry in enumerate(g.mig):
        if entry.devices != "all":
            for idx in entry.devices:
                if not 0 <= idx < g.count:
                    raise ConfigError(source, f"{gpath}.mig[{j}].devices",
                                      f"GPU index {idx} out of range 0..{g.count - 1}")


def _entry_for(g: GPUSpec, index: int) -> int:
    """Index of the last ``mig`` entry that applies to GPU ``index`` (later entries win, as in mig-parted)."""
    return max(j for j, e in enumerate(g.mig) if e.devices == "all" or index in e.devices)


def _check_mig(source: str, g: GPUSpec, gpath: str, model: GPUModel) -> None:
    layouts: dict[int, dict[str, int] | None] = {}
    for idx in g.device_plugin_gpus():
        layout = g.mig_layout_of(idx)
        layouts[idx] = layout
        if layout is None:
            continue
        try:
            place_layout(model, layout, f"GPU {idx}")
        except MockgpuError as exc:
            raise ConfigError(source, f"{gpath}.mig[{_entry_for(g, idx)}]", str(exc)) from None
    if g.devicePluginConfig.flags.migStrategy == "single":
        _check_single(source, gpath, layouts)


def _check_single(source: str, gpath: str, layouts: dict[int, dict[str, int] | None]) -> None:
    """NVIDIA device plugin, migStrategy single: MIG devices are advertised as ``nvidia.com/gpu`` and
    all GPUs of the node are assumed to be split into identical profiles. mockgpu therefore accepts
    either no MIG at all (the plugin then advertises whole GPUs) or every GPU sliced, all instances
    of one profile."""
    sliced = {i: sorted(n for n, c in lay.items() if c > 0) for i, lay in layouts.items() if lay is not None}
    if not sliced:
        return
    where = f"{gpath}.devicePluginConfig.flags.migStrategy"
    rule = "migStrategy 'single' needs every GPU of the node sliced into instances of one MIG profile"
    unsliced = [i for i in layouts if i not in sliced]
    if unsliced:
        raise ConfigError(source, where, f"{rule}; GPU {unsliced[0]} has MIG disabled (use 'mixed')")
    profiles = sorted({p for ps in sliced.values() for p in ps})
    if len(profiles) > 1:
        per_gpu = "; ".join(f"GPU {i}: {', '.join(ps)}" for i, ps in sliced.items())
        raise ConfigError(source, where, f"{rule}; found {', '.join(profiles)} ({per_gpu}) (use 'mixed')")
