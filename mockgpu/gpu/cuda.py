"""Fake CUDA for workloads: device enumeration, properties, memory info, malloc/free, utilization.

Memory lives in the node's fake driver (``mockgpu.gpu.driver``): an allocation is an entry in the
device's ledger, so time-sliced neighbours compete for the same bytes and a MIG instance has only
its own. Allocating more than is free raises :class:`CudaError` code 2 (``cudaErrorMemoryAllocation``),
printed as PyTorch does: ``CUDA error: out of memory``. Which devices a process sees follows
``mockgpu.gpu.visibility`` (NVIDIA_VISIBLE_DEVICES, then CUDA_VISIBLE_DEVICES, renumbered from 0).

The process is identified to the driver by its PID and, for nvidia-smi's process table, by the
environment the kubelet sets: ``MOCKGPU_POD_NAMESPACE``, ``MOCKGPU_POD_NAME``,
``MOCKGPU_CONTAINER_NAME`` (falling back to ``POD_NAMESPACE``/``POD_NAME``/``CONTAINER_NAME``).
A process appears on a device when it first touches it (like creating a CUDA context) and its
memory is released when it exits (or, if killed, reclaimed by the driver).

Injected faults (``mockgpu fault inject``; ``Driver.health()``, docs/faults.md): every call that uses a device's
context (``mem_get_info``, ``malloc``, ``free``, ``report_utilization``) on a GPU that has fallen off the bus
(Xid 79, or a MIG instance whose GPU did) raises code 719 ``cudaErrorLaunchFailure`` ("unspecified launch
failure"), and on a GPU with a double-bit ECC error (Xid 48) code 214 ``cudaErrorECCUncorrectable``
("uncorrectable ECC error encountered"). Both are sticky, as the CUDA runtime documents them: the process's
context is unusable and every later call returns the same error; only a new process recovers. Simplified: which
error a real lost GPU gives depends on what the process was doing; mockgpu always gives the launch failure.
Application Xids (13, 31, ...) do not fail the calls (the application already saw its own error).
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from mockgpu.gpu.catalog import get_model
from mockgpu.gpu.driver import Driver, DriverNotFound
from mockgpu.gpu.ledger import OutOfMemory, ProcessIdentity
from mockgpu.gpu.oomlog import record_oom
from mockgpu.gpu.visibility import CudaDevice, cuda_devices

# cudaError_t values and their runtime strings (CUDA runtime API ``cudaGetErrorString``).
cudaErrorMemoryAllocation = 2
cudaErrorInvalidValue = 1
cudaErrorNoDevice = 100
cudaErrorInvalidDevice = 101
cudaErrorECCUncorrectable = 214
cudaErrorLaunchFailure = 719
_TEXT = {
    cudaErrorInvalidValue: "invalid argument",
    cudaErrorMemoryAllocation: "out of memory",
    cudaErrorNoDevice: "no CUDA-capable device is detected",
    cudaErrorInvalidDevice: "invalid device ordinal",
    cudaErrorECCUncorrectable: "uncorrectable ECC error encountered",
    cudaErrorLaunchFailure: "unspecified launch failure",
}
STICKY = frozenset({cudaErrorECCUncorrectable, cudaErrorLaunchFailure})


class CudaError(RuntimeError):
    """A CUDA runtime error: ``code`` is the cudaError_t value, ``str()`` reads ``CUDA error: <text>``."""

    def __init__(self, code: int, detail: str = "") -> None:
        self.code = code
        self.text = _TEXT.get(code, "unknown error")
        super().__init__(f"CUDA error: {self.text}" + (f" ({detail})" if detail else ""))


@dataclass(frozen=True)
class DeviceProperties:
    """The subset of ``cudaDeviceProp`` / ``torch.cuda.get_device_properties`` workloads use."""

    name: str
    total_memory: int  # bytes
    multi_processor_count: int
    uuid: str
    major: int
    minor: int


@dataclass(frozen=True)
class Allocation:
    """A device allocation (what ``malloc`` returns and ``free`` takes)."""

    device: int
    uuid: str
    nbytes: int
    handle: int


def process_identity(env: Mapping[str, str] | None = None, pid: int | None = None) -> ProcessIdentity:
    """This process as the driver records it (pid, pod namespace/name, container, process name)."""
    env = os.environ if env is None else env

    def pick(*names: str) -> str:
        return next((env[n] for n in names if env.get(n)), "")

    return ProcessIdentity(
        pid=os.getpid() if pid is None else pid,
        namespace=pick("MOCKGPU_POD_NAMESPACE", "POD_NAMESPACE"),
        pod=pick("MOCKGPU_POD_NAME", "POD_NAME"),
        container=pick("MOCKGPU_CONTAINER_NAME", "CONTAINER_NAME"),
        name=os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python",
    )


class CudaRuntime:
    """One process's view of CUDA; the module-level functions use a default instance from os.environ."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = dict(os.environ if env is None else env)
        self.who = process_identity(env)
        try:
            self.driver: Driver | None = Driver.from_env(env)
            self.devices: list[CudaDevice] = cuda_devices(self.driver.inventory, env)
        except DriverNotFound:
            self.driver, self.devices = None, []
        self._touched: set[str] = set()
        self._live: dict[int, Allocation] = {}
        self._sticky: CudaError | None = None  # a fault broke this process's context: every call fails so

    def _device(self, i: int) -> CudaDevice:
        if not self.devices:
            raise CudaError(cudaErrorNoDevice)
        if not isinstance(i, int) or not 0 <= i < len(self.devices):
            raise CudaError(cudaErrorInvalidDevice, f"device {i}; {len(self.devices)} visible")
        return self.devices[i]

    def _check_faults(self, dev: CudaDevice) -> None:
        """Raise the sticky error of a fault on ``dev`` (or one this process already met)."""
        if self._sticky is not None:
            raise self._sticky
        assert self.driver is not None
        h = self.driver.health().get(dev.uuid)
        if h is not None and h.lost:
            self._sticky = CudaError(cudaErrorLaunchFailure, f"GPU {dev.uuid} has fallen off the bus (Xid 79)")
        elif h is not None and h.ecc_uncorrectable:
            self._sticky = CudaError(cudaErrorECCUncorrectable, f"double bit ECC error on {dev.uuid} (Xid 48)")
        if self._sticky is not None:
            raise self._sticky

    def _context(self, i: int) -> CudaDevice:
        dev = self._device(i)
        self._check_faults(dev)
        if dev.uuid not in self._touched:
            assert self.driver is not None
            self.driver.register(dev.uuid, self.who)
            self._touched.add(dev.uuid)
        return dev

    def device_count(self) -> int:
        return len(self.devices)

    def get_device_properties(self, i: int) -> DeviceProperties:
        dev = self._device(i)
        major, minor = get_model(dev.gpu.model).compute_capability
        return DeviceProperties(name=dev.name, total_memory=dev.memory_mib << 20,
                                multi_processor_count=dev.sm_count, uuid=dev.uuid, major=major, minor=minor)

    def mem_get_info(self, i: int = 0) -> tuple[int, int]:
        dev = self._context(i)
        assert self.driver is not None
        return self.driver.mem_info(dev.uuid)

    def malloc(self, i: int, nbytes: int) -> Allocation:
        if not isinstance(nbytes, int) or nbytes < 0:
            raise CudaError(cudaErrorInvalidValue, f"nbytes={nbytes!r}")
        dev = self._context(i)
        assert self.driver is not None
        try:
            handle = self.driver.allocate(dev.uuid, self.who, nbytes)
        except OutOfMemory as exc:
            record_oom(self.driver.dir, dev.uuid, self.who, nbytes, exc.free)  # for the GPU-state publisher
            gib = 1 << 30
            raise CudaError(cudaErrorMemoryAllocation, f"tried to allocate {nbytes / gib:.2f} GiB on device {i}; "
                            f"{exc.free / gib:.2f} GiB free of {exc.total / gib:.2f} GiB") from None
        alloc = Allocation(device=i, uuid=dev.uuid, nbytes=nbytes, handle=handle)
        self._live[handle] = alloc
        return alloc

    def free(self, alloc: Allocation) -> None:
        self._check_faults(self._device(alloc.device))
        if self._live.pop(alloc.handle, None) is None:
            raise CudaError(cudaErrorInvalidValue, "not a live allocation of this process")
        assert self.driver is not None
        self.driver.free(alloc.uuid, self.who, alloc.handle)

    def report_utilization(self, i: int, pct: float) -> None:
        dev = self._context(i)
        assert self.driver is not None
        self.driver.report_utilization(dev.uuid, self.who, pct)

    def shutdown(self) -> None:
        """Release everything this process holds (the driver does this when a process exits)."""
        if self.driver is not None:
            for uuid in self._touched:
                self.driver.release(uuid, self.who)
        self._touched.clear()
        self._live.clear()


_default: CudaRuntime | None = None


def runtime() -> CudaRuntime:
    """The process's CUDA runtime, initialised from the environment on first use (as CUDA does)."""
    global _default
    if _default is None:
        _default = CudaRuntime()
        atexit.register(_default.shutdown)
    return _default


def device_count() -> int:
    return runtime().device_count()


def get_device_properties(i: int) -> DeviceProperties:
    return runtime().get_device_properties(i)


def mem_get_info(i: int = 0) -> tuple[int, int]:
    return runtime().mem_get_info(i)


def malloc(i: int, nbytes: int) -> Allocation:
    return runtime().malloc(i, nbytes)


def free(alloc: Allocation) -> None:
    runtime().free(alloc)


def report_utilization(i: int, pct: float) -> None:
    runtime().report_utilization(i, pct)
