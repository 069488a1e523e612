"""The kubelet's pod side: which pods run here, their workers, status writes and deletion.

``PodSync(kubelet).on_pod(event_type, pod)`` is the handler of the kubelet's pod watch
(``spec.nodeName=<node>``):
* a new non-terminal pod gets a ``PodWorker`` (admission through the device manager, then containers);
  every status it reports is written with a strategic-merge patch of ``pods/<name>/status``;
* a pod with ``deletionTimestamp`` has its containers stopped with ``deletionGracePeriodSeconds``
  (SIGTERM, then SIGKILL), its devices freed, its final status written, and is then deleted with
  ``gracePeriodSeconds=0`` (uid precondition), as the kubelet's status manager does;
* a pod removed outright (force delete) has its containers killed at once;
* once the API has deleted a pod and its containers are stopped, the kubelet forgets it (``_forget``): its
  log dir (``podlogsgc``, upstream's ``evictPodLogsDirectories``), its containers' scratch homes and records
  (``ProcessRuntime.remove_pod``) and its entries here (``phases``, ``_terminating``), so what a node keeps
  is bounded by the pods that exist, not by every pod it ever ran. A DELETED missed while the watch was down
  comes from the re-list (``apiwatch`` reports the pods that vanished); ``sweep`` (at kubelet start, once
  this node's pods are listed, then every ``KubeletOptions.gc_period``, upstream's ``ContainerGCPeriod``)
  removes the log and scratch dirs of pods the API no longer has, deleted while no kubelet watched.
Pods found at start that a previous kubelet had started (they have container statuses) lost their
processes with it: under ``restartPolicy: Never`` they fail with the containers terminated as
``ContainerStatusUnknown`` (exit 137, upstream's reason and message for a container that vanished);
otherwise a new worker restarts them with ``restartCount`` + 1, keeping their checkpointed devices.
A deleted Node (``node_deleted``): the kubelet does what upstream's pod garbage collector then does to
the orphaned pods, at once instead of after its 40 s quarantine: each gets condition ``DisruptionTarget``
(reason ``DeletionByPodGC``, message ``PodGC: node no longer exists``) and phase Failed, its containers
are killed, and it is deleted with grace 0; the kubelet stops posting status and its GPU-state ConfigMap is
removed. It does not re-register the Node (upstream's kubelet only registers at start).
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any, Protocol

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.kubelet import podlogsgc
from mockgpu.control.kubelet.devicemanager import DeviceManager
from mockgpu.control.kubelet.dramanager import DRAManager
from mockgpu.control.kubelet.events import EventRecorder
from mockgpu.control.kubelet.podworker import PodEvent, PodWorker
from mockgpu.control.kubelet.publisher import GpuStatePublisher
from mockgpu.control.kubelet.runtime import ProcessRuntime


class Kubelet(Protocol):
    """What pod sync reads of its node's kubelet (``kubelet.Kubelet`` is one; it owns the ``PodSync``)."""

    name: str
    core: Any  # the official client's CoreV1Api
    dm: DeviceManager
    dra: DRAManager
    events: EventRecorder | None
    publisher: GpuStatePublisher | None
    runtime: ProcessRuntime
    state_dir: Path
    node_gone: bool

log = logging.getLogger(__name__)
SMP = "application/strategic-merge-patch+json"
TERMINAL = ("Succeeded", "Failed")
VANISHED = {"exitCode": 137, "reason": "ContainerStatusUnknown",
            "message": "The container could not be located when the pod was terminated"}


def _ns_name(pod: dict[str, Any]) -> tuple[str, str]:
    return pod["metadata"].get("namespace", "default"), pod["metadata"]["name"]


