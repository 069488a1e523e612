"""Device health as DRA device taints: the driver's slices with a taint on every device ``Driver.health()``
reports unhealthy (KEP-5055, device taints GA in Kubernetes v1.37).

The taint is ``gpu.mockgpu.io/xid=<Xid>:NoExecute``: key in the driver's own domain, value the newest Xid that made
the device unhealthy (a label value), effect ``NoExecute`` so that new claims stay off the device and the pods of
claims already on it are evicted by kube-controller-manager's device taint eviction controller (unless a request
tolerates the taint). A MIG device is tainted when its parent GPU is unhealthy too (an Xid on the GPU takes every
instance with it, as ``Driver.health()`` already says for the instances that exist).

This is mockgpu's choice, documented here: NVIDIA's DRA driver for GPUs (k8s-dra-driver-gpu) defines well-known
taint keys in its own domain (``gpu.nvidia.com/not-ready``, ``unreachable``, ``degraded``, ``reset-required``,
``hardware-failure``; its ``api/.../v1alpha1`` taint constants) and its NVML health check is alpha and off by
default; Kubernetes' example driver publishes no health taints. mockgpu names the Xid itself so that a learner sees
which fault it was, and uses ``NoExecute`` for every Xid the device plugin treats as fatal (79 "GPU has fallen off
the bus", 48 "double bit ECC error", ...; application Xids such as 13 and 31 taint nothing, as they leave the device
healthy). Clearing the Xids (a GPU reset) removes the taint on the next republish.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from mockgpu.gpu.driver import APPLICATION_XIDS, Health

TAINT_KEY = "gpu.mockgpu.io/xid"
TAINT_EFFECT = "NoExecute"


def _attr(device: Mapping[str, Any], name: str) -> str:
    value = ((device.get("attributes") or {}).get(name) or {}).get("string")
    return value if isinstance(value, str) else ""


def health_taint(health: Health | None) -> dict[str, str] | None:
    """The taint for a device in this health, or None when it is healthy."""
    if health is None or health.healthy:
        return None
    fatal = [x for x in health.xids if x not in APPLICATION_XIDS]
    return {"key": TAINT_KEY, "value": str(fatal[-1]) if fatal else "", "effect": TAINT_EFFECT}


def with_health_taints(slices: list[dict[str, Any]], health: Mapping[str, Health]) -> list[dict[str, Any]]:
    """``slices`` (not modified) with each unhealthy device's taint (by its ``uuid``, or its ``parentUUID``)."""
    out = copy.deepcopy(slices)
    for s in out:
        for device in (s.get("spec") or {}).get("devices") or []:
            taint = health_taint(health.get(_attr(device, "uuid"))) or \
                health_taint(health.get(_attr(device, "parentUUID")))
            if taint is not None:
                device["taints"] = [taint]
    return out
