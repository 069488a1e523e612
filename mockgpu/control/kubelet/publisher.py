"""Publishes a node's GPU state through the API: ConfigMap ``gpu-state-<node>`` in ``mockgpu-system``.

The same class runs inside the embedded kubelet and, as ``mockgpu gpu-state-publisher``, in the kind
DaemonSet, so widgets read one shape everywhere. ``data["state.json"]`` is ``mockgpu.gpu.state``'s
document, ``data["metrics"]`` the same facts as dcgm-exporter's Prometheus text. The ConfigMap is labelled
``mockgpu.io/gpu-state=true`` and ``mockgpu.io/node=<node>`` so one list call finds every node's.

It checks the driver directory every ``interval`` seconds (or sooner after ``poke()``), writes only when the
document changed (apart from its ``time``) or ``refresh`` seconds passed, and never more often than once per
``interval``: a ledger that changes continuously costs one write a second, not a busy loop.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mockgpu.config.nodelabels import NODE_LABEL
from mockgpu.gpu.dcgm import metrics_text
from mockgpu.gpu.driver import Driver, DriverNotFound
from mockgpu.gpu.state import DeviceAllocation, StateInputs, gpu_state

log = logging.getLogger(__name__)
NAMESPACE = "mockgpu-system"
STATE_LABEL = "mockgpu.io/gpu-state"


def configmap_name(node: str) -> str:
    return f"gpu-state-{node}"


def ensure_namespace(core: Any, name: str = NAMESPACE) -> None:
    """Create the namespace unless it exists (409 is success; 403 too: on kind the publisher's service account
    may not create namespaces, and the manifests that run it made this one)."""
    from kubernetes.client.exceptions import ApiException

    try:
        core.create_namespace({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "mockgpu"}}})
    except ApiException as exc:
        if exc.status not in (403, 409):
            raise


class GpuStatePublisher:
    """One node's publisher; ``start()`` runs it in a thread, ``publish_once()`` runs one round."""

    def __init__(self, core: Any, node: str, driver_dir: str | Path, *,
                 inputs: Callable[[], StateInputs] | None = None, interval: float = 1.0, refresh: float = 30.0,
                 namespace: str = NAMESPACE) -> None:
        self.core = core  # kubernetes.client.CoreV1Api
        self.node = node
        self.driver_dir = Path(driver_dir)
        self.inputs = inputs or StateInputs
        self.interval = interval
        self.refresh = refresh
        self.namespace = namespace
        self.published: dict[str, Any] | None = None  # last document written
        self.writes = 0
        self._last_write = 0.0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- one round ---------------------------------------------------------------------------------
    def build(self) -> dict[str, Any] | None:
        try:
            driver = Driver(self.driver_dir)
        except DriverNotFound:
            return None
        return gpu_state(driver, self.inputs())

    def publish_once(self, force: bool = False) -> bool:
        """Build the document and write it if it changed; True when written."""
        doc = self.build()
        if doc is None:
            return False
        stale = time.monotonic() - self._last_write >= self.refresh
        if not force and not stale and self.published is not None and _same(doc, self.published):
            return False
        self._write(doc)
        self.published, self._last_write = doc, time.monotonic()
        self.writes += 1
        return True

    def _body(self, doc: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": configmap_name(self.node), "namespace": self.namespace,
                             "labels": {STATE_LABEL: "true", NODE_LABEL: self.node}},
                "data": {"state.json": json.dumps(doc, indent=1), "metrics": metrics_text(doc)}}

    def _write(self, doc: dict[str, Any]) -> None:
        from kubernetes.client.exceptions import ApiException

        body = self._body(doc)
        name = body["metadata"]["name"]
        try:
            self.core.replace_namespaced_config_map(name, self.namespace, body)
        except ApiException as exc:
            if exc.status != 404:
                raise
            try:
                self.core.create_namespaced_config_map(self.namespace, body)
            except ApiException as exc2:
                if exc2.status != 404:
                    raise
                ensure_namespace(self.core, self.namespace)
                self.core.create_namespaced_config_map(self.namespace, body)

    def delete(self) -> None:
        """Remove the node's ConfigMap (the node is gone)."""
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.delete_namespaced_config_map(configmap_name(self.node), self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise

    # -- the loop ----------------------------------------------------------------------------------
    def poke(self) -> None:
        """Check soon (something changed: an allocation, a pod)."""
        self._wake.set()

    def start(self) -> GpuStatePublisher:
        self._thread = threading.Thread(target=self._run, name=f"gpu-state-{self.node}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            wait = self.interval - (time.monotonic() - self._last_write)
            if wait > 0 and self._stop.wait(wait):  # rate limit: at most one write per interval
                return
            try:
                self.publish_once()
            except Exception as exc:  # the API may be briefly away (restart, shutdown): try again next round
                log.debug("gpu-state publish for %s failed: %s", self.node, exc)
            self._wake.wait(self.interval)
            self._wake.clear()


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return {k: v for k, v in a.items() if k != "time"} == {k: v for k, v in b.items() if k != "time"}


__all__ = ["NAMESPACE", "DeviceAllocation", "GpuStatePublisher", "StateInputs", "configmap_name", "ensure_namespace"]
