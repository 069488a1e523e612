"""A pod's status as the kubelet reports it: container statuses, phase and conditions.

Phase follows the kubelet's ``getPhase``: a container waiting with no previous termination keeps
the pod Pending; one running (and none unknown) makes it Running; when all have stopped, the pod is
Running under ``restartPolicy: Always`` (it restarts), Succeeded if every container exited 0,
Failed under ``Never``, Running under ``OnFailure``. A pod being deleted (``terminal``) ends
Succeeded if all exited 0, else Failed. A waiting container with a previous termination (a crash
loop) counts as stopped, not waiting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.kubelet.container import ContainerStatus


@dataclass
class ContainerRecord:
    """What the kubelet remembers of one container across its restarts."""

    name: str
    image: str = ""
    init: bool = False
    restart_count: int = 0
    current: ContainerStatus | None = None  # the latest run (running or terminated)
    last_terminated: ContainerStatus | None = None  # the run before, once restarted
    waiting: tuple[str, str] | None = ("ContainerCreating", "")  # (reason, message) while not running

    def state(self) -> dict:
        if self.waiting is not None or self.current is None:
            reason, message = self.waiting or ("ContainerCreating", "")
            return {"waiting": {"reason": reason, **({"message": message} if message else {})}}
        return self.current.k8s_state()

    def running(self) -> bool:
        return self.waiting is None and self.current is not None and self.current.state == "running"

    def to_k8s(self) -> dict:
        st: dict = {
            "name": self.name,
            "state": self.state(),
            "lastState": self.last_terminated.k8s_state() if self.last_terminated else {},
            "ready": self.running() and not self.init,
            "restartCount": self.restart_count,
            "image": self.image,
            "imageID": "",
            "started": self.running(),
        }
        if self.current is not None and self.current.container_id:
            st["containerID"] = self.current.container_id
        return st


def pod_phase(records: list[ContainerRecord], restart_policy: str, *, terminal: bool = False) -> str:
    """The kubelet's getPhase over the app containers (init containers handled by the caller)."""
    waiting = running = stopped = succeeded = 0
    for r in records:
        if r.running():
            running += 1
        elif r.waiting is None and r.current is not None and r.current.state == "terminated":
            stopped += 1
            succeeded += r.current.exit_code == 0
        elif r.last_terminated is not None:
            stopped += 1
        else:
            waiting += 1
    if waiting and not terminal:
        return "Pending"
    if running and not terminal:
        return "Running"
    if terminal:
        return "Succeeded" if stopped and stopped == succeeded and not running and not waiting else "Failed"
    if stopped:
        if restart_policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if restart_policy == "Never" else "Running"
    return "Pending"


@dataclass
class Conditions:
    """Pod conditions the kubelet owns, with lastTransitionTime kept across updates."""

    _last: dict[str, tuple[str, str]] = field(default_factory=dict)  # type -> (status, since)

    def set(self, ctype: str, ok: bool) -> None:
        status = "True" if ok else "False"
        if self._last.get(ctype, ("", ""))[0] != status:
            self._last[ctype] = (status, rfc3339())

    def to_k8s(self, reasons: dict[str, str] | None = None) -> list[dict]:
        reasons = reasons or {}
        out = []
        for ctype, (status, since) in self._last.items():
            c = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": since}
            if status == "False" and ctype in reasons:
                c["reason"] = reasons[ctype]
            out.append(c)
        return out
