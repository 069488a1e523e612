"""MIG layouts: check a mig-parted ``mig-devices`` map against a GPU's profiles and placements,
and place its GPU instances deterministically.

Rules (NVIDIA MIG user guide and NVML, as summarised in the project's reference ``mig.md``):

* the model must support MIG and have each named profile;
* no profile may appear more often than its ``max_count`` (this matters for ``+me`` profiles,
  whose count is capped below their number of placements);
* each instance occupies ``size`` memory slots from one of its profile's allowed start slots
  (``nvidia-smi mig -lgipp``), and instances may not overlap;
* at most ``mig_max_instances`` instances and ``compute_slices`` compute slices in all (implied by
  the placement tables for every catalog model; checked as a safety net).

Not modelled: mig-parted's rule that a ``1g...+me`` instance excludes other 1-slice compute instances
in the same *known config* (a CI-level rule; mockgpu has one CI per GI).

Placement algorithm (deterministic; NVIDIA does not document the driver's choice): instances are
ordered by memory slots, then compute slices (both descending), then profile name; each takes its
lowest free allowed start. If that greedy pass gets stuck, a backtracking search over the same order
finds a packing whenever one exists (the guide's "3g first" ordering problem cannot happen here).

GPU-instance IDs: the driver numbers placements as a binary tree over the memory slots in which
the upper half comes first. Observed: on an A100 a 3g.20gb at 0:4 gets GI 2 and one at 4:4 gets GI 1
(MIG guide ``-cgi 9,3g.20gb`` example); 1g instances at slots 4,5,6 get 7,8,9 and at 0..3 get 11..14.
This module applies that numbering to every size (DERIVED for sizes not observed). The ``Device N``
index nvidia-smi prints under a GPU is the instance's rank by GI ID. Each GI has one default compute
instance, CI 0 (mockgpu does not model several CIs per GI).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mockgpu.errors import MockgpuError
from mockgpu.gpu.catalog import GPUModel, MigProfile


class MigLayoutError(MockgpuError):
    """A MIG layout that the GPU cannot hold; the message names the GPU, the profile and why."""

    exit_code = 2


@dataclass(frozen=True)
class PlacedInstance:
    """One GPU instance of a placed layout."""

    profile: MigProfile
    ordinal: int  # n in "<profile> #n", 1-based, in placement order
    start: int
    size: int
    gi_id: int
    ci_id: int
    mig_index: int  # "Device N" under its GPU in nvidia-smi -L

    @property
    def label(self) -> str:
        return f"{self.profile.name} #{self.ordinal}"


def gi_id_for(memory_slots: int, start: int, size: int) -> int:
    """GPU-instance ID the driver gives the placement ``start:size`` (see module docstring)."""
    if size >= memory_slots:
        return 0
    base = memory_slots // size - 1
    return base + ((start + memory_slots // 2) % memory_slots) // size


def _slots(start: int, size: int) -> str:
    return f"slot {start}" if size == 1 else f"slots {start}-{start + size - 1}"


def _order(model: GPUModel, layout: Mapping[str, int]) -> list[tuple[MigProfile, int]]:
    profiles = [model.profile(name) for name, n in layout.items() if n > 0]
    profiles.sort(key=lambda p: (-p.memory_slots, -p.sm_slices, p.name))
    out: list[tuple[MigProfile, int]] = []
    for p in profiles:
        out.extend((p, k + 1) for k in range(layout[p.name]))
    return out


def _fits(taken: list[int | None], start: int, size: int) -> bool:
    return start + size <= len(taken) and all(t is None for t in taken[start:start + size])


def _search(items: list[tuple[MigProfile, int]], taken: list[int | None], i: int, starts: list[int]) -> bool:
    if i == len(items):
        return True
    p = items[i][0]
    for start, size in p.placements:
        if _fits(taken, start, size):
            taken[start:start + size] = [i] * size
            starts.append(start)
            if _search(items, taken, i + 1, starts):
                return True
            starts.pop()
            taken[start:start + size] = [None] * size
    return False


def _stuck_message(model: GPUModel, items: list[tuple[MigProfile, int]]) -> str:
    """Explain where the greedy pass gets stuck: which instance, and who holds its slots."""
    taken: list[int | None] = [None] * model.memory_slots
    where: list[int] = []
    for i, (p, n) in enumerate(items):
        free = [s for s, z in p.placements if _fits(taken, s, z)]
        if not free:
            blockers = sorted({t for s, z in p.placements for t in taken[s:s + z] if t is not None})
            held = "; ".join(
                f"{_slots(where[b], items[b][0].placements[0][1])} taken by {items[b][0].name} #{items[b][1]}"
                for b in blockers)
            return f"cannot place {p.name} #{n}: no free placement ({held})"
        size = dict(p.placements)[free[0]]
        taken[free[0]:free[0] + size] = [i] * size
        where.append(free[0])
    return "no packing of these instances fits the memory slots"  # pragma: no cover - greedy fails first


def place_layout(model: GPUModel, layout: Mapping[str, int], gpu_label: str = "GPU") -> tuple[PlacedInstance, ...]:
    """Validate ``layout`` (profile name -> count) for ``model`` and place it; MigLayoutError if impossible.

    ``gpu_label`` (e.g. "GPU 1") starts every error message, followed by the model key.
    """
    who = f"{gpu_label} ({model.key})"
    if not model.mig_supported:
        raise MigLayoutError(f"{who}: MIG is not supported on this model")
    try:
        items = _order(model, layout)
    except MockgpuError as exc:
        raise MigLayoutError(f"{who}: {str(exc).removeprefix(model.key + ' has ')}") from None
    for name, n in layout.items():
        p = model.profile(name)
        if p.max_count < n <= len(p.placements):
            raise MigLayoutError(f"{who}: at most {p.max_count} {name} per GPU, the layout asks for {n}")
    starts: list[int] = []
    if not _search(items, [None] * model.memory_slots, 0, starts):
        raise MigLayoutError(f"{who}: {_stuck_message(model, items)}")
    if len(items) > model.mig_max_instances:
        raise MigLayoutError(f"{who}: at most {model.mig_max_instances} MIG instances per GPU, "
                             f"the layout asks for {len(items)}")
    slices = sum(p.sm_slices for p, _ in items)
    if slices > model.compute_slices:
        raise MigLayoutError(f"{who}: the layout needs {slices} compute slices, the GPU has {model.compute_slices}")
    placed = []
    for (p, n), start in zip(items, starts, strict=True):
        size = dict(p.placements)[start]
        placed.append((gi_id_for(model.memory_slots, start, size), p, n, start, size))
    by_gi = sorted(placed, key=lambda t: t[0])
    return tuple(
        PlacedInstance(profile=p, ordinal=n, start=start, size=size, gi_id=gi, ci_id=0, mig_index=k)
        for k, (gi, p, n, start, size) in enumerate(by_gi)
    )
