"""ipywidgets dashboards that read a cluster only through the Kubernetes API.

Each widget is a pure view model (``clustermap``, ``submit``, ``inspector``, ``memory``, ``timeline``:
functions from API objects to dataclasses, testable without a browser), HTML rendering (``render``)
and a thin ipywidgets shell (``panels``) that redraws on ``refresh()`` or from API watches (``live``).
A panel displayed in a notebook follows its cluster by itself (one shared watcher per cluster, stopped by
``LabCluster.close()`` or the kernel exiting); ``panel.freeze()`` is a still picture of one step of a lab.
Every displayed widget carries its HTML as a ``text/html`` fallback, so a stored notebook shows pictures
before it runs. ``costclock`` is lab 01's bill of a wait; ``progress`` the first cell's start-up steps;
``metricchart`` a live chart of a DCGM metric per GPU or pod, scraped from the nodes' exporters (or a Prometheus).

>>> client = connect()                     # doctest: +SKIP
>>> ClusterMap(client).refresh()           # doctest: +SKIP
"""

from mockgpu.widgets.client import ApiRefused, ClusterClient, ClusterGone, connect
from mockgpu.widgets.labkit import LabCluster
from mockgpu.widgets.metricchart import MetricChart
from mockgpu.widgets.panels import ClusterMap, MemoryView, PendingTimeline, PodInspector, SubmitPanel
from mockgpu.widgets.snapshot import Snapshot
from mockgpu.widgets.submit import Submission, pod_manifest

__all__ = ["ApiRefused", "ClusterClient", "ClusterGone", "ClusterMap", "LabCluster", "MemoryView", "MetricChart",
           "PendingTimeline", "PodInspector", "Snapshot", "SubmitPanel", "Submission", "connect", "pod_manifest"]
