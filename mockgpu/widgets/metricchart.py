"""A live chart of one DCGM metric over time, one line per GPU or per pod, read from the nodes' exporters.

``MetricChart.for_cluster(client, "DCGM_FI_DEV_GPU_UTIL", by="pod")`` finds the cluster's exporters (the Nodes'
``mockgpu.io/dcgm-exporter`` annotations) and scrapes them every ``interval`` seconds while displayed;
``MetricChart.for_prometheus("http://127.0.0.1:9090", metric)`` asks a Prometheus instead (an instant query of
the metric per step). Lab 12 follows utilization, memory and the Xid of a GPU that falls off the bus with it.

Pure parts, testable without a cluster: ``History`` keeps the last ``window`` points of each series (a series is a
GPU, ``<node> GPU <i>`` plus ``MIG <profile> #<GPU_I_ID>`` for an instance, or a pod, ``<namespace>/<pod>``; by
pod, a device nobody holds is left out) and ``chart_png`` draws it with matplotlib (a ``Figure``, no pyplot state;
fixed size, colours from the pod's name as the other widgets, series sorted by name), so the same history gives the
same picture. The chart starts empty: what a notebook stores when it is displayed is the empty axes (nothing that
depends on when it ran), and the live widget then fills in; ``sample()`` takes one step by hand (a test, or a lab
cell that must show the same thing every run).
"""

from __future__ import annotations

import atexit
import base64
import io
import json
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Any

import ipywidgets as w
from matplotlib.figure import Figure
from prometheus_client.parser import text_string_to_metric_families

from mockgpu.control.kubelet.exporter import endpoints
from mockgpu.gpu.dcgm import FIELDS
from mockgpu.widgets.colors import pod_color
from mockgpu.widgets.panels import with_fallback
from mockgpu.widgets.render import FONT

