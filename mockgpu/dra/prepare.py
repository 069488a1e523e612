"""Preparing a claim's devices on the node: the gRPC-free core of NodePrepareResources and
NodeUnprepareResources, shaped like upstream's kubeletplugin helper and the dra-example-driver.

For each claim the kubelet names, ``Preparer.prepare`` fetches the ResourceClaim (through ``get_claim``,
the Kubernetes API in the driver process), checks it is allocated and still has the UID the kubelet saw,
takes the allocation results whose driver is ``gpu.mockgpu.io`` and whose pool is this node, and writes a
CDI spec (JSON) for the claim into the node's CDI directory: one file per claim UID,
``gpu.mockgpu.io-gpu_<claim uid>.json``, kind ``gpu.mockgpu.io/gpu``, with one CDI device per claim
request, ``<claim uid>-<request>`` (a subrequest's ``/`` becomes ``.``), whose ``containerEdits.env`` is
``NVIDIA_VISIBLE_DEVICES=<UUIDs of that request's devices, comma-separated>`` and whose annotation
``gpu.mockgpu.io/devices`` names the devices (``dynamicmig`` reads it back); the spec's common edits mount
the node's fake driver directory, as the device plugin's Allocate does. Each result is returned as a
``PreparedDevice`` with its request, pool, device and the CDI device ID
``gpu.mockgpu.io/gpu=<claim uid>-<request>``; the kubelet gives a container the CDI devices of the claims
(and requests) it names. Preparing again rewrites the same file (idempotent); unpreparing removes it, and
a missing file is no error.

As upstream's helper does, a claim that cannot be retrieved (not found, not allocated, replaced by one with
another UID) fails the whole call (``RetrieveError``: the gRPC layer returns an error status); a claim that
cannot be prepared (a device this node does not publish, a CDI file that cannot be written) fails only that
claim (its ``error`` field).

Simplified: a claim's opaque device ``config`` is not read (the driver has no parameters); ``adminAccess``
results are prepared like any other; prepared claims are not checkpointed (the CDI files are the state).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mockgpu.dra.slices import DRIVER
from mockgpu.gpu.driver import CONTAINER_DRIVER_DIR, ENV_DRIVER_DIR
from mockgpu.gpu.faults import CONTAINER_FAULTS_DIR, faults_dir_for

CDI_VERSION = "0.6.0"  # the first with device annotations
CDI_KIND = f"{DRIVER}/gpu"
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"


class RetrieveError(Exception):
    """A claim that cannot be fetched or is not usable: fails the whole NodePrepareResources call."""


class PrepareError(Exception):
    """A claim that cannot be prepared: reported in that claim's ``error`` field."""


@dataclass(frozen=True)
class ClaimRef:
    namespace: str
    uid: str
    name: str


@dataclass(frozen=True)
class PreparedDevice:
    request_names: tuple[str, ...]
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...]


@dataclass
class PrepareResult:
    devices: list[PreparedDevice] = field(default_factory=list)
    error: str = ""


def cdi_device_name(claim_uid: str, request: str) -> str:
    return f"{claim_uid}-{request.replace('/', '.')}"


def cdi_file_name(claim_uid: str) -> str:
    return f"{DRIVER}-gpu_{claim_uid}.json"


def our_results(claim: dict[str, Any], node: str) -> list[dict[str, Any]]:
    """The allocation results of ``claim`` that this node's driver prepares (driver and pool match)."""
    alloc = (claim.get("status") or {}).get("allocation") or {}
    results = (alloc.get("devices") or {}).get("results") or []
    return [r for r in results if r.get("driver") == DRIVER and r.get("pool") == node]


def cdi_spec(claim_uid: str, results: list[dict[str, Any]], uuids: dict[str, str],
             driver_dir: Path | None = None) -> dict[str, Any]:
    """The CDI spec of one claim; PrepareError if a result names a device this node does not publish.

    With ``driver_dir``, the spec's common edits also mount the node's fake driver directory and point
    ``MOCKGPU_DRIVER_DIR`` at it, and its sibling with the injected faults read-only, as the device plugin's
    Allocate does (the workloads' fake CUDA and nvidia-smi read both; mockgpu.gpu.faults)."""
    by_request: dict[str, list[str]] = {}
    for r in results:
        if r["device"] not in uuids:
            raise PrepareError(f"device {r['device']} of pool {r['pool']} is not published by driver {DRIVER}")
        names = by_request.setdefault(r["request"], [])
        if r["device"] not in names:
            names.append(r["device"])
    common: dict[str, Any] = {}
    if driver_dir is not None:
        common = {"env": [f"{ENV_DRIVER_DIR}={CONTAINER_DRIVER_DIR}"],
                  "mounts": [{"hostPath": str(driver_dir), "containerPath": CONTAINER_DRIVER_DIR,
                              "options": ["rw", "bind"]},
                             {"hostPath": str(faults_dir_for(driver_dir)), "containerPath": CONTAINER_FAULTS_DIR,
                              "options": ["ro", "bind"]}]}
    return {
        "cdiVersion": CDI_VERSION,
        "kind": CDI_KIND,
        "devices": [{"name": cdi_device_name(claim_uid, req),
                     "annotations": {f"{DRIVER}/devices": ",".join(names)},
                     "containerEdits": {"env": [
                         f"{VISIBLE_DEVICES}={','.join(dict.fromkeys(uuids[n] for n in names))}"]}}
                    for req, names in by_request.items()],
        "containerEdits": common,
    }


