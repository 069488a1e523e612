"""The names ``mockgpu sim`` accepts, importable without numpy: the ``mockgpu`` CLI builds every parser at
start-up, also where the notebook extra (numpy) is not installed, e.g. in the device-plugin image."""

from __future__ import annotations

from mockgpu.errors import MockgpuError

# In registry order (policies.py builds one factory per name, in this order); the first six are the ones the
# FGD paper compares, in its order.
POLICY_NAMES: tuple[str, ...] = ("random", "dot-product", "gpu-clustering", "gpu-packing", "best-fit", "fgd",
                                 "k8s-least-allocated", "k8s-most-allocated")
SAMPLINGS = ("replacement", "trace-first")


def canonical_name(name: str) -> str:
    key = name.strip().lower().replace("_", "-")
    if key not in POLICY_NAMES:
        raise MockgpuError(f"unknown policy {name!r}; choose one of: {', '.join(POLICY_NAMES)}, all", exit_code=2)
    return key
