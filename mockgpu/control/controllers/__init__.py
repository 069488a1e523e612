"""The embedded control plane's controllers (kube-controller-manager's workload half): ReplicaSet, Deployment,
Job, DaemonSet, StatefulSet, CronJob and the garbage collector, run by one ``ControllerManager`` over the
official client (``clock`` is the CronJob controller's injectable time source).

Each module's docstring says which of upstream's behaviour it follows and where it simplifies; ``logic`` holds
the pure decisions (naming, rolling-update arithmetic, pod order, conditions).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ControllerManager"]


def __getattr__(name: str) -> Any:  # lazy: importing the package must not import the kubernetes client
    if name == "ControllerManager":
        from mockgpu.control.controllers.manager import ControllerManager

        return ControllerManager
    raise AttributeError(name)