class CDIDir:
    """The node's CDI spec directory (what a container runtime reads; the embedded kubelet reads it too)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def file(self, claim_uid: str) -> Path:
        return self.path / cdi_file_name(claim_uid)

    def write(self, claim_uid: str, spec: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        target = self.file(claim_uid)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(spec, indent=2) + "\n")
        os.replace(tmp, target)  # a reader never sees half a spec

    def remove(self, claim_uid: str) -> None:
        self.file(claim_uid).unlink(missing_ok=True)


class Preparer:
    """Prepares claims of one node. ``uuids``: device name -> UUID of every device the node publishes;
    ``get_claim(namespace, name)`` returns the ResourceClaim as a dict or raises (its message is reported)."""

    def __init__(self, node: str, uuids: dict[str, str], cdi: CDIDir,
                 get_claim: Callable[[str, str], dict[str, Any]], *, driver_dir: Path | None = None,
                 on_change: Callable[[], None] | None = None) -> None:
        """``driver_dir``: the node's fake driver directory, mounted into containers through the CDI spec;
        ``on_change()`` runs after every prepare or unprepare (the driver process refreshes MIG instances).

        Prepares and unprepares are serialized (one lock, as the dra-example-driver's state lock): the gRPC
        server runs calls in parallel threads, and ``on_change`` rebuilds the driver directory from the CDI
        directory, so a refresh that read the directory before a parallel unprepare removed its spec could write
        last and keep a destroyed MIG instance until the next call."""
        self.node, self.uuids, self.cdi, self.get_claim = node, uuids, cdi, get_claim
        self.driver_dir, self.on_change = driver_dir, on_change
        self._lock = threading.Lock()

    def _retrieve(self, ref: ClaimRef) -> dict[str, Any]:
        try:
            claim = self.get_claim(ref.namespace, ref.name)
        except Exception as exc:
            raise RetrieveError(f"retrieve claim {ref.namespace}/{ref.name}: {exc}") from None
        if not (claim.get("status") or {}).get("allocation"):
            raise RetrieveError(f"claim {ref.namespace}/{ref.name} not allocated")
        if (claim.get("metadata") or {}).get("uid") != ref.uid:
            raise RetrieveError(f"claim {ref.namespace}/{ref.name} got replaced")
        return claim

    def prepare(self, refs: Iterable[ClaimRef]) -> dict[str, PrepareResult]:
        """Claim UID -> result. Raises RetrieveError (before writing anything) if any claim cannot be used."""
        refs = list(refs)
        claims = [(ref, self._retrieve(ref)) for ref in refs]
        with self._lock:
            return self._prepare(claims)

    def _prepare(self, claims: list[tuple[ClaimRef, dict[str, Any]]]) -> dict[str, PrepareResult]:
        out: dict[str, PrepareResult] = {}
        for ref, claim in claims:
            results = our_results(claim, self.node)
            try:
                spec = cdi_spec(ref.uid, results, self.uuids, self.driver_dir)
                self.cdi.write(ref.uid, spec)
            except PrepareError as exc:
                out[ref.uid] = PrepareResult(error=f"prepare devices for claim {ref.uid}: {exc}")
                continue
            except OSError as exc:
                out[ref.uid] = PrepareResult(error=f"write CDI spec for claim {ref.uid}: {exc.strerror}")
                continue
            out[ref.uid] = PrepareResult([
                PreparedDevice((r["request"],), r["pool"], r["device"],
                               (f"{CDI_KIND}={cdi_device_name(ref.uid, r['request'])}",))
                for r in results])
        if self.on_change is not None:
            self.on_change()
        return out

    def unprepare(self, refs: Iterable[ClaimRef]) -> dict[str, str]:
        """Claim UID -> error ("" when unprepared, including claims that were never prepared)."""
        with self._lock:
            return self._unprepare(refs)

    def _unprepare(self, refs: Iterable[ClaimRef]) -> dict[str, str]:
        out: dict[str, str] = {}
        for ref in refs:
            try:
                self.cdi.remove(ref.uid)
                out[ref.uid] = ""
            except OSError as exc:
                out[ref.uid] = f"remove CDI spec for claim {ref.uid}: {exc.strerror}"
        if self.on_change is not None:
            self.on_change()
        return out
