"""``import mockgpu.cuda``: the fake CUDA API workloads call (see ``mockgpu.gpu.cuda``)."""

from mockgpu.gpu.cuda import (
    Allocation,
    CudaError,
    CudaRuntime,
    DeviceProperties,
    cudaErrorECCUncorrectable,
    cudaErrorLaunchFailure,
    cudaErrorMemoryAllocation,
    cudaErrorNoDevice,
    device_count,
    free,
    get_device_properties,
    malloc,
    mem_get_info,
    report_utilization,
    runtime,
)

__all__ = [
    "Allocation",
    "CudaError",
    "CudaRuntime",
    "DeviceProperties",
    "cudaErrorECCUncorrectable",
    "cudaErrorLaunchFailure",
    "cudaErrorMemoryAllocation",
    "cudaErrorNoDevice",
    "device_count",
    "free",
    "get_device_properties",
    "malloc",
    "mem_get_info",
    "report_utilization",
    "runtime",
]