class PodSync:
    def __init__(self, kubelet: Kubelet) -> None:
        self.k = kubelet
        self._lock = threading.RLock()
        self.workers: dict[str, PodWorker] = {}
        self.pods: dict[str, dict[str, Any]] = {}  # uid -> latest object
        self.phases: dict[str, str] = {}  # uid -> last phase written
        self._terminating: set[str] = set()
        self._device_health: dict[str, dict[str, Any]] = {}  # uid -> container -> allocatedResourcesStatus
        self._closed = False

    # -- what the device manager and publisher ask -------------------------------------------------
    def active_uids(self) -> list[str]:
        with self._lock:
            return [u for u in self.pods if self.phases.get(u) not in TERMINAL]

    def names(self) -> dict[str, tuple[str, str]]:
        with self._lock:
            return {u: _ns_name(p) for u, p in self.pods.items()}

    def pod_objects(self) -> dict[str, dict[str, Any]]:
        """uid -> the pod object its worker runs (with the claim statuses it prepared with)."""
        with self._lock:
            out = dict(self.pods)
            out.update({u: w.pod for u, w in self.workers.items()})
            return out

    def device_health_changed(self, dm: Any) -> None:
        """A plugin's device list changed: the pods whose containers hold a device whose health changed get their
        status (``allocatedResourcesStatus``) written again, off the plugin's stream thread (upstream: the device
        manager's update channel, then a pod sync)."""
        with self._lock:
            workers = dict(self.workers)
        stale = []
        for uid, w in workers.items():
            now = {c: dm.allocated_resources_status(uid, c) for c in w.container_names()}
            if any(now.values()) and now != self._device_health.get(uid):
                self._device_health[uid] = now
                stale.append(w)
        for w in stale:
            threading.Thread(target=w.republish, name=f"health-{w.name}", daemon=True).start()

    # -- the watch handler -------------------------------------------------------------------------
    def on_pod(self, etype: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        if etype == "DELETED":
            with self._lock:
                w = self.workers.pop(uid, None)
                self.pods.pop(uid, None)
            if w is not None:
                w.on_status = None
                threading.Thread(target=self._finish, args=(w, 0.0, True), daemon=True).start()
            else:
                self.k.dm.remove_pod(uid)
                self._unprepare(pod)
                self._forget(pod)
            self._changed()
            return
        with self._lock:
            if self._closed:
                return
            self.pods[uid] = pod
            if meta.get("deletionTimestamp"):
                if uid in self._terminating:
                    return
                self._terminating.add(uid)
                threading.Thread(target=self._kill_and_delete, args=(pod,), name=f"kill-{meta['name']}",
                                 daemon=True).start()
                return
            phase = (pod.get("status") or {}).get("phase")
            if uid in self.workers:
                return
            if phase in TERMINAL:
                self.phases[uid] = phase
                return
            self._start_worker(pod)

    def _start_worker(self, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        previous = {cs.get("name"): cs for cs in (pod.get("status") or {}).get("containerStatuses") or []}
        started = {n: cs for n, cs in previous.items() if (cs.get("state") or {}).keys() & {"running", "terminated"}}
        if started and pod["spec"].get("restartPolicy", "Always") == "Never":
            self._fail_vanished(pod, previous)
            return
        w = PodWorker(pod, node_name=self.k.name, runtime=self.k.runtime, devices=self.k.dm,
                      on_status=lambda st, p=pod: self._write_status(p, st),
                      on_event=lambda ev, p=pod: self._event(p, ev),
                      dra=self.k.dra, get_pod=lambda p=pod: self._read_pod(p))
        for r in w.app:  # a previous kubelet ran these: this is their next run
            if r.name in started:
                r.restart_count = int(started[r.name].get("restartCount") or 0) + 1
        self.workers[uid] = w
        self.phases[uid] = "Pending"
        w.start()

    def _read_pod(self, pod: dict[str, Any]) -> dict[str, Any]:
        """The pod as the API has it now (its claim statuses may be newer than the watch event's)."""
        ns, name = _ns_name(pod)
        return json.loads(self.k.core.read_namespaced_pod(name, ns, _preload_content=False).data)

    def _unprepare(self, pod: dict[str, Any]) -> None:
        """Unprepare the claims of a pod that has no worker (any it had are already unprepared)."""
        try:
            self.k.dra.unprepare(pod)
        except Exception as exc:
            log.warning("pod %s/%s: %s", *_ns_name(pod), exc)

    def _fail_vanished(self, pod: dict[str, Any], previous: dict[str, dict[str, Any]]) -> None:
        now = rfc3339()
        statuses = []
        for cs in previous.values():
            state = cs.get("state") or {}
            if "running" in state:
                cs = {**cs, "state": {"terminated": {**VANISHED, "startedAt": state["running"].get("startedAt"),
                                                     "finishedAt": now}}, "ready": False, "started": False}
            statuses.append(cs)
        uid = pod["metadata"]["uid"]
        self.phases[uid] = "Failed"
        self.k.dm.remove_pod(uid)
        self._patch(pod, {"phase": "Failed", "containerStatuses": statuses})

    # -- status and events ---------------------------------------------------------------------------
    def _write_status(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        with self._lock:
            if self._closed or uid not in self.workers:  # deleted: nothing to report, nothing to keep
                return
            old = self.phases.get(uid)
            self.phases[uid] = status.get("phase", old or "Pending")
        self._patch(pod, status)
        if status.get("phase") != old:
            self._changed()

    def _patch(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        from kubernetes.client.exceptions import ApiException

        ns, name = _ns_name(pod)
        try:
            self.k.core.patch_namespaced_pod_status(name, ns, {"status": status}, _content_type=SMP)
        except ApiException as exc:
            if exc.status not in (404, 409):
                log.warning("status of pod %s/%s not written: %s %s", ns, name, exc.status, exc.reason)
        except Exception as exc:  # server going away during shutdown
            log.debug("status of pod %s/%s not written: %s", ns, name, exc)

    def _event(self, pod: dict[str, Any], ev: PodEvent) -> None:
        self.k.events.record(pod, ev.type, ev.reason, ev.message, ev.field_path)

    def _changed(self) -> None:
        if self.k.publisher is not None:
            self.k.publisher.poke()

    # -- deletion ------------------------------------------------------------------------------------
    def _finish(self, w: PodWorker, grace: float, deleted: bool = False) -> None:
        try:
            w.terminate(grace)
            if deleted:  # gone from the API, containers stopped: nobody can ask for its logs now
                self._forget(w.pod)
        finally:
            self._changed()

    def _forget(self, pod: dict[str, Any]) -> None:
        """The API has deleted the pod and its containers are stopped: drop everything kept for it."""
        ns, name = _ns_name(pod)
        uid = pod["metadata"]["uid"]
        with self._lock:
            if uid in self.workers or uid in self.pods:  # a pod of this uid came back (a re-list raced us)
                return
            self.phases.pop(uid, None)
            self._terminating.discard(uid)
            self._device_health.pop(uid, None)
        self.k.runtime.remove_pod(uid)
        podlogsgc.remove_pod_log_dir(self.k.state_dir, ns, name, uid)

    def sweep(self) -> tuple[list[str], list[str]]:
        """Remove the log dirs and scratch dirs of pods the API no longer has (see ``podlogsgc``); the log dir
        names and scratch pod uids removed."""
        names = podlogsgc.log_dir_names(self.k.state_dir)  # before the pod list, never after
        scratch = self.k.runtime.scratch_pod_uids()
        if not names and not scratch:
            return [], []
        try:  # cluster-wide: every node's pods log under the same <state>/logs
            items = json.loads(self.k.core.list_pod_for_all_namespaces(_preload_content=False).data)["items"]
        except Exception as exc:  # the next sweep tries again
            log.warning("pod dirs not swept: %s", exc)
            return [], []
        existing = {(p.get("metadata") or {}).get("uid") for p in items}
        with self._lock:  # deleted but still stopping here: its DELETED event removes it once stopped
            existing.update(self.workers)
            existing.update(self._terminating)
        logs = podlogsgc.sweep(self.k.state_dir, names, existing)
        homes = self.k.runtime.sweep_scratch(scratch, existing)
        if logs or homes:
            log.info("node %s: removed the log dirs of %d and the scratch dirs of %d deleted pods", self.k.name,
                     len(logs), len(homes))
        return logs, homes

    def _kill_and_delete(self, pod: dict[str, Any]) -> None:
        from kubernetes.client.exceptions import ApiException

        meta = pod["metadata"]
        uid = meta["uid"]
        grace = float(meta.get("deletionGracePeriodSeconds") or 0)
        with self._lock:
            w = self.workers.get(uid)
        if w is not None:
            self._finish(w, grace)
        else:
            self.k.dm.remove_pod(uid)
            self._unprepare(pod)
        with self._lock:
            if uid in self.pods:  # not deleted meanwhile (a DELETED forgets it)
                self.phases[uid] = self.phases.get(uid) if self.phases.get(uid) in TERMINAL else "Failed"
        ns, name = _ns_name(pod)
        try:
            self.k.core.delete_namespaced_pod(name, ns, grace_period_seconds=0,
                                              body={"gracePeriodSeconds": 0, "preconditions": {"uid": uid}})
        except ApiException as exc:
            if exc.status not in (404, 409):
                log.warning("pod %s/%s not deleted: %s %s", ns, name, exc.status, exc.reason)
        except Exception as exc:
            log.debug("pod %s/%s not deleted: %s", ns, name, exc)

    def node_deleted(self) -> None:
        """The Node object is gone: act as pod GC does for orphaned pods (see the module docstring)."""
        from kubernetes.client.exceptions import ApiException

        if self.k.node_gone:
            return
        self.k.node_gone = True
        log.warning("node %s was deleted: stopping and deleting its pods as pod GC would", self.k.name)
        with self._lock:
            pods = list(self.pods.values())
            workers = dict(self.workers)
        for pod in pods:
            uid = pod["metadata"]["uid"]
            w = workers.get(uid)
            if w is not None:
                w.on_status = None
                w.terminate(0)
            else:
                self.k.dm.remove_pod(uid)
            if (pod.get("status") or {}).get("phase") not in TERMINAL:
                cond = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                        "message": "PodGC: node no longer exists", "lastTransitionTime": rfc3339()}
                self._patch(pod, {"phase": "Failed", "conditions": [cond]})
            ns, name = _ns_name(pod)
            try:
                self.k.core.delete_namespaced_pod(name, ns, grace_period_seconds=0,
                                                  body={"gracePeriodSeconds": 0, "preconditions": {"uid": uid}})
            except ApiException:
                pass
        if self.k.publisher is not None:
            self.k.publisher.stop()
            try:
                self.k.publisher.delete()
            except Exception as exc:
                log.debug("gpu-state ConfigMap of %s not deleted: %s", self.k.name, exc)

    # -- kubelet shutdown ------------------------------------------------------------------------------
    def shutdown(self, grace: float) -> None:
        """Kill every container without reporting or freeing devices (they stay checkpointed)."""
        with self._lock:
            self._closed = True
            workers = list(self.workers.values())
        for w in workers:
            w.abandon()
        stoppers = [threading.Thread(target=self.k.runtime.stop_pod, args=(w.uid, grace)) for w in workers]
        for t in stoppers:  # all pods at once: shutdown takes one grace period, not one per pod
            t.start()
        for t in stoppers:
            t.join(grace + 10)
        for w in workers:
            w.join(grace + 5)
        self.k.runtime.stop_all(0)  # one may have been starting while we stopped the others
