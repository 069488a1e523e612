"""Which devices a process sees: NVIDIA_VISIBLE_DEVICES (what the container was given), then
CUDA_VISIBLE_DEVICES (what CUDA enumerates), renumbered from 0.

NVIDIA_VISIBLE_DEVICES, as libnvidia-container's ``select_devices`` reads it: a comma list of
``all``, integer GPU indices, full ``GPU-`` UUIDs, full ``MIG-`` UUIDs, ``<gpu>:<mig>`` indices and
PCI bus ids; anything else is "unknown device" (the container would not start: here a
MockgpuError). ``none``, ``void`` and the empty string give no GPU. **Simplification:** when the
variable is unset, the process is taken to be on the host and sees every device of the node (a
real container without it gets no GPU). Replica suffixes ``::n`` are ignored.

CUDA then enumerates, in GPU index order, each given GPU without MIG, or each given MIG instance of
a MIG-enabled GPU (one per GPU instance, as CUDA does from R470 when the variable is unset).
CUDA_VISIBLE_DEVICES picks from that list by index, ``GPU-`` UUID or unique prefix, ``MIG-`` UUID
or unique prefix, or legacy ``MIG-GPU-<uuid>/<gi>/<ci>``; the first invalid or repeated entry ends
the list (``0,2,-1,1`` gives 0 and 2); empty means no device. A ``GPU-`` UUID of a MIG-enabled GPU
is invalid (CUDA enumerates its MIG devices, not the GPU). Real ``nvidia-smi`` ignores
CUDA_VISIBLE_DEVICES, so it uses only :func:`container_gpus`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mockgpu.errors import MockgpuError
from mockgpu.gpu.inventory import MigInstance, NodeInventory, PhysicalGPU


@dataclass(frozen=True)
class GivenGPU:
    """A physical GPU in the container, with the MIG instances the container was given on it."""

    gpu: PhysicalGPU
    mig: tuple[MigInstance, ...]


@dataclass(frozen=True)
class CudaDevice:
    """One device as CUDA enumerates it for this process (``ordinal`` counts from 0)."""

    ordinal: int
    uuid: str
    gpu: PhysicalGPU
    mig: MigInstance | None

    @property
    def memory_mib(self) -> int:
        return self.mig.memory_mib if self.mig else self.gpu.memory_mib

    @property
    def sm_count(self) -> int:
        return self.mig.sm_count if self.mig else self.gpu.sm_count

    @property
    def name(self) -> str:
        return f"{self.gpu.product_name} MIG {self.mig.profile}" if self.mig else self.gpu.product_name


def _select(inv: NodeInventory, token: str) -> tuple[PhysicalGPU, MigInstance | None]:
    tok = token.split("::", 1)[0]
    for g in inv.gpus:
        if tok in (str(g.index), g.uuid) or tok.upper() in (g.pci_bus_id, g.pci_bus_id[4:]):
            return g, None
        for m in g.mig:
            if tok in (m.uuid, f"{g.index}:{m.mig_index}"):
                return g, m
    raise MockgpuError(f"nvidia-container-cli: device error: {token}: unknown device")


def container_gpus(inv: NodeInventory, env: Mapping[str, str]) -> list[GivenGPU]:
    """The GPUs (and MIG instances) the process's container was given, in GPU index order."""
    value = env.get("NVIDIA_VISIBLE_DEVICES")
    if value is None:
        return [GivenGPU(g, g.mig) for g in inv.gpus]
    tokens = [t.strip() for t in value.split(",") if t.strip()]
    if not tokens or tokens[0] in ("none", "void"):
        return []
    if "all" in tokens:
        return [GivenGPU(g, g.mig) for g in inv.gpus]
    whole: set[int] = set()
    migs: dict[int, set[str]] = {}
    for t in tokens:
        g, m = _select(inv, t)
        if m is None:
            whole.add(g.index)
        else:
            migs.setdefault(g.index, set()).add(m.uuid)
    out = []
    for g in inv.gpus:
        if g.index in whole:
            out.append(GivenGPU(g, g.mig))
        elif g.index in migs:
            out.append(GivenGPU(g, tuple(m for m in g.mig if m.uuid in migs[g.index])))
    return out


def _enumerate(given: list[GivenGPU]) -> list[tuple[PhysicalGPU, MigInstance | None]]:
    out: list[tuple[PhysicalGPU, MigInstance | None]] = []
    for gg in given:
        if gg.gpu.mig:
            out.extend((gg.gpu, m) for m in sorted(gg.mig, key=lambda m: m.mig_index))
        else:
            out.append((gg.gpu, None))
    return out


def _match(devs: list[tuple[PhysicalGPU, MigInstance | None]], tok: str) -> int | None:
    if tok.lstrip("+").isdigit():
        i = int(tok)
        return i if i < len(devs) else None
    if tok.startswith("MIG-GPU-"):
        parent, _, rest = tok[4:].partition("/")
        for k, (g, m) in enumerate(devs):
            if m and g.uuid == parent and rest == f"{m.gi_id}/{m.ci_id}":
                return k
        return None
    if tok.startswith(("GPU-", "MIG-")):
        hits = [k for k, (g, m) in enumerate(devs) if (m.uuid if m else g.uuid).startswith(tok)]
        return hits[0] if len(hits) == 1 else None
    return None


def cuda_devices(inv: NodeInventory, env: Mapping[str, str]) -> list[CudaDevice]:
    """The devices CUDA shows this process, renumbered from 0."""
    devs = _enumerate(container_gpus(inv, env))
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        picked: list[int] = []
        for tok in (t.strip() for t in cvd.split(",")):
            k = _match(devs, tok) if tok else None
            if k is None or k in picked:
                break
            picked.append(k)
        devs = [devs[k] for k in picked]
    return [CudaDevice(i, (m.uuid if m else g.uuid), g, m) for i, (g, m) in enumerate(devs)]
