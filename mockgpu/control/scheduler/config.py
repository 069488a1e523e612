"""Which KubeSchedulerConfiguration a cluster runs: ``--scheduler-config`` if given, else the spec's file,
else kube-scheduler's defaults. Errors are ``ConfigError`` with the file and field path (one CLI line)."""

from __future__ import annotations

from pathlib import Path

from mockgpu.config import ClusterSpec
from mockgpu.errors import ConfigError
from mockgpu.sched.config import SchedulerConfig, default_config, load_config


def scheduler_config_source(spec: ClusterSpec | None, override: Path | str | None = None) -> Path | None:
    """The file that configures the scheduler (None: upstream defaults)."""
    if override is not None:
        return Path(override)
    return spec.scheduler_config_path() if spec is not None else None


def load_scheduler_config(spec: ClusterSpec | None, override: Path | str | None = None) -> SchedulerConfig:
    """The parsed configuration; ConfigError (e.g. ``file: profiles[0].plugins.score.enabled[0].name: ...``)."""
    source = scheduler_config_source(spec, override)
    if source is None:
        return default_config()
    if not source.is_file():
        where = "--scheduler-config" if override is not None else f"{spec.source if spec else ''}: spec.schedulerConfig"
        raise ConfigError(str(source), "", f"no such file (from {where})")
    return load_config(source)
