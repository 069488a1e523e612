"""The local control plane beyond the API server: the scheduler loop, the controllers (Deployments, ReplicaSets,
Jobs, DaemonSets, StatefulSets, CronJobs, garbage collection) and one kubelet per node.

Shared by the two local backends: the embedded one runs all three against its own API server; the upstream one
runs only the kubelets (``scheduler=False, controllers=False``) against the real kube-apiserver.

``ControlPlane(state, url, token)``: ``start()`` starts the scheduler (W2's ``mockgpu.control.scheduler``)
with the cluster's KubeSchedulerConfiguration, the controllers (``mockgpu.control.controllers``; on by default
wherever the scheduler is), then a ``Kubelet`` per spec node (threads in this process;
device plugins and containers are subprocesses), and returns once every node is Ready with its device
plugins registered. ``stop()`` stops the kubelets (containers, plugins) and the scheduler: nothing they
started outlives it. Node state lives under ``<state>/nodes/<node>/`` (driver dir, device plugin dir with the
kubelet checkpoint, container runtime files, device plugin log).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from mockgpu.backends.common.kubeconfig import api_client_for
from mockgpu.backends.common.state import ClusterState, node_root
from mockgpu.control import controllers as controller_manager
from mockgpu.control import scheduler as scheduler_loop
from mockgpu.control.kubelet.kubelet import Kubelet, KubeletOptions, dra_dir_for, plugin_dir_for
from mockgpu.control.kubelet.publisher import ensure_namespace
from mockgpu.control.kubelet.sandbox import relocation_path
from mockgpu.control.scheduler.config import load_scheduler_config
from mockgpu.sched.config import SchedulerConfig

log = logging.getLogger(__name__)


def scheduler_config_of(state: ClusterState, config: dict[str, Any]) -> SchedulerConfig:
    """The KubeSchedulerConfiguration recorded at ``up`` (ConfigError with the field path if invalid)."""
    path = config.get("schedulerConfig")
    return load_scheduler_config(None, Path(path) if path else None)


def remove_node_dirs(state: ClusterState) -> None:
    """Remove per-node dirs kept outside the state dir (short plugin dirs in /tmp; a root cluster's workload tree
    in /run/mockgpu-workloads when its sandbox ran a layer that moves it there). ``shutil.rmtree`` walks by
    directory descriptors without following symlinks (``rmtree.avoids_symlink_attacks`` on Linux): the workload
    tree holds pod-writable directories."""
    nodes = state.dir / "nodes"
    if not nodes.is_dir():
        return
    for d in nodes.iterdir():
        for pd in (plugin_dir_for(d), dra_dir_for(d)):
            if state.dir not in pd.parents:
                shutil.rmtree(pd, ignore_errors=True)
        workloads = relocation_path(d / "runtime")
        if workloads.is_dir() and not workloads.is_symlink():
            shutil.rmtree(workloads, ignore_errors=True)


class ControlPlane:
    def __init__(self, state: ClusterState, url: str, token: str, *, kubelets: bool = True, scheduler: bool = True,
                 controllers: bool | None = None, scheduler_config: SchedulerConfig | None = None,
                 kubelet_options: KubeletOptions | None = None, ready_timeout: float = 30.0) -> None:
        self.state = state
        self.url, self.token = url, token
        self.want_kubelets, self.want_scheduler = kubelets, scheduler
        self.want_controllers = scheduler if controllers is None else controllers  # on wherever the scheduler is
        self.controllers: Any = None
        self.scheduler_config = scheduler_config
        self.kubelet_options = kubelet_options
        self.ready_timeout = ready_timeout
        self.scheduler: Any = None
        self.kubelets: dict[str, Kubelet] = {}
        self._clients: list[Any] = []

    def api_client(self) -> Any:
        c = api_client_for(self.url, self.state.cert_file, self.token, pool_size=16)
        self._clients.append(c)
        return c

    def start(self) -> ControlPlane:
        t0 = time.monotonic()

        def mark(what: str) -> None:
            log.info("control plane: %s after %.2f s", what, time.monotonic() - t0)

        try:
            if self.want_kubelets:  # device plugins start while the client library is imported below
                for node in self.state.load_spec().nodes():
                    self.kubelets[node.name] = self._kubelet(node.name).start_devices()
                mark(f"{len(self.kubelets)} device plugin processes started")
            from kubernetes import client

            ensure_namespace(client.CoreV1Api(self.api_client()))
            mark("API client ready")
            if self.want_scheduler:
                config = self.scheduler_config or scheduler_config_of(self.state, self.state.read_config())
                # the packages load their kubernetes-client halves on first use (their lazy attributes)
                self.scheduler = scheduler_loop.Scheduler(self.api_client(), config).start()
                mark("scheduler started")
            if self.want_controllers:
                self.controllers = controller_manager.ControllerManager(self.api_client()).start()
                mark("controllers started")
            if self.want_kubelets:
                for k in self.kubelets.values():
                    k.start_api()
                mark("nodes registered")
                for k in self.kubelets.values():
                    k.wait_ready(self.ready_timeout)
                mark("every node Ready with its device plugins registered")
        except BaseException:
            self.stop()
            raise
        return self

    def _kubelet(self, node: str) -> Kubelet:
        return Kubelet(self.api_client, self.state.load_spec(), node, spec_file=self.state.spec_file,
                       root=node_root(self.state, node), state_dir=self.state.dir, options=self.kubelet_options)

    def restart_kubelet(self, node: str) -> Kubelet:
        """Stop a node's kubelet (its containers and plugin) and start a new one on the same node dir."""
        self.kubelets.pop(node).stop()
        k = self.kubelets[node] = self._kubelet(node).start()
        k.wait_ready(self.ready_timeout)
        return k

    def stop(self) -> None:
        """Controllers, kubelets (in parallel), then the scheduler."""
        if self.controllers is not None:
            self.controllers.stop()
            self.controllers = None
        threads = [threading.Thread(target=k.stop, name=f"stop-{n}") for n, k in self.kubelets.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.kubelets.clear()
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None
        for c in self._clients:  # idle keep-alive connections would hold up the server's shutdown
            c.close()
        self._clients.clear()
