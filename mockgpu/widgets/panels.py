"""The ipywidgets: thin shells that read a fresh snapshot, build a view model and put its HTML on screen.

Each panel redraws only from the API: ``refresh()`` (what notebooks and nbval runs call, synchronously)
or ``watch()``, which starts a background ``Live`` watcher that redraws after API watch events, at most
every ``throttle`` seconds. A cluster that is gone, or a request the API refuses, is shown as one message
in the panel, never as a traceback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from mockgpu.errors import MockgpuError
from mockgpu.widgets import render
from mockgpu.widgets.client import ApiRefused, ClusterClient, connect
from mockgpu.widgets.clustermap import ClusterMapModel, cluster_map
from mockgpu.widgets.inspector import InspectorModel, inspect_pod
from mockgpu.widgets.memory import GpuMemory, memory_view
from mockgpu.widgets.snapshot import Snapshot, pod_key
from mockgpu.widgets.submit import SCENARIOS, Outcome, Submission, outcome, pod_manifest, resource_choices
from mockgpu.widgets.timeline import TimelineModel, timeline


class Panel:
    """Base: ``widget`` (what is displayed), ``refresh()`` → the new model (None if the cluster failed)."""

    def __init__(self, client: ClusterClient | None = None) -> None:
        self.client = client if client is not None else connect()
        self.html = w.HTML()
        self.widget: w.Widget = self.html
        self._live: Any = None

    def model(self, snap: Snapshot) -> Any:
        raise NotImplementedError

    def render(self, model: Any) -> str:
        raise NotImplementedError

    def snapshot(self) -> Snapshot:
        return self.client.snapshot()

    def refresh(self) -> Any:
        try:
            model = self.model(self.snapshot())
        except MockgpuError as exc:
            self.html.value = render.error_html(str(exc))
            return None
        self.html.value = self.render(model)
        return model

    def watch(self, throttle: float = 0.5) -> Any:
        """Redraw from API watches in a background thread until ``stop()``."""
        from mockgpu.widgets.live import Live

        if self._live is None:
            self._live = Live(self.client, self.refresh, throttle=throttle).start()
        return self._live

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _repr_mimebundle_(self, **kw: Any) -> Any:
        return self.widget._repr_mimebundle_(**kw)


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

    def __init__(self, client: ClusterClient | None = None, nodes: list[str] | None = None) -> None:
        super().__init__(client)
        self.nodes = nodes

    def model(self, snap: Snapshot) -> list[GpuMemory]:
        return memory_view(snap, self.nodes)

    def render(self, model: list[GpuMemory]) -> str:
        return render.memory_html(model)


class PendingTimeline(Panel):
    """How long each GPU pod waited and the price of the GPUs left idle meanwhile."""

    def __init__(self, client: ClusterClient | None = None, resource: str = "nvidia.com/gpu",
                 usd_per_gpu_hour: float | None = None) -> None:
        super().__init__(client)
        self.resource = resource
        self.usd_per_gpu_hour = usd_per_gpu_hour

    def model(self, snap: Snapshot) -> TimelineModel:
        return timeline(snap, resource=self.resource, usd_per_gpu_hour=self.usd_per_gpu_hour)

    def render(self, model: TimelineModel) -> str:
        return render.timeline_html(model)


class PodInspector(Panel):
    """One pod: per-node per-plugin scheduling results, FailedScheduling, injected env, what it saw, logs."""

    def __init__(self, client: ClusterClient | None = None, pod: str | None = None) -> None:
        super().__init__(client)
        self.picker = w.Dropdown(description="pod", options=[pod] if pod else [], value=pod)
        self.picker.observe(lambda _: self.refresh(), names="value")
        self.widget = w.VBox([self.picker, self.html])

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
                 namespace: str = "default") -> None:
        super().__init__(client)
        self.namespace = namespace
        self.scenario = w.Dropdown(description="scenario", options=list(SCENARIOS), value="inspect")
        self.gpus = w.BoundedIntText(description="GPUs", value=1, min=0, max=64)
        self.resource = w.Dropdown(description="resource", options=["nvidia.com/gpu"], value="nvidia.com/gpu")
        self.scheduler = w.Dropdown(description="scheduler", options=profiles or ["default-scheduler"])
        self.name = w.Text(description="name", placeholder="(derived)")
        self.button = w.Button(description="Submit", button_style="primary")
        self.button.on_click(lambda _: self.submit())
        self.widget = w.VBox([w.HBox([self.scenario, self.gpus]), w.HBox([self.resource, self.scheduler]),
                              w.HBox([self.name, self.button]), self.html])
        self.last: str | None = None  # the key of the pod this panel submitted (its status is re-read)

    def model(self, snap: Snapshot) -> Outcome | None:
        current = self.resource.value
        self.resource.options = resource_choices(snap.nodes)
        if current in self.resource.options:
            self.resource.value = current
        return outcome(snap, self.last) if self.last else None

    def render(self, model: Outcome | None) -> str:
        if model is None:
            return "<i>choose and submit</i>"
        color = {"bound": "#065f46", "pending": "#b91c1c", "refused": "#b91c1c"}.get(model.kind, "#374151")
        return (f'<div class="mockgpu-outcome" data-kind="{model.kind}" style="{render.FONT};color:{color}">'
                f"<b>{render.escape(model.pod)}</b>: {render.escape(model.message)}</div>")

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
            self.html.value = self.render(result)
            return result
        except MockgpuError as exc:
            self.html.value = render.error_html(str(exc))
            return None
        self.last = pod_key(created)
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
