"""The controllers' API calls: the scheduler's JSON-over-``ApiClient`` requests, for pods, the apps and
batch groups and resource.k8s.io claims, plus core/v1 Events about any object as client-go's recorder writes them."""

from __future__ import annotations

import socket
import threading
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.scheduler.api import MERGE, RawApi

Obj = dict[str, Any]
PREFIX = {"pods": "/api/v1", "events": "/api/v1", "nodes": "/api/v1", "deployments": "/apis/apps/v1",
          "replicasets": "/apis/apps/v1",
          "replicationcontrollers": "/api/v1", "daemonsets": "/apis/apps/v1", "statefulsets": "/apis/apps/v1",
          "jobs": "/apis/batch/v1", "cronjobs": "/apis/batch/v1", "resourceclaims": "/apis/resource.k8s.io/v1",
          "resourceclaimtemplates": "/apis/resource.k8s.io/v1", "resourceslices": "/apis/resource.k8s.io/v1",
          "devicetaintrules": "/apis/resource.k8s.io/v1", "resourcequotas": "/api/v1", "namespaces": "/api/v1"}
KIND_PLURAL = {"Pod": "pods", "Deployment": "deployments", "ReplicaSet": "replicasets",
               "ReplicationController": "replicationcontrollers", "Job": "jobs",
               "DaemonSet": "daemonsets", "CronJob": "cronjobs", "StatefulSet": "statefulsets"}


def path(plural: str, ns: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    out = PREFIX[plural]
    if ns:  # "" or None: cluster-scoped (or every namespace)
        out += f"/namespaces/{quote(ns, safe='')}"
    out += f"/{plural}"
    if name is not None:
        out += f"/{quote(name, safe='')}"
    if sub:
        out += f"/{sub}"
    return out


class ControllerApi(RawApi):
    """``RawApi`` over any of the controllers' resources (``list``/``watch`` serve the scheduler's Informer)."""

    def list(self, plural: str) -> dict:
        return self.request("GET", path(plural))

    def watch(self, plural: str, resource_version: str, timeout_seconds: int, read_timeout: float) -> Any:
        query = [("watch", "true"), ("resourceVersion", resource_version), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", str(timeout_seconds))]
        return self.request("GET", path(plural), query=query, timeout=(5.0, read_timeout), stream=True)

    def get(self, plural: str, ns: str, name: str) -> Obj | None:
        try:
            return self.request("GET", path(plural, ns, name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, plural: str, ns: str, body: Obj) -> Obj:
        return self.request("POST", path(plural, ns), body=body)

    def replace(self, plural: str, obj: Obj, *, status: bool = False) -> Obj:
        meta = obj["metadata"]
        return self.request("PUT", path(plural, meta.get("namespace"), meta["name"], "status" if status else None),
                            body=obj)

    def patch(self, plural: str, ns: str, name: str, patch: Any, content_type: str = MERGE) -> Obj:
        return self.request("PATCH", path(plural, ns, name), body=patch, content_type=content_type)

    def delete(self, plural: str, ns: str, name: str, *, uid: str | None = None,
               propagation: str | None = None) -> Any:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        if propagation:
            body["propagationPolicy"] = propagation
        return self.request("DELETE", path(plural, ns, name), body=body)


class Recorder:
    """core/v1 Events from one controller (``source.component``), repeated ones counted as client-go does."""

    def __init__(self, api: ControllerApi, component: str, *, remember: int = 4096) -> None:
        self.api, self.component = api, component
        self.host = socket.gethostname()
        self._sent: OrderedDict[tuple, tuple[str, int]] = OrderedDict()
        self._remember = remember
        self._lock = threading.Lock()

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        ns, name, uid = meta.get("namespace") or "default", meta.get("name", ""), meta.get("uid", "")
        key = (obj.get("kind"), ns, name, uid, type_, reason, message)
        now = rfc3339()
        try:
            with self._lock:
                seen = self._sent.get(key)
            if seen is not None:
                try:
                    self.api.patch("events", ns, seen[0], {"count": seen[1] + 1, "lastTimestamp": now})
                    self._keep(key, seen[0], seen[1] + 1)
                    return
                except ApiException as exc:
                    if exc.status != 404:
                        raise
            event_name = f"{name}.{time.time_ns():x}"
            self.api.create("events", ns, {
                "apiVersion": "v1", "kind": "Event", "metadata": {"name": event_name, "namespace": ns},
                "involvedObject": {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""),
                                   "namespace": ns, "name": name, "uid": uid,
                                   "resourceVersion": meta.get("resourceVersion", "")},
                "reason": reason, "message": message, "type": type_, "source": {"component": self.component},
                "reportingComponent": self.component, "reportingInstance": "", "firstTimestamp": now,
                "lastTimestamp": now, "count": 1})
            self._keep(key, event_name, 1)
        except (ApiException, OSError):  # an event is best effort, as upstream's broadcaster
            pass

    def _keep(self, key: tuple, name: str, count: int) -> None:
        with self._lock:
            self._sent[key] = (name, count)
            self._sent.move_to_end(key)
            while len(self._sent) > self._remember:
                self._sent.popitem(last=False)
