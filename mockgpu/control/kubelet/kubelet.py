"""The fake kubelet of one node, talking to the API server through the official ``kubernetes`` client.

``Kubelet(api_client, spec, node, spec_file=, root=, state_dir=)``; ``start()``, ``wait_ready()``, ``stop()``.
What it does, as upstream's kubelet does it:
* runs the node's device plugin as its own process (``pluginproc``) on a per-node plugin dir, and a
  ``DeviceManager`` serving ``kubelet.sock`` there; a ``ProcessRuntime`` runs containers; a plugin (or DRA
  driver) process that dies is started again with the container back-off (``KubeletOptions.plugin_backoff``,
  upstream's 10 s doubling to 5 min) and registers again, as the DaemonSet pod's container would;
* registers its Node (``nodestatus``): base resources from the spec, extended resources only from
  ListAndWatch, GFD labels; posts status on every device change and every ``heartbeat`` seconds;
* watches pods with ``spec.nodeName=<node>`` (``podsync``): runs a ``PodWorker`` per pod, writes pod status
  through ``pods/status`` (strategic merge, so the scheduler's PodScheduled condition stays), posts events
  (``events``); a pod with ``deletionTimestamp`` is stopped with its grace period, then deleted with
  ``gracePeriodSeconds=0``; a deleted pod is forgotten once its containers are stopped (its log dir,
  ``podlogsgc``, its containers' scratch dirs and records), and a sweep at start and every ``gc_period``
  removes the dirs of pods deleted while no kubelet watched;
* publishes the node's GPU state (``publisher``) and serves it as dcgm-exporter's ``/metrics`` on 127.0.0.1
  (``exporter``; the URL is the Node's ``mockgpu.io/dcgm-exporter`` annotation);
* on a node whose pool gives GPUs to DRA (``gpu.management``): watches its plugin registry
  (``pluginwatcher``), runs the DRA driver ``gpu.mockgpu.io`` as its own process (``mockgpu dra-driver``, with
  a kubeconfig for this kubelet's API client written next to it) and prepares pods' ResourceClaims through it
  (``dramanager``); the node is ready once the driver has registered. The device plugin runs only when the
  pool leaves it some GPUs.
Shutdown (``stop``) kills every container and the plugin but keeps the device checkpoint, so a new kubelet on
the same ``root`` keeps device assignments; pods whose processes are gone are then restarted or failed per
``restartPolicy`` (see ``podsync``). A deleted Node: see ``podsync.PodSync.node_deleted``.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mockgpu.apimachinery.timefmt import micro_time
from mockgpu.config.clusterspec import ClusterSpec
from mockgpu.config.inventory import device_plugin_inventory, dra_gpus, node_inventory
from mockgpu.control.apiserver.podlogs import container_log_dir
from mockgpu.control.kubelet.apiwatch import Reflector
from mockgpu.control.kubelet.container import ContainerSpec
from mockgpu.control.kubelet.containerlogs import MAX_FILES, MAX_SIZE, LogRotation
from mockgpu.control.kubelet.devicemanager import DeviceManager
from mockgpu.control.kubelet.dramanager import DRAManager
from mockgpu.control.kubelet.events import EventRecorder
from mockgpu.control.kubelet.exporter import ANNOTATION as METRICS_ANNOTATION
from mockgpu.control.kubelet.exporter import MetricsExporter
from mockgpu.control.kubelet.nodestatus import KUBELET_PORT, conditions, node_object, resources
from mockgpu.control.kubelet.pluginproc import BackOff, PluginProcess
from mockgpu.control.kubelet.pluginwatcher import PluginWatcher
from mockgpu.control.kubelet.podsync import PodSync
from mockgpu.control.kubelet.publisher import GpuStatePublisher
from mockgpu.control.kubelet.runtime import ProcessRuntime
from mockgpu.deviceplugin.resources import resource_managers
from mockgpu.dra.publish import claim_getter
from mockgpu.dra.slices import DRIVER, device_uuids
from mockgpu.errors import MockgpuError
from mockgpu.gpu.driver import write_node_driver
from mockgpu.gpu.faults import record_node_dirs
from mockgpu.gpu.state import DeviceAllocation, StateInputs
from mockgpu.privatefs import private_dir

log = logging.getLogger(__name__)
NODE_LEASE_NAMESPACE = "kube-node-lease"  # upstream's node lease: name = node, renewed with the status
NODE_LEASE_SECONDS = 40  # upstream nodeLeaseDurationSeconds
SOCKET_BUDGET = 107 - 40  # sun_path limit minus room for the longest plugin socket name
DRA_SOCKET_BUDGET = 107 - 36  # room for plugins/gpu.mockgpu.io/dra.sock and plugins_registry/<driver>-reg.sock


def plugin_dir_for(root: Path) -> Path:
    """``<root>/dp`` when its sockets fit a Unix socket path, else a short dir in /tmp named by root's hash."""
    d = Path(root) / "dp"
    if len(str(d)) <= SOCKET_BUDGET:
        return d
    digest = hashlib.sha1(str(Path(root).absolute()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"mockgpu-dp-{digest}"


def dra_dir_for(root: Path) -> Path:
    """The node's DRA directory (``plugins/``, ``plugins_registry/``, ``cdi/``): ``<root>/dra``, or a short dir
    in /tmp named by root's hash when the sockets would not fit a Unix socket path."""
    d = Path(root) / "dra"
    if len(str(d)) <= DRA_SOCKET_BUDGET:
        return d
    digest = hashlib.sha1(str(Path(root).absolute()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"mockgpu-dra-{digest}"


def write_client_kubeconfig(api: Any, path: Path) -> Path:
    """A kubeconfig (mode 0600) for the server, CA and credentials of a ``kubernetes.client.ApiClient``."""
    cfg = api.configuration
    cluster: dict[str, Any] = {"server": cfg.host}
    if cfg.ssl_ca_cert:
        cluster["certificate-authority"] = str(cfg.ssl_ca_cert)
    if not cfg.verify_ssl:
        cluster["insecure-skip-tls-verify"] = True
    user: dict[str, Any] = {}
    token = (cfg.api_key or {}).get("authorization")
    if token:
        user["token"] = token.removeprefix("Bearer ")
    if cfg.cert_file:
        user["client-certificate"], user["client-key"] = str(cfg.cert_file), str(cfg.key_file)
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "kubelet",
           "clusters": [{"name": "kubelet", "cluster": cluster}], "users": [{"name": "kubelet", "user": user}],
           "contexts": [{"name": "kubelet", "context": {"cluster": "kubelet", "user": "kubelet"}}]}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(doc, fh)
    return path


@dataclass(frozen=True)
class KubeletOptions:
    heartbeat: float = 10.0  # seconds between node status updates (upstream nodeStatusUpdateFrequency)
    stop_grace: float = 2.0  # seconds containers get when the kubelet itself stops
    run_plugin: bool = True  # start the device plugin process (False: a test runs its own)
    publish_interval: float = 1.0
    metrics_port: int | None = 0  # the dcgm-exporter endpoint's port on 127.0.0.1 (0: any free one; None: none)
    port: int = KUBELET_PORT  # advertised in status.daemonEndpoints (the upstream backend serves logs there)
    container_log_max_size: int = MAX_SIZE  # bytes (upstream containerLogMaxSize, 10Mi)
    container_log_max_files: int = MAX_FILES  # upstream containerLogMaxFiles
    plugin_backoff: BackOff | None = BackOff()  # restart delays of a dead device plugin / DRA driver; None: never
    gc_period: float = 60.0  # seconds between sweeps of deleted pods' dirs (upstream ContainerGCPeriod, 1 min)


class Kubelet:
    def __init__(self, api_client: Any, spec: ClusterSpec, node: str, *, spec_file: Path, root: Path,
                 state_dir: Path, options: KubeletOptions | None = None) -> None:
        """``api_client``: a ``kubernetes.client.ApiClient``, or a callable making one when the API side starts
        (so ``start_devices()`` can run while the client library is still being imported)."""
        self.options = options or KubeletOptions()
        self.spec, self.node = spec, spec.node(node)
        self.name = node
        self._api_client = api_client
        self.core: Any = None
        self.root = Path(root)
        self.plugin_dir = plugin_dir_for(self.root)
        self.state_dir = Path(state_dir)
        self.has_gpus = self.node.gpu is not None and self.node.gpu.count > 0
        self.inventory = node_inventory(spec, node) if self.has_gpus else None
        config = self.node.gpu.devicePluginConfig if self.has_gpus else None
        self.config = config
        dp_inventory = device_plugin_inventory(spec, node) if self.has_gpus else None
        self.managers = {rm.resource: rm for rm in resource_managers(dp_inventory, config)} \
            if config and dp_inventory and dp_inventory.gpus else {}
        self.expected = {r: len(rm.devices()) for r, rm in self.managers.items()}
        self.dm = DeviceManager(self.plugin_dir, on_change=self._devices_changed, active_pods=self._active_uids)
        private_dir(self.root / "runtime")  # 0700 from the start (node dir too); the sandbox's dirs are in it
        self.runtime = ProcessRuntime(self.root / "runtime", log_dir=self._log_dir, warm=True,
                                      log_rotation=LogRotation(self.options.container_log_max_size,
                                                               self.options.container_log_max_files))
        # the node's driver dir, where its workloads can reach it (a root kubelet's fallback layers move it)
        self.driver_dir = self.runtime.sandbox.workload_dir(self.root) / "driver"
        self.plugin = PluginProcess(Path(spec_file), node, self.plugin_dir, self.driver_dir,
                                    self.root / "device-plugin.log", backoff=self.options.plugin_backoff) \
            if self.has_gpus and dp_inventory.gpus and self.options.run_plugin else None
        self.spec_file = Path(spec_file)
        self.dra_gpus = dra_gpus(spec, node) if self.has_gpus else []
        self.dra_dir = dra_dir_for(self.root)
        self.dra = DRAManager(self.dra_dir / "cdi")
        self.plugin_watcher = PluginWatcher(self.dra_dir / "plugins_registry", {"DRAPlugin": self.dra}) \
            if self.dra_gpus else None
        self.dra_driver: PluginProcess | None = None
        self.events: EventRecorder | None = None
        self.publisher: GpuStatePublisher | None = None
        self.exporter = MetricsExporter(node, self.driver_dir, self.state_inputs, port=self.options.metrics_port) \
            if self.has_gpus and self.options.metrics_port is not None else None
        self.pods = PodSync(self)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._conditions: list[dict[str, Any]] | None = None
        self.posted_allocatable: dict[str, str] | None = None
        self.node_gone = False
        self._threads: list[threading.Thread] = []
        self._reflectors: list[Reflector] = []

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> Kubelet:
        return self.start_devices().start_api()

    def start_devices(self) -> Kubelet:
        """The node side: driver dir, device manager (kubelet.sock) and the device plugin process."""
        private_dir(self.root)  # the node's state; the workload-visible dirs in it are the sandbox's (bwrap
        # mounts them as root, so this 0700 dir does not keep the workload's uid out of them)
        if self.plugin_watcher is not None:
            private_dir(self.dra_dir)
        if self.inventory is not None:
            sandbox = self.runtime.sandbox  # the driver dir's directories belong to the workload user
            write_node_driver(self.driver_dir, self.inventory,
                              owner=(sandbox.uid, sandbox.gid) if sandbox.as_root else None)
            record_node_dirs(self.root, self.driver_dir)
        self.dm.start()
        if self.plugin is not None:
            self.plugin.start()
        if self.plugin_watcher is not None:
            self.plugin_watcher.start()
        return self

    def start_api(self) -> Kubelet:
        """The API side: register the Node, post status, watch pods and the Node, publish GPU state."""
        from kubernetes import client

        api = self._api_client if isinstance(self._api_client, client.ApiClient) else self._api_client()
        self.core = client.CoreV1Api(api)
        self.api = api
        self.leases = client.CoordinationV1Api(api)
        self.events = EventRecorder(self.core, self.name)
        if self.has_gpus:
            self.publisher = GpuStatePublisher(self.core, self.name, self.driver_dir, inputs=self.state_inputs,
                                               interval=self.options.publish_interval)
        if self.exporter is not None:
            self.exporter.start()  # before registering: the Node's annotation names its port
        self._register()
        self._spawn(self._status_loop, f"nodestatus-{self.name}")
        pods = functools.partial(self.core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={self.name}")
        nodes = functools.partial(self.core.list_node, field_selector=f"metadata.name={self.name}")
        sweep = functools.partial(self._spawn, self._gc_loop, f"podgc-{self.name}")
        self._reflectors = [Reflector(pods, self.pods.on_pod, name=f"pods-{self.name}", on_synced=sweep).start(),
                            Reflector(nodes, self._on_node, name=f"node-{self.name}").start()]
        if self.publisher is not None:
            self.publisher.start()
        if self.plugin_watcher is not None:
            self._start_dra_driver(api)
        return self

    def _start_dra_driver(self, api: Any) -> None:
        """The DRA driver process, once the Node exists (its ResourceSlices are owned by the Node)."""
        self.dra.get_claim = claim_getter(api)
        if not self.options.run_plugin:
            return
        kubeconfig = write_client_kubeconfig(api, self.root / "dra-driver.kubeconfig")
        self.dra_driver = PluginProcess.dra_driver(
            self.spec_file, self.name, self.dra_dir / "plugins", self.dra_dir / "plugins_registry",
            self.dra_dir / "cdi", self.driver_dir, kubeconfig, self.root / "dra-driver.log",
            backoff=self.options.plugin_backoff).start()

    def ready(self) -> bool:
        """Node registered, every device plugin resource advertised in full, the DRA driver (if any) registered."""
        alloc = self.posted_allocatable
        if self.dra_driver is not None and not self.dra.registered():
            return False
        return alloc is not None and all(alloc.get(r) == str(n) for r, n in self.expected.items())

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if time.monotonic() > deadline:
                tail = self.plugin.log_tail() if self.plugin else ""
                raise MockgpuError(f"node {self.name} not ready within {timeout:.0f}s: allocatable "
                                   f"{self.posted_allocatable}, expected {self.expected}; plugin log: {tail[-500:]}")
            if self.plugin is not None and not self.plugin.alive():
                raise MockgpuError(f"the device plugin of node {self.name} exited: {self.plugin.log_tail()[-500:]}")
            if self.dra_driver is not None and not self.dra_driver.alive():
                raise MockgpuError(f"the DRA driver of node {self.name} exited: {self.dra_driver.log_tail()[-500:]}")
            self._wake.set()
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop everything this kubelet started; no process survives. Device assignments stay checkpointed."""
        self._stop.set()
        self._wake.set()
        for r in self._reflectors:
            r.stop()
        self.pods.shutdown(self.options.stop_grace)
        if self.events is not None:
            self.events.stop()
        if self.publisher is not None:
            self.publisher.stop()
        if self.exporter is not None:
            self.exporter.stop()
        for t in self._threads:
            t.join(5)
        self.dm.stop()
        if self.plugin is not None:
            self.plugin.stop()
        if self.dra_driver is not None:
            self.dra_driver.stop()
        if self.plugin_watcher is not None:
            self.plugin_watcher.stop()
        self.dra.stop()

    def _gc_loop(self) -> None:
        """Sweep the dirs of deleted pods once this node's pods are listed, then every ``gc_period``."""
        while not self._stop.is_set():
            try:
                self.pods.sweep()
            except Exception:  # the next period sweeps again
                log.exception("node %s: pod dirs not swept", self.name)
            if self._stop.wait(self.options.gc_period):
                return

    def _spawn(self, target, name: str) -> None:  # noqa: ANN001
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    # -- the Node object ---------------------------------------------------------------------------
    def _register(self) -> None:
        from kubernetes.client.exceptions import ApiException

        cap, alloc = self.dm.node_resources()
        body = node_object(self.spec, self.node, cap, alloc, kubelet_port=self.options.port)
        if self.exporter is not None:
            body["metadata"]["annotations"][METRICS_ANNOTATION] = self.exporter.url
        try:
            self.core.create_node(body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            patch = {"metadata": {"labels": body["metadata"]["labels"],
                                  "annotations": body["metadata"]["annotations"]}, "spec": body["spec"]}
            self.core.patch_node(self.name, patch, _content_type="application/strategic-merge-patch+json")
        self._post_status()

    def _post_status(self) -> None:
        from kubernetes.client.exceptions import ApiException

        cap, alloc = self.dm.node_resources()
        capacity, allocatable = resources(self.node, cap, alloc)
        self._conditions = conditions(self._conditions)
        body = {"status": {"capacity": capacity, "allocatable": allocatable, "conditions": self._conditions}}
        try:
            self.core.patch_node_status(self.name, body, _content_type="application/strategic-merge-patch+json")
        except ApiException as exc:
            if exc.status == 404:
                self.pods.node_deleted()
                return
            raise
        self.posted_allocatable = allocatable
        self._renew_lease()

    def _renew_lease(self) -> None:
        """Renew the node's Lease in kube-node-lease, as the kubelet's node-lease controller does."""
        from kubernetes.client.exceptions import ApiException
        now = micro_time()
        body: dict[str, Any] = {"spec": {"holderIdentity": self.name, "leaseDurationSeconds": NODE_LEASE_SECONDS,
                                         "renewTime": now}}
        try:
            self.leases.patch_namespaced_lease(self.name, NODE_LEASE_NAMESPACE, body)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body["metadata"] = {"name": self.name, "namespace": NODE_LEASE_NAMESPACE}
            self.leases.create_namespaced_lease(NODE_LEASE_NAMESPACE, body)

    def _status_loop(self) -> None:
        while not self._stop.is_set() and not self.node_gone:
            self._wake.wait(self.options.heartbeat)
            self._wake.clear()
            if self._stop.is_set() or self.node_gone:
                return
            try:
                self._post_status()
            except Exception as exc:  # the server may be restarting; the next heartbeat retries
                log.debug("node %s status update failed: %s", self.name, exc)

    def _devices_changed(self) -> None:
        self._wake.set()
        if self.publisher is not None:
            self.publisher.poke()
        self.pods.device_health_changed(self.dm)

    def _on_node(self, etype: str, obj: dict[str, Any]) -> None:
        if etype == "DELETED" and obj.get("metadata", {}).get("name") == self.name and not self._stop.is_set():
            threading.Thread(target=self.pods.node_deleted, name=f"nodegone-{self.name}", daemon=True).start()

    # -- helpers for the pod side ------------------------------------------------------------------
    def _log_dir(self, spec: ContainerSpec) -> Path:
        return container_log_dir(self.state_dir, spec.namespace, spec.pod_name, spec.pod_uid, spec.name)

    def _active_uids(self) -> list[str]:
        return self.pods.active_uids()

    def device_uuid(self, resource: str, device_id: str) -> str:
        rm = self.managers.get(resource)
        try:
            return rm.device(device_id).uuid if rm else device_id.split("::", 1)[0]
        except Exception:
            return device_id.split("::", 1)[0]

    def state_inputs(self) -> StateInputs:
        active = set(self.pods.active_uids())
        names = self.pods.names()
        allocs = []
        for (uid, container), by_resource in sorted(self.dm.pod_devices().items()):
            if uid not in active or uid not in names:
                continue
            ns, pod = names[uid]
            for resource, ids in sorted(by_resource.items()):
                allocs.append(DeviceAllocation(ns, pod, container, resource, tuple(ids),
                                               tuple(self.device_uuid(resource, i) for i in ids)))
        allocs.extend(self._claim_allocations(active, names))
        replicas = {}
        if self.inventory is not None and self.config is not None:
            n = self.config.replicas_for("nvidia.com/gpu")
            replicas = {g.uuid: n for g in self.inventory.gpus if not g.mig}
        return StateInputs(tuple(allocs), replicas)

    def _claim_allocations(self, active: set[str], names: dict[str, tuple[str, str]]) -> list[DeviceAllocation]:
        """Devices of prepared ResourceClaims, per container naming the claim: resource ``resourceclaims/<claim>``
        (how the pod inspector says which claim gave which device), device names and their UUIDs."""
        if self.inventory is None or not self.dra_gpus:
            return []

        uuids = device_uuids(self.inventory, self.dra_gpus)
        out = []
        for uid, pod in self.pods.pod_objects().items():
            if uid not in active or uid not in names:
                continue
            ns, name = names[uid]
            for c in pod["spec"].get("containers") or []:
                by_claim: dict[str, list[str]] = {}
                for claim, d in self.dra.container_devices(pod, c):
                    if d.driver == DRIVER and d.pool == self.name and d.device in uuids:
                        by_claim.setdefault(claim, []).append(d.device)
                for claim, devs in sorted(by_claim.items()):
                    out.append(DeviceAllocation(ns, name, c["name"], f"resourceclaims/{claim}", tuple(devs),
                                                tuple(uuids[d] for d in devs)))
        return out
