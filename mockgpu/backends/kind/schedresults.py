"""The real kube-scheduler's results on a kind cluster's pods, under the annotations the embedded scheduler
writes (``mockgpu.io/selected-node``, ``finalscore-result``, ...), as the upstream backend does.

kind's kube-scheduler is a static pod on the control-plane node (label ``component=kube-scheduler``), started
with ``-v=10 --logging-format=json``
(``config.SCHEDULER_LOG_ARGS``). ``SchedulerResults`` streams that pod's log through the API (``kubectl logs
-f``'s call) into a ``schedlog.SchedulerLog`` and runs the upstream backend's ``ResultsRecorder`` on it, in
threads of the process that started it (``LabCluster`` on ``MOCKGPU_BACKEND=kind``), until ``stop``.
A dropped stream is reopened from the log's start: the annotations are the same when written twice.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from mockgpu.backends.common.recorder import ResultsRecorder
from mockgpu.backends.common.schedlog import SchedulerLog

log = logging.getLogger(__name__)
NAMESPACE = "kube-system"


SCHEDULER_SELECTOR = "component=kube-scheduler"  # kubeadm's label on its static pod (named kube-scheduler-<node>)


class SchedulerResults:
    """Follows the scheduler pod's log and annotates each pod once its scheduling attempt has ended."""

    def __init__(self, api_client: Any, weights: dict[str, dict[str, int]]) -> None:
        """``weights``: profile (schedulerName) -> score plugin -> weight (the cluster's scheduler config)."""
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.pod: str | None = None  # the static pod's name, found by its label once it exists
        self.log = SchedulerLog()
        self.recorder = ResultsRecorder(api_client, self.log, weights)
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._follow, name="kind-scheduler-log", daemon=True)

    def start(self) -> SchedulerResults:
        self._thread.start()
        self.recorder.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.recorder.stop()
        stream = self._stream
        if stream is not None:
            try:
                stream.close()
            except Exception:  # noqa: BLE001 - closing a stream that already broke
                pass
        self._thread.join(5)

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                if self.pod is None:
                    pods = self.core.list_namespaced_pod(NAMESPACE, label_selector=SCHEDULER_SELECTOR).items
                    self.pod = pods[0].metadata.name if pods else None
                if self.pod is None:
                    raise LookupError(f"no pod labelled {SCHEDULER_SELECTOR} in {NAMESPACE} yet")
                self._stream = self.core.read_namespaced_pod_log(self.pod, NAMESPACE, follow=True,
                                                                 _preload_content=False)
                for chunk in self._stream.stream(65536):
                    self.log.feed(chunk)
                    if self._stop.is_set():
                        return
            except Exception as exc:  # noqa: BLE001 - not started yet, or the stream dropped: try again
                log.debug("kube-scheduler log of %s: %s", self.pod, exc)
            self.log.feed(b"\n")  # a line the stream cut short is dropped; the reopened stream repeats it
            self._stop.wait(1.0)
