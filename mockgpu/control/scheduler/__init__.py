"""The embedded kube-scheduler loop (``Scheduler``) and the config it runs (``load_scheduler_config``)."""

from mockgpu.control.scheduler.config import load_scheduler_config, scheduler_config_source
from mockgpu.control.scheduler.scheduler import Scheduler

__all__ = ["Scheduler", "load_scheduler_config", "scheduler_config_source"]
