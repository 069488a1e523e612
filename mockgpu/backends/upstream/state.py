"""An upstream cluster's state dir: the local backends' layout (``common/state.py``: ``cluster.json``,
``spec.yaml``, ``kubeconfig``, ``logs/`` for container output, ``nodes/``) plus the upstream control plane's own files:

- ``pki/``                       certificates and keys (``pki.py``); ``pki/ca.crt`` is what clients trust
- ``tokens.csv``                 kube-apiserver's static tokens: the user's (``system:masters``), the
                                 scheduler's, the controller manager's, the kubelets' and Kueue's manager's
- ``kueue/``                     with ``spec.kueue.enabled``: the manager's Configuration, its webhook
                                 certificate (``tls.crt``/``tls.key``) and the manifests applied (``kueue.py``)
- ``<component>.kubeconfig``     one per component, mode 0600
- ``kube-scheduler.yaml``        the KubeSchedulerConfiguration the real scheduler runs with
- ``etcd/``                      etcd's data (a stopped cluster resumes from it)
- ``logs/<component>.log``       each process's output; ``upstream.log`` the supervisor's
- ``upstream.lock``              held by the running supervisor; ``endpoint.json`` its pid and port
"""

from __future__ import annotations

import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mockgpu.backends.common.state import ClusterState
from mockgpu.backends.upstream.components import Layout, Ports
from mockgpu.backends.upstream.kueue import MANAGER_GROUPS, MANAGER_USER
from mockgpu.control.apiserver.server import lock_held

BACKEND = "upstream"
LOCK_NAME = "upstream.lock"
PID_NAME = "upstream.pid"
PROGRESS_NAME = "controlplane.json"
ENDPOINT_NAME = "endpoint.json"
TOKEN_USERS = {  # token key in cluster.json -> (user, groups)
    "token": ("mockgpu-admin", "system:masters"),
    "schedulerToken": ("system:kube-scheduler", ""),
    "controllerManagerToken": ("system:kube-controller-manager", ""),
    # Kueue's manager (spec.kueue): named as the release's ServiceAccount, so the release's RBAC applies as is
    "kueueToken": (MANAGER_USER, MANAGER_GROUPS),
}


@dataclass(frozen=True)
class UpstreamState(ClusterState):
    """``ClusterState`` whose clients trust the cluster CA rather than a self-signed serving certificate."""

    @property
    def cert_file(self) -> Path:
        return self.dir / "pki" / "ca.crt"

    @property
    def key_file(self) -> Path:
        return self.dir / "pki" / "ca.key"

    @property
    def log_file(self) -> Path:
        return self.dir / "upstream.log"

    @property
    def layout(self) -> Layout:
        return Layout(self.dir)

    def ports(self) -> Ports:
        return Ports(**self.read_config()["ports"])

    def is_upstream(self) -> bool:
        try:
            return self.read_config().get("backend") == BACKEND
        except Exception:  # noqa: BLE001 - unreadable state is not ours to claim
            return False

    def running(self) -> bool:
        """Whether a live supervisor holds the state dir (its lock dies with it, even on SIGKILL)."""
        return lock_held(self.dir, LOCK_NAME)


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free on 127.0.0.1 now (the components bind them a moment later)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def new_config(name: str, *, scheduler_config: Path | None, kubeconfig: Path) -> dict[str, Any]:
    p = free_ports(6)
    return {"name": name, "backend": BACKEND, "kubeconfig": str(kubeconfig),
            "schedulerConfig": str(scheduler_config) if scheduler_config else None,
            "ports": {"apiserver": p[0], "etcd_client": p[1], "etcd_peer": p[2], "controller_manager": p[3],
                      "scheduler": p[4], "kubelet": p[5]},
            "port": p[0], "devicePlugin": "mockgpu",
            **{key: secrets.token_urlsafe(32) for key in TOKEN_USERS}}


def token_file(config: dict[str, Any]) -> str:
    """kube-apiserver's ``--token-auth-file`` CSV: token,user,uid,"groups"."""
    rows = []
    for key, (user, groups) in TOKEN_USERS.items():
        if key not in config:  # a cluster created before that user was added (kueueToken): it gets one at start
            continue
        rows.append(f'{config[key]},{user},{user},"{groups}"' if groups else f"{config[key]},{user},{user}")
    return "\n".join(rows) + "\n"
