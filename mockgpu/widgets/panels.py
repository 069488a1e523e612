"""The ipywidgets: thin shells that read a fresh snapshot, build a view model and put its HTML on screen.

Each panel redraws only from the API: ``refresh()`` (synchronously) or from the cluster's shared
background ``Live`` watcher (``watch()``), which redraws after API watch events, at most every ``throttle``
seconds. A panel displayed in a notebook follows the cluster by itself (``live=False`` to opt out):
the learner sees a pod they submit placed, started, OOM-killed or restarted without re-running a cell.

A step of a lab's story is shown with ``freeze()``: a still picture (plain HTML) of the panel as it is when
that cell runs, which later cells cannot change. Every displayed widget also carries that HTML as a
``text/html`` fallback, so a stored notebook shows pictures before anything runs (an untrusted notebook
in JupyterLab renders no widgets). A cluster that is gone, or a request the API refuses, is shown as one
message in the panel, never as a traceback.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from mockgpu.errors import MockgpuError
from mockgpu.widgets import render
from mockgpu.widgets.client import ApiRefused, ClusterClient, connect
from mockgpu.widgets.clustermap import ClusterMapModel, cluster_map
from mockgpu.widgets.gangs import GangModel, gang_view, gangs_html
from mockgpu.widgets.inspector import InspectorModel, inspect_pod
from mockgpu.widgets.live import Live
from mockgpu.widgets.memory import GpuMemory, memory_view
from mockgpu.widgets.snapshot import Snapshot, pod_key
from mockgpu.widgets.submit import SCENARIOS, Outcome, Submission, outcome, pod_manifest, resource_choices
from mockgpu.widgets.timeline import TimelineModel, timeline

LIVE_CAPTION = "● live: follows the cluster"
FROZEN_CAPTION = "■ snapshot: the cluster when this cell ran"


def caption_html(text: str, color: str) -> str:
    style = f"{render.FONT};color:{color};font-size:11px"
    return f'<div class="mockgpu-caption" style="{style}">{render.escape(text)}</div>'


class Frozen:
    """A still picture of a panel: plain HTML, the same on first open of a stored notebook as after a run."""

    def __init__(self, html: str, caption: str = FROZEN_CAPTION) -> None:
        self.html = html
        self.caption = caption

    def __repr__(self) -> str:
        return "a snapshot of a mockgpu widget (HTML)"

    def _repr_html_(self) -> str:
        return f'<div class="mockgpu-frozen">{caption_html(self.caption, "#6b7280")}{self.html}</div>'


def with_fallback(widget: w.Widget, html: str, **kw: Any) -> Any:
    """The widget's mime bundle plus ``text/html``: what JupyterLab shows where it renders no widget."""
    bundle = widget._repr_mimebundle_(**kw)
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    if isinstance(data, dict):
        data["text/html"] = html
        data["text/plain"] = "a mockgpu widget (HTML picture above; live once the lab runs)"
    return bundle


class Panel:
    """Base: ``widget`` (what is displayed), ``refresh()`` → the new model (None if the cluster failed)."""

    caption = LIVE_CAPTION

    def __init__(self, client: ClusterClient | None = None, live: bool = True) -> None:
        self.client = client if client is not None else connect()
        self.live = live
        self.html = w.HTML()
        self.caption_widget = w.HTML(caption_html(self.caption, "#065f46") if live else "")
        self.widget: w.Widget = w.VBox([self.caption_widget, self.html])
        self._live: Live | None = None
        self._lock = threading.RLock()  # refresh runs on the kernel's thread and on the redraw thread

    def model(self, snap: Snapshot) -> Any:
        raise NotImplementedError

    def render(self, model: Any) -> str:
        raise NotImplementedError

    def snapshot(self) -> Snapshot:
        return self.client.snapshot()

    def refresh(self) -> Any:
        with self._lock:
            try:
                model = self.model(self.snapshot())
            except MockgpuError as exc:
                self.html.value = render.error_html(str(exc))
                return None
            self.html.value = self.render(model)
            return model

    def watch(self, throttle: float = 0.5) -> Live:
        """Redraw from the cluster's API watches in a background thread until ``stop()``."""
        if self._live is None or self._live.stopped:
            self._live = Live.of(self.client, throttle=throttle).add(self.refresh)
        return self._live

    def stop(self) -> None:
        if self._live is not None:
            self._live.remove(self.refresh)
            self._live = None

    def freeze(self) -> Frozen:
        """A still picture of the panel now (refreshed first): a step of the story that later cells leave alone."""
        if self.refresh() is None and not self.html.value:
            return Frozen(render.error_html("the cluster did not answer"))
        return Frozen(self.picture())

    def picture(self) -> str:
        """The panel's current HTML, as a still picture."""
        return self.html.value

    def _repr_mimebundle_(self, **kw: Any) -> Any:
        if not self.html.value:
            self.refresh()  # never shown empty, and the stored picture is the cluster at this cell
        if self.live:
            self.watch()
        return with_fallback(self.widget, caption_html(self.caption, "#065f46") + self.picture(), **kw)


