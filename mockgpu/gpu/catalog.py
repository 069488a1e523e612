"""The GPU catalog: models, their memory and SMs, and their MIG profiles and placements.

The numbers live in ``mockgpu/gpu/data/gpus.json``, derived from the project's research reference
(``mig-profiles.json``) with its attribution. Where the reference has no value the JSON keeps
``null`` and says how mockgpu fills the gap (``id_assumed``, ``sm_count_assumed``,
``memory_mib_source``); :class:`MigProfile` exposes whether a value was observed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from mockgpu.errors import MockgpuError


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile as ``nvidia-smi mig -lgip`` / ``-lgipp`` list it."""

    name: str  # "1g.10gb"
    id: int  # nvidia-smi GI profile ID (observed, or assumed: see id_observed)
    id_observed: bool
    memory_mib: int  # instance memory; see memory_mib_source when it is derived
    memory_mib_source: str
    sm_slices: int
    sm_count: int
    sm_count_observed: bool
    memory_slots: int
    max_count: int
    placements: tuple[tuple[int, int], ...]  # (start, size) in memory slots
    placements_source: str
    engines: tuple[int, int, int, int] = (0, 0, 0, 0)  # copy engines, NVDEC, JPEG, OFA (MIG guide tables)

    @property
    def starts(self) -> tuple[int, ...]:
        return tuple(s for s, _ in self.placements)


@dataclass(frozen=True)
class GPUModel:
    """One GPU model of the catalog."""

    key: str  # "A100-SXM4-80GB"
    product_name: str  # as nvidia-smi prints it
    memory_mib: int
    sm_count: int
    tdp_w: int
    compute_capability: tuple[int, int]
    mig_supported: bool
    mig_max_instances: int
    memory_slots: int
    compute_slices: int
    profiles: tuple[MigProfile, ...]
    aliases: tuple[str, ...] = ()

    def profile(self, name: str) -> MigProfile:
        """The MIG profile called ``name``; MockgpuError naming this model's profiles otherwise."""
        for p in self.profiles:
            if p.name == name:
                return p
        if not self.mig_supported:
            raise MockgpuError(f"{self.key} does not support MIG")
        known = ", ".join(p.name for p in self.profiles)
        raise MockgpuError(f"{self.key} has no MIG profile '{name}' (profiles: {known})")


def _profile(d: dict[str, Any]) -> MigProfile:
    return MigProfile(
        name=d["name"],
        id=d["id"] if d["id"] is not None else d["id_assumed"],
        id_observed=d["id"] is not None,
        memory_mib=d["memory_mib"],
        memory_mib_source=d["memory_mib_source"],
        sm_slices=d["sm_slices"],
        sm_count=d["sm_count"] if d["sm_count"] is not None else d["sm_count_assumed"],
        sm_count_observed=d["sm_count"] is not None,
        memory_slots=d["memory_slots"],
        max_count=d["max_count"],
        placements=tuple((s, z) for s, z in d["placements"]),
        placements_source=d["placements_source"],
        engines=tuple(d["engines"][k] for k in ("copy_engines", "nvdec", "jpeg", "ofa")),
    )


@cache
def _catalog() -> dict[str, GPUModel]:
    raw = json.loads(resources.files("mockgpu.gpu.data").joinpath("gpus.json").read_text())
    out: dict[str, GPUModel] = {}
    for key, m in raw["models"].items():
        out[key] = GPUModel(
            key=key, product_name=m["product_name"], memory_mib=m["memory_mib"], sm_count=m["sm_count"],
            tdp_w=m["tdp_w"], compute_capability=tuple(m["compute_capability"]), mig_supported=m["mig_supported"],
            mig_max_instances=m["mig_max_instances"], memory_slots=m["memory_slots"],
            compute_slices=m["compute_slices"], profiles=tuple(_profile(p) for p in m["profiles"]),
            aliases=tuple(m.get("aliases", ())),
        )
    return out


def models() -> tuple[str, ...]:
    """The catalog keys, in catalog order."""
    return tuple(_catalog())


def get_model(key: str) -> GPUModel:
    """The model with catalog key (or alias, or nvidia-smi product name) ``key``.

    Raises MockgpuError listing the known models.
    """
    cat = _catalog()
    if key in cat:
        return cat[key]
    for m in cat.values():
        if key in m.aliases or key == m.product_name:
            return m
    raise MockgpuError(f"unknown GPU model '{key}' (known models: {', '.join(cat)})")
