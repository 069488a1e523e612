"""One pod on one node, as the kubelet runs it once the API server has bound it here.

``PodWorker(pod, ...)`` takes the Pod object (a dict as the API returns it) and, on ``start()``:
admits it (device allocation per container, init containers first; an ``AdmissionError`` fails the
pod with reason ``UnexpectedAdmissionError`` and is not retried), runs the init containers one by
one to success, then starts every app container with its device envs and mounts, restarts exited
containers per ``restartPolicy`` with the crash-loop back-off, and reports each change through
``on_status(status)`` (the Pod ``status`` object) and ``on_event(PodEvent)`` (kubelet event reasons
and messages: Pulled, Created, Started, Killing, BackOff, Failed). ``terminate(grace)`` stops the
containers (SIGTERM, SIGKILL after the grace period), frees the pod's devices and reports the
terminal phase. The API-server side (watching pods, posting status and events) is the caller's.

A pod with ``spec.resourceClaims`` has them prepared through the kubelet's DRA manager (``dra``) after
admission and before any container starts; until that succeeds the pod stays Pending and each new failure is
a ``FailedPrepareDynamicResources`` event (upstream's reason and message), retried with a back-off up to
``DRA_RETRY_MAX`` seconds, re-reading the pod (``get_pod``) for claim names the claim controller records in
its status. Each container gets the env of the CDI devices of the claims it names in ``resources.claims``.
The claims are unprepared once the containers are stopped (deletion) or the pod has finished.

Simplified: env ``valueFrom`` supports ``fieldRef`` only (secrets and config maps need the API
server: such a container waits with ``CreateContainerConfigError``); no probes (a running container
is ready); no sidecar (restartable init) containers; no ephemeral containers; images are names only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.kubelet.allocation import AdmissionError
from mockgpu.control.kubelet.container import ContainerSpec, ContainerStatus
from mockgpu.control.kubelet.devicemanager import DeviceManager
from mockgpu.control.kubelet.dramanager import DRAError, DRAManager
from mockgpu.control.kubelet.podenv import ConfigError, resolve_env
from mockgpu.control.kubelet.podevices import ContainerAllocation
from mockgpu.control.kubelet.podstatus import Conditions, ContainerRecord, pod_phase
from mockgpu.control.kubelet.restart import CrashLoopBackoff, crashloop_message, should_restart
from mockgpu.control.kubelet.runtime import ProcessRuntime

log = logging.getLogger(__name__)
DEFAULT_GRACE = 30.0
DRA_RETRY_MAX = 5.0  # seconds between NodePrepareResources attempts at most


@dataclass(frozen=True)
class PodEvent:
    type: str  # Normal or Warning
    reason: str
    message: str
    field_path: str = ""  # e.g. spec.containers{main}


class PodWorker:
    def __init__(
        self,
        pod: dict,
        *,
        node_name: str,
        runtime: ProcessRuntime,
        devices: DeviceManager | None = None,
        backoff: CrashLoopBackoff | None = None,
        on_status: Callable[[dict], None] | None = None,
        on_event: Callable[[PodEvent], None] | None = None,
        dra: DRAManager | None = None,
        get_pod: Callable[[], dict] | None = None,
    ) -> None:
        self.pod = pod
        meta, spec = pod["metadata"], pod["spec"]
        self.uid, self.name, self.namespace = meta["uid"], meta["name"], meta.get("namespace", "default")
        self.policy = spec.get("restartPolicy", "Always")
        self.node_name = node_name
        self.runtime, self.devices = runtime, devices
        self.dra = dra if dra is not None and DRAManager.has_claims(pod) else None
        self.get_pod = get_pod
        self._dra_prepared = False
        self._dra_lock = threading.Lock()
        self.backoff = backoff or CrashLoopBackoff()
        self.on_status, self.on_event = on_status, on_event
        self.init = [
            ContainerRecord(c["name"], c.get("image", ""), init=True) for c in spec.get("initContainers") or []
        ]
        self.app = [ContainerRecord(c["name"], c.get("image", "")) for c in spec["containers"]]
        if self.init:
            for r in self.app:
                r.waiting = ("PodInitializing", "")
        self._specs = {c["name"]: c for c in [*(spec.get("initContainers") or []), *spec["containers"]]}
        self._alloc: dict[str, ContainerAllocation] = {}
        self._lock = threading.RLock()
        self._publish_lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conditions = Conditions()
        self._failure: tuple[str, str] | None = None  # pod-level (reason, message)
        self._init_failed = False
        self._terminal = False
        self._start_time = rfc3339()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        t = threading.Thread(target=self._run, name=f"pod-{self.name}", daemon=True)
        t.start()
        self._threads.append(t)

    def terminate(self, grace: float | None = None) -> dict:
        """Stop every container (graceful, then SIGKILL), free devices; returns the final status."""
        if grace is None:
            grace = float(self.pod["spec"].get("terminationGracePeriodSeconds", DEFAULT_GRACE))
        self._stopping.set()
        for r in [*self.init, *self.app]:
            if r.running():
                self._event("Normal", "Killing", f"Stopping container {r.name}", r)
        deadline = time.monotonic() + grace + 10
        while True:  # again until every thread is done: one may have been starting a container
            self.runtime.stop_pod(self.uid, grace)
            for t in list(self._threads):
                t.join(0.2)
            if not any(t.is_alive() for t in self._threads) or time.monotonic() > deadline:
                break
        self._unprepare()
        if self.devices is not None:
            self.devices.remove_pod(self.uid)
        with self._lock:
            self._terminal = True
        return self._publish()

    def abandon(self) -> None:
        """Stop restarting and reporting without freeing devices: the kubelet is shutting down, and its
        checkpoint keeps this pod's devices for the next kubelet. The caller stops the processes."""
        self.on_status, self.on_event = None, None
        self._stopping.set()

    def join(self, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        for t in list(self._threads):
            t.join(max(0.0, deadline - time.monotonic()))

    def wait(self, predicate: Callable[[dict], bool], timeout: float = 30.0) -> dict:
        """Block until predicate(status) holds (for tests and simple callers)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.status()
            if predicate(st):
                return st
            time.sleep(0.05)
        raise TimeoutError(f"pod {self.name}: condition not reached in {timeout}s; status {self.status()}")

    # -- the pod's life ----------------------------------------------------------------------
    def _run(self) -> None:
        if not self._admit():
            return
        if not self._prepare_claims():
            return
        self._conditions.set("PodReadyToStartContainers", True)
        for r in self.init:
            if not self._run_container(r):
                self._init_failed = self.policy == "Never" or self._stopping.is_set()
                self._publish()
                return
        self._conditions.set("Initialized", True)
        if self._stopping.is_set():
            return
        for r in self.app:
            t = threading.Thread(target=self._run_container, args=(r,), name=f"ctr-{self.name}-{r.name}", daemon=True)
            t.start()
            self._threads.append(t)
        self._publish()

    def _admit(self) -> bool:
        if self.devices is None:
            return True
        try:
            for c in [*(self.pod["spec"].get("initContainers") or []), *self.pod["spec"]["containers"]]:
                limits = ((c.get("resources") or {}).get("limits")) or {}
                self._alloc[c["name"]] = self.devices.allocate(self.uid, c["name"], limits)
        except AdmissionError as exc:
            self.devices.remove_pod(self.uid)
            self._failure = (exc.reason, exc.message)
            self._event("Warning", exc.reason, exc.message)
            self._publish()
            return False
        return True

    def _prepare_claims(self) -> bool:
        """Prepare the pod's ResourceClaims, retrying until it works; False if the pod stops first."""
        if self.dra is None:
            return True
        last, delay = "", 0.25
        while not self._stopping.is_set():
            try:
                pod = self.get_pod() if self.get_pod is not None else self.pod
                with self._dra_lock:
                    self._dra_prepared = True  # from here on, unprepare (prepare may have partly succeeded)
                    self.dra.prepare(pod)
                self.pod = pod
                return True
            except DRAError as exc:
                msg = f"Failed to prepare dynamic resources: {exc}"
            except Exception as exc:  # the API server went away for a moment
                msg = f"Failed to prepare dynamic resources: {exc}"
            if msg != last:
                self._event("Warning", "FailedPrepareDynamicResources", msg)
                last = msg
            if self._stopping.wait(delay):
                break
            delay = min(delay * 2, DRA_RETRY_MAX)
        return False

    def _unprepare(self) -> None:
        """NodeUnprepareResources for the pod's claims, once (after its containers stopped)."""
        if self.dra is None:
            return
        with self._dra_lock:
            if not self._dra_prepared:
                return
            try:
                self.dra.unprepare(self.pod)
                self._dra_prepared = False
            except DRAError as exc:  # upstream logs it and retries on the next sync; mockgpu logs it
                log.warning("pod %s/%s: %s", self.namespace, self.name, exc)

    def _container_spec(self, r: ContainerRecord) -> ContainerSpec:
        c = self._specs[r.name]
        alloc = self._alloc.get(r.name) or ContainerAllocation()
        envs, mounts = dict(alloc.envs), list(alloc.mounts)
        if self.dra is not None:
            try:
                cdi_env, cdi_mounts = self.dra.container_edits(self.pod, c)
            except DRAError as exc:
                raise ConfigError(str(exc)) from None
            envs.update(cdi_env)
            mounts += [m for m in cdi_mounts if m.container_path not in {x.container_path for x in mounts}]
        return ContainerSpec(
            pod_uid=self.uid,
            pod_name=self.name,
            namespace=self.namespace,
            name=r.name,
            image=r.image,
            command=tuple(c.get("command") or ()),
            args=tuple(c.get("args") or ()),
            env=resolve_env(c, self.pod, self.node_name),
            device_envs=envs,
            mounts=tuple(mounts),
            working_dir=c.get("workingDir", ""),
            restart_count=r.restart_count,
        )

    def _run_container(self, r: ContainerRecord) -> bool:
        """Run (and restart per policy) until it stays down; True if its last run exited 0."""
        while not self._stopping.is_set():
            st = self._start(r)
            if st is None:  # config error: wait and retry, as the kubelet's sync loop does
                if self._stopping.wait(self.backoff.wait_seconds(10)):
                    return False
                continue
            if st.state == "running":
                st = self.runtime.wait(self.uid, r.name)
            with self._lock:
                r.current, r.waiting = st, None
            self._publish()
            if self._stopping.is_set() or not should_restart(self.policy, st.exit_code):
                return st.exit_code == 0
            if r.init and st.exit_code == 0:
                return True
            delay = self.backoff.on_exit((self.uid, r.name))
            with self._lock:
                r.last_terminated, r.current = st, None
                r.restart_count += 1
                if delay:
                    msg = crashloop_message(delay, r.name, self.name, self.namespace, self.uid)
                    r.waiting = ("CrashLoopBackOff", msg)
            if delay:
                self._event(
                    "Warning",
                    "BackOff",
                    f"Back-off restarting failed container {r.name} in pod {self.name}_{self.namespace}({self.uid})",
                    r,
                )
                self._publish()
                if self._stopping.wait(self.backoff.wait_seconds(delay)):
                    return False
        return False

    def _start(self, r: ContainerRecord) -> ContainerStatus | None:
        try:
            spec = self._container_spec(r)
        except ConfigError as exc:
            with self._lock:
                r.waiting = ("CreateContainerConfigError", str(exc))
            self._event("Warning", "Failed", f"Error: {exc}", r)
            self._publish()
            return None
        if r.restart_count == 0:
            self._event("Normal", "Pulled", f'Container image "{r.image}" already present on machine', r)
        st = self.runtime.start(spec)
        if st.reason == "StartError":
            self._event("Warning", "Failed", f"Error: {st.message}", r)
        else:
            self._event("Normal", "Created", f"Created container: {r.name}", r)
            self._event("Normal", "Started", f"Started container {r.name}", r)
            with self._lock:
                r.current, r.waiting = st, None
            self._publish()
        return st

    # -- reporting ---------------------------------------------------------------------------
    def status(self) -> dict:
        with self._lock:
            if self._failure is not None:
                return {
                    "phase": "Failed",
                    "reason": self._failure[0],
                    "message": self._failure[1],
                    "startTime": self._start_time,
                }
            init_done = all(r.current is not None and r.current.exit_code == 0 and r.waiting is None for r in self.init)
            if self._init_failed:
                phase = "Failed"
            elif not init_done:
                phase = "Failed" if self._terminal else "Pending"
            else:
                phase = pod_phase(self.app, self.policy, terminal=self._terminal)
            ready = init_done and all(r.running() for r in self.app)
            self._conditions.set("Initialized", init_done)
            self._conditions.set("ContainersReady", ready)
            self._conditions.set("Ready", ready)
            not_ready = ",".join(r.name for r in self.app if not r.running())
            out = {
                "phase": phase,
                "conditions": self._conditions.to_k8s(
                    {
                        "Initialized": "ContainersNotInitialized",
                        "ContainersReady": "ContainersNotReady",
                        "Ready": "ContainersNotReady",
                    }
                ),
                "hostIP": "127.0.0.1",
                "podIP": "127.0.0.1",
                "startTime": self._start_time,
                "containerStatuses": [self._with_device_health(r.to_k8s()) for r in self.app],
            }
            if not_ready:
                for c in out["conditions"]:
                    if c["status"] == "False" and c["type"] in ("ContainersReady", "Ready"):
                        c["message"] = f"containers with unready status: [{not_ready.replace(',', ' ')}]"
            if self.init:
                out["initContainerStatuses"] = [r.to_k8s() for r in self.init]
            return out

    def _with_device_health(self, cs: dict) -> dict:
        """``allocatedResourcesStatus`` for a container holding device-plugin devices (the kubelet's
        ``UpdateAllocatedResourcesStatus``, run on every status it generates; app containers only, as upstream)."""
        if self.devices is not None:
            health = self.devices.allocated_resources_status(self.uid, cs["name"])
            if health:
                cs["allocatedResourcesStatus"] = health
        return cs

    def container_names(self) -> list[str]:
        return [r.name for r in self.app]

    def republish(self) -> None:
        """Write the status again (a device it holds changed health: upstream's device manager sends the pod's UID
        on its update channel and the pod is synced)."""
        self._publish()

    def _publish(self) -> dict:
        with self._publish_lock:  # callers see updates one at a time, in order
            st = self.status()
            if self.on_status:
                self.on_status(st)
        if st.get("phase") in ("Succeeded", "Failed") and self._dra_prepared and not self._terminal:
            threading.Thread(target=self._unprepare, name=f"unprepare-{self.name}", daemon=True).start()
        return st

    def _event(self, etype: str, reason: str, message: str, r: ContainerRecord | None = None) -> None:
        if self.on_event:
            where = f"spec.{'initContainers' if r.init else 'containers'}{{{r.name}}}" if r else ""
            self.on_event(PodEvent(etype, reason, message, where))