class ClusterMap(Panel):
    """Nodes as cards, GPUs as tiles coloured by their pod, MIG slices at their placement, replicas stacked."""

    def model(self, snap: Snapshot) -> ClusterMapModel:
        return cluster_map(snap)

    def settle(self, timeout: float = 10.0) -> ClusterMapModel | None:
        """Refresh until every running GPU pod is drawn on its device (nodes publish GPU state about once a
        second, so a pod that just started may not be on its tile yet); the last model after ``timeout``."""
        def placed(m: ClusterMapModel | None) -> bool:
            return m is None or not any(h.phase == "Running" for n in m.nodes if n.published for h in n.unplaced)
        return wait_for(self.refresh, placed, timeout)

    def render(self, model: ClusterMapModel) -> str:
        return render.cluster_map_html(model)


class MemoryView(Panel):
    """Per physical GPU: memory per pod, OOM moments, and the pods that died with them."""

    def __init__(self, client: ClusterClient | None = None, nodes: list[str] | None = None, *,
                 live: bool = True) -> None:
        super().__init__(client, live)
        self.nodes = nodes

    def model(self, snap: Snapshot) -> list[GpuMemory]:
        return memory_view(snap, self.nodes)

    def render(self, model: list[GpuMemory]) -> str:
        return render.memory_html(model)


class PendingTimeline(Panel):
    """How long each GPU pod waited and the price of the GPUs left idle meanwhile."""

    def __init__(self, client: ClusterClient | None = None, resource: str = "nvidia.com/gpu",
                 usd_per_gpu_hour: float | None = None, *, live: bool = True) -> None:
        super().__init__(client, live)
        self.resource = resource
        self.usd_per_gpu_hour = usd_per_gpu_hour

    def model(self, snap: Snapshot) -> TimelineModel:
        return timeline(snap, resource=self.resource, usd_per_gpu_hour=self.usd_per_gpu_hour)

    def render(self, model: TimelineModel) -> str:
        return render.timeline_html(model)


class GangView(Panel):
    """Jobs and PodGroups: each Job's workers, the GPUs they hold, whether the Job trains (all its workers
    run: the rendezvous), and each PodGroup's minCount and status (lab 11)."""

    def model(self, snap: Snapshot) -> GangModel:
        return gang_view(snap.pods, self.client.list_jobs("default"), self.client.list_pod_groups_if_served())

    def render(self, model: GangModel) -> str:
        return gangs_html(model)


class PodInspector(Panel):
    """One pod: per-node per-plugin scheduling results, FailedScheduling, injected env, what it saw, logs."""

    def __init__(self, client: ClusterClient | None = None, pod: str | None = None, *, live: bool = True) -> None:
        super().__init__(client, live)
        self.picker = w.Dropdown(description="pod", options=[pod] if pod else [], value=pod)
        self.picker.observe(lambda _: self.refresh(), names="value")
        self.widget = w.VBox([self.caption_widget, self.picker, self.html])

    def show(self, pod: str) -> InspectorModel | None:
        key = pod if "/" in pod else f"default/{pod}"
        if key not in self.picker.options:
            self.picker.options = sorted({*self.picker.options, key})
        self.picker.value = key  # observe() refreshes only on a change
        return self.refresh()

    def model(self, snap: Snapshot) -> InspectorModel | None:
        keys = sorted(pod_key(p) for p in snap.pods)
        current = self.picker.value
        self.picker.options = sorted({*keys, *([current] if current else [])})
        self.picker.value = current
        if not current:
            return None
        pod = snap.pod(current)
        log = self.client.pod_log(*current.split("/", 1)) if pod and (pod.get("spec") or {}).get("nodeName") else ""
        return inspect_pod(snap, current, log) if pod is not None else None

    def render(self, model: InspectorModel | None) -> str:
        if model is None:
            return render.error_html(f"pod {self.picker.value} does not exist" if self.picker.value
                                     else "choose a pod")
        return render.inspector_html(model)


