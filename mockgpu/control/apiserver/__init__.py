"""An embedded Kubernetes-compatible API server that kubectl and the official client use unchanged: core/v1 (with
ResourceQuota and LimitRange, and their admission: ``quotaadmission``), apps/v1 Deployments, ReplicaSets and
StatefulSets (with ``/status`` and ``/scale``) and DaemonSets (with ``/status``), batch/v1 Jobs and CronJobs (with
``/status``), coordination.k8s.io/v1 Leases, events.k8s.io/v1 Events (a view of the core ones) and the self-reviews
of authorization/authentication.k8s.io.

``server.APIServer`` runs it; ``store`` keeps objects in SQLite; ``app`` is the HTTP layer; the pure
modules (``validation``, ``podupdate``, ``workloads`` with ``daemonsets``, ``statefulsets`` and ``cronjobs``,
``coordination``, ``eventsv1``, ``access``, ``selectors``,
``patch``, ``smd`` with ``managedfields`` (server-side apply), ``tables``, ``discovery``, ``schemas``, ``status``)
model upstream.
"""

from __future__ import annotations

from typing import Any

__all__ = ["APIServer"]


def __getattr__(name: str) -> Any:  # lazy, so the pure modules import without aiohttp
    if name == "APIServer":
        from mockgpu.control.apiserver.server import APIServer

        return APIServer
    raise AttributeError(name)
