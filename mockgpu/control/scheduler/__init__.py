"""The embedded kube-scheduler loop (``Scheduler``) and the config it runs (``load_scheduler_config``).

``Scheduler`` is imported lazily: ``from mockgpu.control.scheduler.config import load_scheduler_config``
(what ``mockgpu up`` needs to validate early) does not import the kubernetes client library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockgpu.control.scheduler.config import load_scheduler_config, scheduler_config_source

if TYPE_CHECKING:
    from mockgpu.control.scheduler.scheduler import Scheduler

__all__ = ["Scheduler", "load_scheduler_config", "scheduler_config_source"]


def __getattr__(name: str) -> Any:
    if name == "Scheduler":
        from mockgpu.control.scheduler.scheduler import Scheduler

        return Scheduler
    raise AttributeError(name)
