"""The runtime's data: what a container is asked to be (ContainerSpec) and what it became
(ContainerStatus), plus the two pure rules the runtime applies: Kubernetes' command/args
combination and the mapping of container paths onto mounts' host paths."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from mockgpu.apimachinery.timefmt import rfc3339


@dataclass(frozen=True)
class Mount:
    container_path: str
    host_path: str
    read_only: bool = False


@dataclass(frozen=True)
class ContainerSpec:
    """What the kubelet asks the runtime to run (one container of one pod)."""

    pod_uid: str
    pod_name: str
    namespace: str
    name: str
    image: str = ""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # the pod's env, already resolved
    device_envs: dict[str, str] = field(default_factory=dict)  # from the device plugins' Allocate
    mounts: tuple[Mount, ...] = ()
    working_dir: str = ""
    restart_count: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.pod_uid, self.name)


@dataclass(frozen=True)
class ContainerStatus:
    """A snapshot of one container; ``state`` is running or terminated."""

    pod_uid: str
    name: str
    state: str
    container_id: str
    log_path: Path
    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    pid: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int | None = None
    signal: int | None = None
    reason: str = ""
    message: str = ""
    restart_count: int = 0

    def k8s_state(self) -> dict:
        """The ``state`` object of a Kubernetes containerStatus."""
        if self.state == "running":
            return {"running": {"startedAt": _ts(self.started_at)}}
        term = {"exitCode": self.exit_code, "reason": self.reason, "containerID": self.container_id}
        term |= {"startedAt": _ts(self.started_at), "finishedAt": _ts(self.finished_at)}
        if self.signal:
            term["signal"] = self.signal
        if self.message:
            term["message"] = self.message
        return {"terminated": term}


def _ts(t: datetime | None) -> str | None:
    return rfc3339(t) if t else None


def combine_argv(
    command: tuple[str, ...], args: tuple[str, ...], entrypoint: tuple[str, ...] = (), cmd: tuple[str, ...] = ()
) -> list[str]:
    """Kubernetes' rule: command replaces ENTRYPOINT (and drops CMD); args replace CMD."""
    if command:
        return [*command, *args]
    return [*entrypoint, *(args or cmd)]


def rewrite_path(value: str, mounts: tuple[Mount, ...]) -> str:
    """Map a container path (or a ':'-joined list of them) onto the mounts' host paths."""

    def one(p: str) -> str:
        for m in sorted(mounts, key=lambda m: len(m.container_path), reverse=True):
            c = m.container_path.rstrip("/")
            if p == c or p.startswith(c + "/"):
                return m.host_path.rstrip("/") + p[len(c) :]
        return p

    return ":".join(one(p) for p in value.split(":")) if value.startswith("/") else value
