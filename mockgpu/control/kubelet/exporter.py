"""A node's dcgm-exporter: ``/metrics`` in the Prometheus text format, served on 127.0.0.1, and how to find it.

``MetricsExporter(node, driver_dir, inputs)`` serves ``mockgpu.gpu.dcgm``'s collector with ``prometheus_client``'s
own HTTP server (``start_http_server``: any path answers, ``/metrics`` as dcgm-exporter's ``:9400/metrics``) on
127.0.0.1 and a port the kernel picks (``port=0``), so several clusters and nodes on one machine never collide.
Every scrape builds a fresh GPU-state document from the driver directory and the kubelet's allocations (the
``pod``/``namespace``/``container`` labels, as dcgm-exporter's ``--kubernetes`` mapping reads the kubelet's
pod-resources API).

Discovery: the kubelet records the endpoint on its Node as annotation ``mockgpu.io/dcgm-exporter``
(``http://127.0.0.1:<port>/metrics``); ``endpoints(api_client)`` returns node -> URL for a cluster and
``file_sd(...)`` the JSON of a Prometheus ``file_sd_configs`` file. Only loopback URLs are accepted from an
annotation (anyone allowed to patch Nodes could otherwise point a scraper anywhere).

Security, as dcgm-exporter: unauthenticated plain HTTP. Bound to loopback, so only this machine's processes reach
it, and the names of pods and namespaces holding GPUs are readable by every local user (see docs/workshop-hub.md).
"""

from __future__ import annotations

import ipaddress
import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from wsgiref.simple_server import WSGIServer

from prometheus_client.exposition import start_http_server

from mockgpu.gpu.dcgm import registry_for
from mockgpu.gpu.driver import Driver, DriverNotFound
from mockgpu.gpu.state import StateInputs, gpu_state

ANNOTATION = "mockgpu.io/dcgm-exporter"
LOOPBACK = "127.0.0.1"


class MetricsExporter:
    """``start()`` serves the node's metrics in a daemon thread; ``url`` says where; ``stop()`` closes it."""

    def __init__(self, node: str, driver_dir: str | Path, inputs: Callable[[], StateInputs] | None = None, *,
                 host: str = LOOPBACK, port: int = 0) -> None:
        self.node = node
        self.driver_dir = Path(driver_dir)
        self.inputs = inputs or StateInputs
        self.host, self.port = host, port
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def document(self) -> dict[str, Any] | None:
        """The node's GPU-state document now (None before the driver directory exists)."""
        try:
            driver = Driver(self.driver_dir)
        except DriverNotFound:
            return None
        return gpu_state(driver, self.inputs())

    def start(self) -> MetricsExporter:
        if self._server is None:
            self._server, self._thread = start_http_server(self.port, addr=self.host,
                                                           registry=registry_for(self.document))
            self.port = int(self._server.server_port)
        return self

    @property
    def url(self) -> str:
        """``http://<host>:<port>/metrics`` (the port is known once started)."""
        return f"http://{self.host}:{self.port}/metrics"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(5)
            self._server = self._thread = None


def loopback_url(value: object) -> str | None:
    """The annotation's value if it is an ``http://<loopback address>:<port>/metrics`` URL, else None."""
    if not isinstance(value, str):
        return None
    try:
        parts = urlsplit(value)
        host, port = parts.hostname, parts.port
        loop = host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return None
    ok = parts.scheme == "http" and loop and port is not None and parts.path == "/metrics" and not parts.query
    return value if ok and not parts.username and not parts.fragment else None


def endpoints(api_client: Any) -> dict[str, str]:
    """Node name -> metrics URL of every node of the cluster that serves one (sorted by node name)."""
    from kubernetes import client

    out: dict[str, str] = {}
    for node in client.CoreV1Api(api_client).list_node().items:
        meta = node.metadata
        url = loopback_url((meta.annotations or {}).get(ANNOTATION)) if meta is not None else None
        if meta is not None and meta.name and url is not None:
            out[meta.name] = url
    return dict(sorted(out.items()))


def file_sd(urls: Mapping[str, str], cluster: str) -> list[dict[str, Any]]:
    """Prometheus ``file_sd_configs`` targets: one group per node, labelled with the cluster and node names
    (``__metrics_path__`` carries the URL's path)."""
    groups = []
    for node, url in sorted(urls.items()):
        parts = urlsplit(url)
        groups.append({"targets": [parts.netloc],
                       "labels": {"__metrics_path__": parts.path, "mockgpu_cluster": cluster, "mockgpu_node": node}})
    return groups


def write_file_sd(path: str | Path, urls: Mapping[str, str], cluster: str) -> Path:
    """Write the targets file atomically (Prometheus re-reads it on change; a half-written file is an error)."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps(file_sd(urls, cluster), indent=1) + "\n")
    tmp.replace(p)
    return p


__all__ = ["ANNOTATION", "MetricsExporter", "endpoints", "file_sd", "loopback_url", "write_file_sd"]