Sample = tuple[str, Mapping[str, str], float]  # metric name, labels, value
Source = Callable[[], list[Sample]]
BY = ("gpu", "pod")
UNITS = {"DCGM_FI_DEV_GPU_UTIL": "%", "DCGM_FI_DEV_FB_USED": "MiB", "DCGM_FI_DEV_FB_FREE": "MiB",
         "DCGM_FI_DEV_XID_ERRORS": "last Xid", "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "ratio"}
SCRAPE_TIMEOUT = 3.0


def parse(text: str) -> list[Sample]:
    """Exposition text -> samples (prometheus_client's parser)."""
    return [(s.name, s.labels, float(s.value)) for fam in text_string_to_metric_families(text) for s in fam.samples]


class ExporterSource:
    """Scrapes every node's exporter (node -> URL); a node that does not answer is left out of that step."""

    def __init__(self, urls: Mapping[str, str]) -> None:
        self.urls = dict(urls)

    def __call__(self) -> list[Sample]:
        out: list[Sample] = []
        for url in self.urls.values():
            try:
                with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as r:
                    out.extend(parse(r.read().decode()))
            except OSError:
                continue
        return out


class PrometheusSource:
    """Instant queries of one metric against a Prometheus HTTP API (``/api/v1/query``)."""

    def __init__(self, base_url: str, metric: str) -> None:
        self.base_url, self.metric = base_url.rstrip("/"), metric

    def __call__(self) -> list[Sample]:
        url = f"{self.base_url}/api/v1/query?" + urllib.parse.urlencode({"query": self.metric})
        try:
            with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as r:
                body = json.loads(r.read())
        except (OSError, ValueError):
            return []
        out: list[Sample] = []
        for row in (body.get("data") or {}).get("result") or []:
            labels = {k: str(v) for k, v in (row.get("metric") or {}).items() if k != "__name__"}
            out.append((self.metric, labels, float(row["value"][1])))
        return out


def series_name(labels: Mapping[str, str], by: str) -> str | None:
    """The line a sample belongs to (None: not charted by this grouping)."""
    if by == "pod":
        pod = labels.get("pod")
        return f"{labels.get('namespace', '')}/{pod}" if pod else None
    name = f"{labels.get('Hostname', '?')} GPU {labels.get('gpu', '?')}"
    if labels.get("GPU_I_PROFILE"):
        name += f" MIG {labels['GPU_I_PROFILE']} #{labels.get('GPU_I_ID', '?')}"
    return name


@dataclass
class History:
    """The last ``window`` points (t, value) of each series of one metric."""

    metric: str
    by: str = "gpu"
    window: int = 120
    points: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.by not in BY:
            raise ValueError(f"by must be one of {', '.join(BY)}, not {self.by!r}")

    def add(self, t: float, samples: Iterable[Sample]) -> None:
        """One step: every series' value at ``t`` (several samples of one series, e.g. two containers of a pod on
        one GPU, or a pod holding two GPUs: their maximum for utilization and Xid, their sum for memory)."""
        step: dict[str, list[float]] = {}
        for name, labels, value in samples:
            key = series_name(labels, self.by) if name == self.metric else None
            if key is not None:
                step.setdefault(key, []).append(value)
        summed = self.metric in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE") and self.by == "pod"
        for key, values in step.items():
            line = self.points.setdefault(key, [])
            line.append((t, sum(values) if summed else max(values)))
            del line[:-self.window]

    def latest(self) -> dict[str, float]:
        return {k: v[-1][1] for k, v in sorted(self.points.items()) if v}


def _color(key: str, by: str, i: int) -> str:
    if by == "pod":
        return pod_color(key)
    return ("#2563eb", "#b91c1c", "#059669", "#d97706", "#7c3aed", "#db2777", "#0891b2", "#4b5563")[i % 8]


def chart_png(history: History, t0: float | None = None, *, title: str | None = None) -> bytes:
    """The history as a line chart (PNG bytes): x in seconds since ``t0`` (default: the first point)."""
    fig = Figure(figsize=(6.4, 2.8), dpi=100)
    ax = fig.add_subplot()
    lines = sorted(history.points.items())
    start = t0 if t0 is not None else min((pts[0][0] for _, pts in lines if pts), default=0.0)
    for i, (key, pts) in enumerate(lines):
        ax.plot([t - start for t, _ in pts], [v for _, v in pts], label=key, color=_color(key, history.by, i),
                linewidth=1.5, drawstyle="steps-post" if history.metric == "DCGM_FI_DEV_XID_ERRORS" else "default")
    ax.set_title(title or f"{history.metric} by {history.by}", fontsize=9)
    ax.set_xlabel("seconds")
    ax.set_ylabel(UNITS.get(history.metric, ""))
    if history.metric == "DCGM_FI_DEV_GPU_UTIL":
        ax.set_ylim(0, 105)
    if lines:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    else:
        ax.text(0.5, 0.5, "no samples yet", transform=ax.transAxes, ha="center", va="center", color="#6b7280")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


class MetricChart:
    """A chart of ``metric`` grouped ``by`` GPU or pod; ``start()`` samples every ``interval`` s in a thread."""

    def __init__(self, source: Source, metric: str = "DCGM_FI_DEV_GPU_UTIL", *, by: str = "gpu",
                 interval: float = 1.0, window: int = 120, clock: Callable[[], float] = time.monotonic) -> None:
        if metric not in FIELDS:
            raise ValueError(f"unknown metric {metric!r}: one of {', '.join(FIELDS)}")
        self.source, self.interval, self.clock = source, interval, clock
        self.history = History(metric, by, window)
        self.t0: float | None = None
        self.header = w.HTML(self.header_html())
        self.image = w.Image(value=chart_png(self.history), format="png")
        self.widget = w.VBox([self.header, self.image])
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_cluster(cls, api_client: Any, metric: str = "DCGM_FI_DEV_GPU_UTIL", **kw: Any) -> MetricChart:
        """Scrape the exporters of every node of the cluster ``api_client`` reaches (a ``ClusterClient`` too)."""
        api = getattr(api_client, "api_client", api_client)
        return cls(ExporterSource(endpoints(api)), metric, **kw)

    @classmethod
    def for_prometheus(cls, base_url: str, metric: str = "DCGM_FI_DEV_GPU_UTIL", **kw: Any) -> MetricChart:
        """Ask the Prometheus at ``base_url`` (its HTTP API) for the metric at every step."""
        return cls(PrometheusSource(base_url, metric), metric, **kw)

    def header_html(self) -> str:
        latest = self.history.latest()
        unit = UNITS.get(self.history.metric, "")
        now = ", ".join(f"{escape(k)}: <b>{v:g}</b>" for k, v in latest.items()) or "no samples yet"
        return (f'<div class="mockgpu-metricchart" data-metric="{escape(self.history.metric)}" style="{FONT}">'
                f"<b>{escape(self.history.metric)}</b> ({escape(unit)}) by {escape(self.history.by)} — {now}</div>")

    def sample(self) -> dict[str, float]:
        """One step: read the source, add it, redraw; returns the latest value of each series."""
        samples = self.source()
        with self._lock:
            t = self.clock()
            if self.t0 is None:
                self.t0 = t
            self.history.add(t, samples)
            self.image.value = chart_png(self.history, self.t0)
            self.header.value = self.header_html()
            return self.history.latest()

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            try:
                self.sample()
            except Exception:  # a scrape or a draw failed: the next step tries again
                continue

    def start(self) -> MetricChart:
        if self._thread is None or not self._thread.is_alive():
            self._stopped.clear()
            self._thread = threading.Thread(target=self._run, daemon=True, name="mockgpu-metricchart")
            self._thread.start()
            atexit.register(self.stop)
        return self

    def stop(self) -> None:
        self._stopped.set()
        atexit.unregister(self.stop)

    def picture(self) -> str:
        png = base64.b64encode(chart_png(self.history, self.t0)).decode()
        return (f'{self.header_html()}<img alt="{escape(self.history.metric)} over time" '
                f'src="data:image/png;base64,{png}">')

    def _repr_mimebundle_(self, **kw: Any) -> Any:
        self.start()
        return with_fallback(self.widget, self.picture(), **kw)


__all__ = ["ExporterSource", "History", "MetricChart", "PrometheusSource", "chart_png", "parse", "series_name"]