class SubmitPanel(Panel):
    """Scenario, GPU count, resource, scheduler profile → a real Pod; shows where it went or why not."""

    def __init__(self, client: ClusterClient | None = None, profiles: list[str] | None = None,
                 namespace: str = "default", *, live: bool = True) -> None:
        super().__init__(client, live)
        self.namespace = namespace
        # train runs until deleted, so the map shows it (an inspect pod is done within a second)
        self.scenario = w.Dropdown(description="scenario", options=list(SCENARIOS), value="train")
        self.gpus = w.BoundedIntText(description="GPUs", value=1, min=0, max=64)
        self.resource = w.Dropdown(description="resource", options=["nvidia.com/gpu"], value="nvidia.com/gpu")
        self.scheduler = w.Dropdown(description="scheduler", options=profiles or ["default-scheduler"])
        self.name = w.Text(description="name", placeholder="(derived)")
        self.button = w.Button(description="Submit", button_style="primary")
        self.button.on_click(lambda _: self.submit())
        self.widget = w.VBox([self.caption_widget, w.HBox([self.scenario, self.gpus]),
                              w.HBox([self.resource, self.scheduler]), w.HBox([self.name, self.button]), self.html])
        self.last: str | None = None  # the key of the pod this panel submitted (its status is re-read)
        self.refused: Outcome | None = None  # the last submission the API refused (there is no pod to re-read)

    def model(self, snap: Snapshot) -> Outcome | None:
        current = self.resource.value
        self.resource.options = resource_choices(snap.nodes)
        if current in self.resource.options:
            self.resource.value = current
        return outcome(snap, self.last) if self.last else self.refused

    def render(self, model: Outcome | None) -> str:
        if model is None:
            return "<i>choose and submit</i>"
        color = {"bound": "#065f46", "pending": "#b91c1c", "refused": "#b91c1c"}.get(model.kind, "#374151")
        return (f'<div class="mockgpu-outcome" data-kind="{model.kind}" style="{render.FONT};color:{color}">'
                f"<b>{render.escape(model.pod)}</b>: {render.escape(model.message)}</div>")

    def picture(self) -> str:
        """The controls as they are set, then the last outcome (a picture: the button works once the lab runs)."""
        fields = [("scenario", self.scenario.value), ("GPUs", self.gpus.value), ("resource", self.resource.value),
                  ("scheduler", self.scheduler.value), ("name", self.name.value or "(derived)")]
        boxes = "".join(f'<span style="margin-right:10px">{k} <span style="border:1px solid #9ca3af;padding:1px 6px;'
                        f'background:#fff">{render.escape(str(v))}</span></span>' for k, v in fields)
        button = ('<span style="background:#2563eb;color:#fff;padding:2px 10px;border-radius:2px">Submit</span>')
        return (f'<div class="mockgpu-submit" style="{render.FONT}"><div style="margin:4px 0">{boxes}{button}</div>'
                f"{self.html.value}</div>")

    def submission(self) -> Submission:
        return Submission(self.scenario.value, self.gpus.value, self.resource.value, self.scheduler.value,
                          self.name.value.strip(), self.namespace)

    def submit(self, submission: Submission | None = None, wait: float = 0.0) -> Outcome | None:
        """Create the Pod; with ``wait`` poll the API up to that many seconds for the scheduler's decision."""
        s = submission or self.submission()
        manifest = pod_manifest(s)
        try:
            created = self.client.create_pod(manifest)
        except ApiRefused as exc:
            result = Outcome("refused", f"{s.namespace}/{manifest['metadata']['name']}",
                             f"the API server refused the pod ({exc.code} {exc.reason}): {exc}")
            with self._lock:
                self.last, self.refused = None, result
                self.html.value = self.render(result)
            return result
        except MockgpuError as exc:
            self.html.value = render.error_html(str(exc))
            return None
        self.last, self.refused = pod_key(created), None
        return wait_for(self.refresh, lambda o: o is not None and o.kind != "waiting", wait)


def wait_for(fn: Callable[[], Any], done: Callable[[Any], bool], timeout: float, poll: float = 0.05) -> Any:
    """Call ``fn`` until ``done(result)`` or ``timeout`` seconds pass; the last result either way."""
    deadline = time.monotonic() + timeout
    result = fn()
    while not done(result) and time.monotonic() < deadline:
        time.sleep(poll)
        poll = min(poll * 1.5, 0.25)
        result = fn()
    return result
