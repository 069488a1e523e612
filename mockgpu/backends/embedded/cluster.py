"""Creating, resuming and describing embedded clusters; ``EmbeddedCluster`` is the backend's ``Cluster``.

``EmbeddedCluster("clusters/seed-4x2.yaml")`` serves the cluster from a thread of the calling process
(fast; for notebooks and tests) or, with ``in_process=False``, from the same detached daemon that
``mockgpu up`` starts (``EmbeddedBackend.up`` is ``EmbeddedBackend.cluster(opts).start()``). Both run
``APIServer`` over the same state dir layout (``common/state.py``), so a cluster made one way can be resumed the
other way.

In process, ``kubelets=True`` and ``scheduler=True`` also run the control plane (``common/controlplane.py``): the
scheduler loop and one fake kubelet per node, which registers its Node from its device plugin's
ListAndWatch; ``start()`` returns once every node is Ready. Both default to False (API only: the spec's
nodes are registered as placeholder Nodes with ``nvidia.com/gpu`` = the GPU count, see ``nodes``), which
keeps API and scheduler tests fast; the daemon (``in_process=False``, ``mockgpu up``) always runs both.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

from mockgpu.backends.base import ClusterInfo
from mockgpu.backends.common.controlplane import ControlPlane, remove_node_dirs
from mockgpu.backends.common.faults import HostFaults
from mockgpu.backends.common.kubeconfig import api_client_for, remove_kubeconfig, write_kubeconfig
from mockgpu.backends.common.spec import resolve_spec
from mockgpu.backends.common.state import ClusterState
from mockgpu.backends.embedded import daemon
from mockgpu.backends.embedded.tls import ensure_serving_cert
from mockgpu.config import ClusterSpec
from mockgpu.control.apiserver.server import APIServer
from mockgpu.control.kubelet.kubelet import KubeletOptions
from mockgpu.control.scheduler.config import load_scheduler_config
from mockgpu.errors import MockgpuError

# spec.kueue on this backend: one line, no refusal (the same spec runs everywhere; the labs skip their Kueue part)
KUEUE_ELSEWHERE = ("spec.kueue: Kueue runs only where a real API server is (--backend upstream or kind: its CRDs and "
                   "admission webhooks); this embedded cluster runs without it")

BACKEND = "embedded"


def new_config(name: str, *, scheduler_config: Path | None, kubeconfig: Path, device_plugin: str) -> dict[str, Any]:
    """A new cluster's ``cluster.json``: its token (the kubeconfig's bearer token), no port yet."""
    return {"name": name, "backend": BACKEND, "token": secrets.token_urlsafe(32), "port": 0,
            "schedulerConfig": str(scheduler_config) if scheduler_config else None,
            "kubeconfig": str(kubeconfig), "devicePlugin": device_plugin}


def backend_of(state: ClusterState) -> str:
    """The backend a state dir says it belongs to (unreadable state: embedded, which reports or cleans it)."""
    try:
        return str(state.read_config().get("backend") or BACKEND)
    except MockgpuError:
        return BACKEND


def prepare(state: ClusterState, spec: ClusterSpec | None, *, kubeconfig: Path | None = None,
            scheduler_config: Path | None = None, device_plugin: str = "mockgpu") -> tuple[dict[str, Any], bool]:
    """(config, created): the existing cluster's config when its state exists (resume), else a new one."""
    kubeconfig = Path(kubeconfig).expanduser().absolute() if kubeconfig is not None else None
    if state.exists():
        if backend_of(state) != BACKEND:
            raise MockgpuError(f"cluster '{state.name}' exists on the {backend_of(state)} backend "
                               f"(mockgpu down --name {state.name} first)", exit_code=2)
        config = state.read_config()
        if kubeconfig is not None and str(kubeconfig) != config.get("kubeconfig"):
            config["kubeconfig"] = str(kubeconfig)
            state.write_config(config)
        return config, False
    spec = spec or resolve_spec(None)
    sched = scheduler_config or spec.scheduler_config_path()
    config = new_config(state.name, scheduler_config=Path(sched).resolve() if sched else None,
                        kubeconfig=Path(kubeconfig or state.default_kubeconfig), device_plugin=device_plugin)
    state.save_spec(spec)
    ensure_serving_cert(state.cert_file, state.key_file, state.name)
    state.write_config(config)
    return config, True


def publish(state: ClusterState, config: dict[str, Any], port: int) -> Path:
    """Record the port and write the kubeconfig that points at it."""
    if config.get("port") != port:
        config["port"] = port
        state.write_config(config)
    return write_kubeconfig(Path(config["kubeconfig"]), state.name, f"https://127.0.0.1:{port}", config["token"],
                            state.cert_file.read_bytes())


def destroy(state: ClusterState) -> None:
    """Remove the cluster's kubeconfig entries (when kept outside the state dir) and its state dir."""
    remove_node_dirs(state)
    if state.exists():
        kc = Path(state.read_config().get("kubeconfig") or state.default_kubeconfig)
        if state.dir not in kc.parents:
            remove_kubeconfig(kc, state.name)
    shutil.rmtree(state.dir, ignore_errors=True)


