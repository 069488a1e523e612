"""The embedded kube-scheduler: watches pods and nodes, schedules one pod at a time, binds through the API.

One thread owns all state (the cache of nodes and assigned pods, the scheduling queue); the two informers
and the writer threads talk to it through one inbox. A cycle is one ``mockgpu.sched.schedule_one`` call on
the cached ``NodeInfo`` list (updated incrementally from the watches, never rebuilt). On success the pod is
assumed on its node at once — the next cycle already sees it, so back-to-back submissions never overcommit —
and a writer binds it (``pods/binding`` carrying the result annotations, which the API server copies onto
the pod as upstream's binding does) and posts the ``Scheduled`` event. On failure the pod gets
``PodScheduled=False`` and the filter/score annotations, a ``FailedScheduling`` event (aggregated), and waits
in the queue for a cluster event or its backoff. See ``mockgpu/sched/README.md`` for the design note.

DRA: four more informers (``resource.k8s.io/v1`` deviceclasses, resourceslices, resourceclaims, devicetaintrules;
optional, so an API server without that group still works) feed ``dra.DraStore``, whose snapshot each cycle hands to
DynamicResources. A pod whose claims do not all exist is held by PreEnqueue (nothing written, as upstream) until a
claim event. A chosen pod's claims are assumed allocated at once; the writer first writes each claim's
``status.allocation`` and ``reservedFor`` (PreBind), then binds; the pod also gets ``mockgpu.io/dra-allocation``
(claim name → ``[{request, device}]``).

Simplified (documented in the README too): preemption deletes the victims (after marking them
``DisruptionTarget``) and nominates the node, but PodDisruptionBudgets are ignored and nominated pods are
added to their node for filtering and scoring alike; queueing hints are one rule (node added, or its
allocatable/labels/taints/unschedulable changed; an assigned pod deleted or terminated).
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import micro_time
from mockgpu.control.scheduler import failure
from mockgpu.control.scheduler.api import RESOURCE_V1, RawApi
from mockgpu.control.scheduler.cache import Cache, is_terminated, node_name_of
from mockgpu.control.scheduler.dra import KINDS as DRA_KINDS
from mockgpu.control.scheduler.dra import DraStore, PreBindError, prebind
from mockgpu.control.scheduler.events import EventRecorder
from mockgpu.control.scheduler.informer import Informer
from mockgpu.control.scheduler.queue import QueuedPod, SchedulingQueue
from mockgpu.control.scheduler.writers import Writers
from mockgpu.sched.config import SchedulerConfig
from mockgpu.sched.cycle import NO_NODES_AVAILABLE, PluginScoreError, ScheduleResult, annotations, schedule_one
from mockgpu.sched.framework import PreEnqueuePlugin
from mockgpu.sched.snapshot import pod_key

log = logging.getLogger("mockgpu.scheduler")
ANNOTATION_BOUND_TIME = "mockgpu.io/bound-time"
_STOP = ("stop", "", None)


class Scheduler:
    """``Scheduler(api_client, config, seed=0).start()`` … ``.stop()``.

    ``api_client``: a ``kubernetes.client.ApiClient`` or a callable returning one (called once).
    ``unschedulable_timeout``: seconds after which pods left unschedulable are retried anyway (upstream 300).
    """

    def __init__(self, api_client: ApiClient | Callable[[], ApiClient], config: SchedulerConfig, *,
                 seed: int = 0, clock: Callable[[], float] = time.monotonic,
                 unschedulable_timeout: float = 300.0, writers: int = 4, instance: str | None = None) -> None:
        client = api_client if isinstance(api_client, ApiClient) else api_client()
        self.api = RawApi(client)
        self.config = config
        self.rng = random.Random(seed)
        self.clock = clock
        self.cache = Cache()
        self.queue = SchedulingQueue(initial_backoff=config.pod_initial_backoff_seconds,
                                     max_backoff=config.pod_max_backoff_seconds,
                                     unschedulable_timeout=unschedulable_timeout, clock=clock)
        self.recorder = EventRecorder(self.api, instance)
        self.writers = Writers(writers)
        self.scheduled = 0  # pods handed to the binder (counter for benchmarks and tests)
        self.cycles = 0
        self.cycle_seconds = 0.0  # thread CPU time spent in schedule_one (benchmarks)
        self._inbox: queue.SimpleQueue[tuple[str, str, Any]] = queue.SimpleQueue()
        self.dra = DraStore()
        self._informers = [Informer(self.api, p, self._post) for p in ("nodes", "pods")] + [
            Informer(self.api, p, self._post, group=RESOURCE_V1, optional=True) for p in DRA_KINDS]
        self._synced: set[str] = set()
        self._kinds = {"nodes", "pods", *DRA_KINDS}
        self.failures_written: dict[str, tuple] = {}  # pod key → last failure status/annotations written (no repeats)
        self._start_index = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mockgpu-scheduler", daemon=True)

    # ---- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> Scheduler:
        self.writers.start()
        for inf in self._informers:
            inf.start()
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching and scheduling; pending writes are finished first (bounded by ``timeout``)."""
        self._stop.set()
        self._inbox.put(_STOP)
        for inf in self._informers:
            inf.stop(timeout)
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.writers.stop(timeout)

    def wait_synced(self, timeout: float = 10.0) -> bool:
        """True once nodes, pods and the DRA objects have been listed (or found not served)."""
        deadline = time.monotonic() + timeout
        return all(inf.synced.wait(max(0.0, deadline - time.monotonic())) for inf in self._informers)

    def __enter__(self) -> Scheduler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- the loop -------------------------------------------------------------------------------------------

    def _post(self, kind: str, typ: str, obj: Any) -> None:
        self._inbox.put((kind, typ, obj))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._drain(0.0)
                q = self.queue.pop() if self._synced >= self._kinds else None
                if q is None:
                    wait = self.queue.next_wakeup()
                    self._drain(1.0 if wait is None else min(max(wait, 0.001), 1.0))
                    continue
                self._schedule(q)
            except Exception:
                log.exception("scheduler loop error")
                self._stop.wait(0.1)

    def _drain(self, timeout: float) -> None:
        """Handle everything in the inbox; wait up to ``timeout`` for the first message."""
        try:
            msg = self._inbox.get(timeout=timeout) if timeout > 0 else self._inbox.get_nowait()
        except queue.Empty:
            return
        while True:
            self._handle(*msg)
            try:
                msg = self._inbox.get_nowait()
            except queue.Empty:
                return

    def _handle(self, kind: str, typ: str, obj: Any) -> None:
        if kind == "stop":
            return
        if kind == "bind-failed":
            self._bind_failed(obj)
        elif typ == "SYNC":
            self._sync(kind, obj)
            self._synced.add(kind)
        elif kind == "nodes":
            self._on_node(typ, obj)
        elif kind == "pods":
            self._on_pod(typ, obj)
        elif kind in DRA_KINDS:
            self.dra.apply(kind, typ, obj)
            self.queue.move_all()  # a new class, slice or claim (or one freed) may help a waiting pod

    # ---- watch events ---------------------------------------------------------------------------------------

    def _sync(self, kind: str, items: list[dict]) -> None:
        """A (re-)list: everything listed is current; what we knew and is missing was deleted meanwhile."""
        if kind in DRA_KINDS:
            self.dra.sync(kind, items)
            self.queue.move_all()
            return
        if kind == "nodes":
            listed = {(n.get("metadata") or {}).get("name") for n in items}
            for name in self.cache.node_names():
                if name not in listed:
                    self._on_node("DELETED", {"metadata": {"name": name}})
            for node in items:
                self._on_node("ADDED", node)
            return
        listed = {pod_key(p) for p in items}
        for key in self.queue.keys() | self.cache.pod_keys():
            if key not in listed:
                ns, name = key.split("/", 1)
                self._on_pod("DELETED", {"metadata": {"namespace": ns, "name": name}})
        for pod in items:
            self._on_pod("ADDED", pod)

    def _on_node(self, typ: str, node: dict) -> None:
        if typ == "DELETED":
            self.cache.delete_node((node.get("metadata") or {}).get("name", ""))
        elif self.cache.set_node(node):
            self.queue.move_all()

    def _on_pod(self, typ: str, pod: dict) -> None:
        key = pod_key(pod)
        if typ == "DELETED":
            self.queue.delete(key)
            self.failures_written.pop(key, None)
            self.cache.unnominate(key)
            if self.cache.has_pod(key):
                self.cache.remove_pod(key)
                self.queue.move_all()  # an assigned pod went away: room may have opened
            return
        if node_name_of(pod):
            self.queue.delete(key)  # bound (by us or anyone): no longer pending
            self.failures_written.pop(key, None)
            if not is_terminated(pod):
                self.cache.add_pod(pod)
            elif self.cache.has_pod(key):
                self.cache.remove_pod(key)
                self.queue.move_all()
            return
        if self.cache.is_assumed(key) or is_terminated(pod) or self.config.profile_for(pod) is None:
            return  # being bound by us / finished / not for our profiles (waits, as upstream)
        old = self.queue.get(key)
        if old is None:
            self.queue.add(pod)
        else:
            self.queue.update(pod, spec_changed=old.pod.get("spec") != pod.get("spec"))

    # ---- one cycle ------------------------------------------------------------------------------------------

    def _schedule(self, q: QueuedPod) -> None:
        pod = q.pod
        profile = self.config.profile_for(pod)
        if profile is None:
            self.queue.done(q.key)
            return
        dra = self.dra.snapshot()
        for plugin in profile.filters:
            if isinstance(plugin, PreEnqueuePlugin) and not plugin.pre_enqueue(pod, dra).is_success:
                self.queue.failed(q, unschedulable=True)  # gated: waits for a cluster event, nothing written
                return
        self.cycles += 1
        t0 = time.thread_time()
        try:
            res = schedule_one(pod, self.cache.nodes(), profile, self.rng, start_index=self._start_index,
                               nominated=self.cache.nominated_pods(), dra=dra)
        except PluginScoreError as exc:
            failure.record_error(self, q, profile.scheduler_name, str(exc))
            return
        finally:
            self.cycle_seconds += time.thread_time() - t0
        self._start_index = res.next_start_index
        if res.error is not None:
            failure.record_error(self, q, profile.scheduler_name, res.error)
        elif res.scheduled:
            self._assume_and_bind(q, res, profile.scheduler_name)
        elif res.message == NO_NODES_AVAILABLE:
            failure.record_error(self, q, profile.scheduler_name, res.message)
        else:
            failure.record_unschedulable(self, q, res, profile.scheduler_name)

    def _assume_and_bind(self, q: QueuedPod, res: ScheduleResult, component: str) -> None:
        pod, node = q.pod, str(res.selected_node)
        self.cache.assume(pod, node)
        claims = self.dra.assume(pod, res.claim_allocations)
        self.queue.done(q.key)
        self.failures_written.pop(q.key, None)
        self.scheduled += 1
        notes = {**annotations(res), ANNOTATION_BOUND_TIME: micro_time()}
        self.writers.submit(q.key, lambda: self._bind(pod, node, notes, component, claims))

    def _bind(self, pod: dict, node: str, notes: dict[str, str], component: str, claims: list[dict]) -> None:
        """Writer thread: the claims' allocation and reservation (PreBind), then the Binding, then the Scheduled
        event; a failure goes back to the loop."""
        meta = pod["metadata"]
        ns, name = meta.get("namespace") or "default", meta["name"]
        try:
            if claims:
                try:
                    prebind(self.api, claims, pod)
                except ApiException as exc:  # a claim write failed: retry the pod (never "bound elsewhere")
                    raise PreBindError(f'running PreBind plugin "DynamicResources": {exc.status} {exc.reason}') \
                        from exc
            self.api.bind(ns, name, meta.get("uid", ""), node, notes)
        except Exception as exc:
            self._inbox.put(("bind-failed", "", (pod, exc)))
            return
        self.recorder.pod_event(pod, component, "Normal", "Scheduled", "Binding",
                                f"Successfully assigned {ns}/{name} to {node}")

    def _bind_failed(self, item: tuple[dict, Exception]) -> None:
        pod, exc = item
        key = pod_key(pod)
        self.cache.forget(key)
        self.dra.forget(pod)
        status = getattr(exc, "status", None)
        log.info("binding %s failed: %s", key, getattr(exc, "reason", None) or exc)
        if isinstance(exc, ApiException) and status in (404, 409):
            return  # deleted, being deleted, or already bound elsewhere: the watch tells the rest
        self.queue.requeue(pod)
