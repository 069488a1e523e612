"""The bill you can feel: a clock of what idle GPUs cost while a pod waits, that the learner can speed up.

``CostClock(idle_gpus=8, usd_per_gpu_hour=3.4309)`` shows the wait so far and its price (idle GPUs x
hours x price), ticking in real time or faster (1 or 10 minutes of waiting per second) up to ``chart_minutes``
(an hour: the clock stops there, so that lab 01's exercise on six hours stays the learner's to work out),
and a chart of the cost against the wait over that hour with the 11 minutes of the article's pending job
marked. The clock starts at 0, stopped (so a stored notebook is the same from run to run): the
learner presses *start*. It runs on one background thread (4 ticks a second) once displayed; ``stop()``, or
the interpreter exiting, ends it.
"""

from __future__ import annotations

import atexit
import base64
import io
import threading
from html import escape
from typing import Any

import ipywidgets as w
from matplotlib.figure import Figure  # a Figure, not pyplot: no backend is chosen or changed

from mockgpu.widgets.panels import with_fallback
from mockgpu.widgets.render import FONT

SPEEDS = (("real time", 1), ("1 min/s", 60), ("10 min/s", 600))
ARTICLE_WAIT_MIN = 11  # the article's job waited 11 minutes
TICK_S = 0.25


def cost_usd(idle_gpus: int, waited_s: float, usd_per_gpu_hour: float) -> float:
    return idle_gpus * waited_s / 3600 * usd_per_gpu_hour


def clock_text(waited_s: float) -> str:
    s = int(waited_s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def cost_chart_png(idle_gpus: int, usd_per_gpu_hour: float, minutes: int = 60, mark_min: float = ARTICLE_WAIT_MIN,
                   now_s: float | None = None) -> bytes:
    """Cost of the idle GPUs against the wait (0 .. ``minutes``), the article's wait marked (PNG bytes)."""
    fig = Figure(figsize=(5.2, 2.4), dpi=100)
    ax = fig.add_subplot()
    xs = list(range(minutes + 1))
    ax.plot(xs, [cost_usd(idle_gpus, m * 60, usd_per_gpu_hour) for m in xs], color="#b91c1c")
    mark = cost_usd(idle_gpus, mark_min * 60, usd_per_gpu_hour)
    ax.axvline(mark_min, color="#6b7280", linestyle="--", linewidth=1)
    ax.annotate(f"{mark_min:g} min: \\${mark:.2f}", (mark_min, mark), xytext=(8, -16), textcoords="offset points")
    if now_s is not None and now_s / 60 <= minutes:
        ax.plot([now_s / 60], [cost_usd(idle_gpus, now_s, usd_per_gpu_hour)], "o", color="#2563eb")
    end = cost_usd(idle_gpus, minutes * 60, usd_per_gpu_hour)
    # \$: a plain dollar sign, not matplotlib's mathtext
    ax.set_title(f"{idle_gpus} idle GPUs x \\${usd_per_gpu_hour:.4f}/GPU-hour: \\${end:.2f} after {minutes} min",
                 fontsize=9)
    ax.set_xlabel("wait (minutes)")
    ax.set_ylabel("idle GPU cost (USD)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


class CostClock:
    """A wait clock and its bill; ``waited_s`` starts at the wait so far (e.g. a pending pod's)."""

    def __init__(self, idle_gpus: int, usd_per_gpu_hour: float, waited_s: float = 0.0, speed: int = 60,
                 chart_minutes: int = 60, running: bool = False) -> None:
        self.idle_gpus, self.price = idle_gpus, usd_per_gpu_hour
        self.waited_s = float(waited_s)
        self.chart_minutes = chart_minutes
        self.speed = w.ToggleButtons(options=list(SPEEDS), value=speed, description="speed")
        self.running = w.ToggleButton(value=running, description="start the clock", icon="play")
        self.running.observe(self._label, names="value")
        self.reset = w.Button(description="back to 0")
        self.reset.on_click(lambda _: self.set_wait(0.0))
        self.readout = w.HTML(self.readout_html())
        self.chart = w.Image(value=cost_chart_png(idle_gpus, usd_per_gpu_hour, chart_minutes), format="png")
        self.widget = w.VBox([self.readout, w.HBox([self.speed, self.running, self.reset]), self.chart])
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def readout_html(self) -> str:
        cost = cost_usd(self.idle_gpus, self.waited_s, self.price)
        return (f'<div class="mockgpu-costclock" style="{FONT};font-size:14px">waiting <b>'
                f"{clock_text(self.waited_s)}</b> → {self.idle_gpus} idle GPUs x {self.waited_s / 3600:.3f} h x "
                f"${self.price:.4f} = <b style=\"color:#b91c1c;font-size:18px\">${cost:,.2f}</b></div>")

    def set_wait(self, waited_s: float) -> None:
        with self._lock:
            self.waited_s = waited_s
            self.readout.value = self.readout_html()

    def _label(self, _: Any = None) -> None:
        self.running.description, self.running.icon = (("pause", "pause") if self.running.value
                                                        else ("start the clock", "play"))

    def tick(self, dt: float) -> None:
        """Advance the clock by ``dt`` real seconds at the chosen speed (while running), up to its last minute."""
        if self.running.value:
            end = self.chart_minutes * 60.0
            self.set_wait(min(end, self.waited_s + dt * self.speed.value))
            if self.waited_s >= end:
                self.running.value = False

    def _run(self) -> None:
        while not self._stopped.wait(TICK_S):
            self.tick(TICK_S)

    def start(self) -> CostClock:
        if self._thread is None or not self._thread.is_alive():
            self._stopped.clear()
            self._thread = threading.Thread(target=self._run, daemon=True, name="mockgpu-costclock")
            self._thread.start()
            atexit.register(self.stop)
        return self

    def stop(self) -> None:
        self._stopped.set()
        atexit.unregister(self.stop)

    def picture(self) -> str:
        """The readout and the chart as plain HTML (the stored notebook's picture)."""
        png = base64.b64encode(cost_chart_png(self.idle_gpus, self.price, self.chart_minutes)).decode()
        speeds = " · ".join(escape(label) for label, _ in SPEEDS)
        return (f"{self.readout_html()}<div style=\"{FONT};color:#6b7280\">speed: {speeds} (run the lab, then press "
                f'start the clock)</div><img alt="idle GPU cost against the wait" src="data:image/png;base64,{png}">')

    def _repr_mimebundle_(self, **kw: Any) -> Any:
        self.start()
        return with_fallback(self.widget, self.picture(), **kw)