class EmbeddedCluster(HostFaults):  # the fault methods: backends/common/faults.py
    """A mockgpu cluster with the embedded control plane (the backend's ``Cluster``); a context manager that
    starts and stops it.

    >>> with EmbeddedCluster("clusters/seed-4x2.yaml", home=tmp) as c:   # doctest: +SKIP
    ...     kubernetes.client.CoreV1Api(c.api_client()).list_node()
    """

    def __init__(self, spec: str | Path | ClusterSpec | None = None, *, name: str | None = None,
                 home: str | Path | None = None, kubeconfig: str | Path | None = None, in_process: bool = True,
                 delete_on_exit: bool = False, bookmark_interval: float = 5.0, history: int = 10000,
                 kubelets: bool = False, scheduler: bool = False, scheduler_config: str | Path | None = None,
                 kubelet_options: KubeletOptions | None = None, controllers: bool | None = None,
                 device_plugin: str = "mockgpu", retain: bool = False) -> None:
        self.spec = resolve_spec(spec)
        self.name = name or self.spec.name
        self.state = ClusterState.of(self.name, home)
        self.in_process = in_process
        self.delete_on_exit = delete_on_exit
        self.bookmark_interval = bookmark_interval
        self.history = history  # watch events kept for resuming (older versions get 410 Gone)
        self._kubeconfig = Path(kubeconfig) if kubeconfig else None
        self.kubelets, self.scheduler = kubelets, scheduler
        self.controllers = scheduler if controllers is None else controllers  # workload controllers
        self.scheduler_config = Path(scheduler_config) if scheduler_config else None
        self.kubelet_options = kubelet_options
        self.device_plugin = device_plugin
        self.retain = retain  # keep a half-created cluster (``mockgpu up --retain``)
        self.control_plane: ControlPlane | None = None
        self.server: APIServer | None = None
        self.config: dict[str, Any] = {}
        self.url = ""
        self.how = ""  # after start: "created", "resumed" or "already running" (a daemon another process started)

    @property
    def kubeconfig(self) -> Path:
        return Path(self.config.get("kubeconfig") or self._kubeconfig or self.state.default_kubeconfig)

    @property
    def token(self) -> str:
        return str(self.config["token"])

    def start(self) -> EmbeddedCluster:
        if self.spec.spec.kueue.enabled:
            print(KUEUE_ELSEWHERE, file=sys.stderr, flush=True)
        sched_config = None
        if self.in_process and self.scheduler:
            sched_config = load_scheduler_config(self.spec, self.scheduler_config)
        elif not self.in_process and not self.state.exists():  # an invalid config fails before anything starts
            load_scheduler_config(self.spec, self.scheduler_config)
        self.config, created = prepare(self.state, self.spec, kubeconfig=self._kubeconfig,
                                       scheduler_config=self.scheduler_config, device_plugin=self.device_plugin)
        self.how = "created" if created else "resumed"
        try:
            if self.in_process:
                self.server = daemon.make_server(self.state, mode="thread", bookmark_interval=self.bookmark_interval,
                                                 history=self.history, seed_nodes=not self.kubelets)
                self.server.start_background()
                port = self.server.port
                if self.kubelets or self.scheduler or self.controllers:
                    self.control_plane = ControlPlane(self.state, self.server.url, self.token,
                                                      kubelets=self.kubelets, scheduler=self.scheduler,
                                                      controllers=self.controllers,
                                                      scheduler_config=sched_config,
                                                      kubelet_options=self.kubelet_options).start()
            else:
                endpoint = daemon.running_endpoint(self.state)
                if endpoint is None:
                    daemon.spawn(self.state)
                    endpoint = daemon.wait_ready(self.state, self.token)
                else:
                    self.how = "already running"
                self.wait_ready()
                port = int(endpoint["port"])
        except BaseException:
            if self.how != "already running":
                with contextlib.suppress(MockgpuError):
                    self.stop()
            if created and not self.retain:
                destroy(self.state)
            raise
        self.url = f"https://127.0.0.1:{port}"
        publish(self.state, self.config, port)
        if self.delete_on_exit and self.in_process:
            # served by this process only: once it is gone (even killed), `mockgpu status` removes the state
            self.state.mark_ephemeral()
        return self

    def wait_ready(self, timeout: float | None = None) -> None:
        """In process, ``start`` returns with every node Ready; the daemon reports when its nodes are."""
        if not self.in_process:
            daemon.wait_control_plane(self.state, **({"timeout": timeout} if timeout is not None else {}))

    def stop(self) -> None:
        """Stop the control plane (no container or plugin survives), then the server; the state stays, so
        ``start()`` resumes the same cluster."""
        if self.control_plane is not None:
            self.control_plane.stop()
            self.control_plane = None
        if self.server is not None:
            self.server.stop_background()
            self.server = None
        elif not self.in_process:
            daemon.stop(self.state)

    def delete(self) -> None:
        """Stop and delete the cluster. A handle served from this process never deletes a cluster another process
        serves (the same lab open twice, or one ``mockgpu up`` started): it refuses, saying how to stop it."""
        if self.in_process and self.server is None and daemon.running_endpoint(self.state) is not None:
            raise MockgpuError(f"cluster '{self.name}' is already served by another process (is this lab open "
                               f"twice?); stop that kernel or run: mockgpu down --name {self.name}")
        self.stop()
        destroy(self.state)

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for this cluster (no kubeconfig file needed)."""
        return api_client_for(self.url, self.state.cert_file, self.token)

    def info(self) -> ClusterInfo:
        return ClusterInfo(self.name, BACKEND, self.url, self.kubeconfig, f"running ({self.how})" if self.url else
                           "stopped")

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.delete_on_exit:
            self.delete()
        else:
            self.stop()
