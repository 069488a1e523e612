"""A step-by-step progress line for slow lab cells (the cluster starting), as plain HTML updated in place.

Plain HTML, not a widget, so the stored notebook shows the finished line ("cluster lab01 ready: 4 nodes, 8 GPUs")
before anything runs. Outside a notebook kernel (a script, a test) nothing is displayed.
"""

from __future__ import annotations

import time
from html import escape
from typing import Any

FONT = "font-family:system-ui,sans-serif;font-size:12px"


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class Progress:
    """``p = Progress("starting cluster lab01", steps=4); p.step("API server"); ...; p.done("ready")``."""

    def __init__(self, title: str, steps: int, show: bool | None = None) -> None:
        self.title, self.steps, self.n = title, steps, 0
        self.t0 = time.monotonic()
        self.lines: list[str] = []
        self._handle: Any = None
        if show if show is not None else _in_kernel():
            from IPython.display import HTML, display

            self._html = HTML
            self._handle = display(HTML(self.html("")), display_id=True)

    def html(self, current: str, finished: bool = False) -> str:
        pct = 100 * self.n / self.steps if self.steps else 100
        color = "#10b981" if finished else "#2563eb"
        done = "".join(f"<div>✔ {escape(line)}</div>" for line in self.lines)
        now = "" if finished else f"<div>… {escape(current)} ({time.monotonic() - self.t0:.0f} s)</div>"
        return (f'<div class="mockgpu-progress" style="{FONT}"><b>{escape(self.title)}</b>'
                f'<div style="width:320px;height:8px;background:#e5e7eb;margin:3px 0"><div style="height:8px;'
                f'width:{pct:.0f}%;background:{color}"></div></div>{done}{now}</div>')

    def _show(self, current: str, finished: bool = False) -> None:
        if self._handle is not None:
            self._handle.update(self._html(self.html(current, finished)))

    def step(self, what: str) -> None:
        """Start step ``what`` (the previous one is done)."""
        self._show(what)

    def finish_step(self, what: str) -> None:
        self.n = min(self.n + 1, self.steps)
        self.lines.append(what)

    def done(self, what: str) -> None:
        self.n = self.steps
        self.title = what  # no timing: the stored notebook stays the same from run to run
        self._show("", finished=True)
