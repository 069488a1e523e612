"""Lab 01 as a learner meets it: the stored learner copy opened in JupyterLab, Run All, then the submit panel
used by hand; the pod must show up in the live cluster map without any cell being re-run (issue 18)."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("playwright", reason="Python Playwright is not installed (pip install -e '.[test]')")

from labpage import docs_screenshot, open_notebook, run_all_cells  # noqa: E402
from labserver import LABS, artifacts_dir  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]
RAW = ("HTML(value=", "VBox(children=", "IntProgress(", "<mockgpu.widgets")
LAB01 = sorted(LABS.glob("01-*.ipynb"))


def wait_until_settled(page, timeout_s: float = 180.0) -> list[str]:
    """Run All is over: no cell queued or running ([*]) and the kernel idle, twice in a row 1 s apart."""
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
        idle = "| Idle" in page.locator("#jp-main-statusbar").inner_text()
        now = prompts if idle and not any("*" in p for p in prompts) else None
        if now is not None and now == last:
            return now
        last = now
        time.sleep(1)
    raise TimeoutError(f"Run All not over after {timeout_s:.0f} s")


def outputs_text(page) -> str:
    return "\n".join(page.locator(".jp-Notebook .jp-OutputArea-output").all_inner_texts())


@pytest.mark.skipif(not LAB01, reason="no labs/01-*.ipynb")
def test_lab01_learner_copy_shows_pictures_then_follows_a_submitted_pod(stored_lab_server, page):
    notebook = LAB01[0].name
    try:
        open_notebook(page, stored_lab_server.url(f"/doc/tree/{notebook}"))
        # first open, nothing run: every widget is a picture (its stored HTML), none is Python text
        maps = page.locator(".jp-OutputArea-output .mockgpu-clustermap")
        expect(maps.first).to_be_visible(timeout=30_000)
        assert maps.count() >= 3
        expect(maps.first.locator(".mockgpu-gpu")).to_have_count(8)  # the empty cluster: 8 GPU tiles
        text = outputs_text(page)
        assert not [r for r in RAW if r in text], [r for r in RAW if r in text]
        expect(page.locator(".jp-OutputArea-output .mockgpu-submit")).to_be_visible()  # the panel's picture
        maps.nth(1).scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts_dir() / "lab01-first-open.png"))
        docs_screenshot(maps.nth(1), "lab01-first-open-picture.png")  # as stored, nothing run

        run_all_cells(page)
        # the submit panel (a live widget) once its cell ran; exercise cells a learner has not filled in may
        # stop Run All later, the panel and its map are above them
        submit = page.locator(".jp-OutputArea-output .widget-button", has_text="Submit")
        expect(submit).to_be_visible(timeout=180_000)
        prompts = wait_until_settled(page)  # nothing is re-run from here on: the prompts must stay as they are

        panel = page.locator(".jp-OutputArea-output .widget-vbox",
                             has=page.locator(".widget-button", has_text="Submit")).last
        # a training pod (it runs until deleted; an `inspect` pod is done in a second and leaves the map)
        panel.locator(".widget-dropdown", has_text="scenario").locator("select").select_option("train")
        panel.locator(".widget-text", has_text="name").locator("input").fill("my-pod")
        gpus = panel.locator(".widget-inline-hbox", has_text="GPUs").locator("input")
        gpus.fill("2")
        gpus.press("Tab")  # the value reaches the kernel on change
        time.sleep(0.5)
        submit.click()
        started = time.monotonic()
        # the live map under the panel draws the pod on the two GPUs it got, without any cell re-run
        live_box = page.locator(".jp-OutputArea-output .widget-vbox", has_text="live: follows the cluster",
                                has=page.locator(".mockgpu-clustermap")).first
        live = live_box.locator(".mockgpu-clustermap")
        expect(live.locator(".mockgpu-gpu .mockgpu-replica[data-pod='default/my-pod']")).to_have_count(
            2, timeout=20_000)
        seconds = time.monotonic() - started
        expect(panel.locator(".mockgpu-outcome")).to_contain_text("my-pod")
        assert page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt").all_inner_texts() == prompts
        print(f"the submitted pod was drawn in the live map {seconds:.1f} s after the click")
        # the box, not the map: a redraw replaces the map's HTML (an element screenshot would lose it)
        live_box.screenshot(path=str(artifacts_dir() / "lab01-live-map-after-submit.png"))
        docs_screenshot(live_box, "lab01-live-map-after-submit.png")
    finally:
        page.screenshot(path=str(artifacts_dir() / f"{Path(notebook).stem}-learner.png"), full_page=True)
        stored_lab_server.shutdown_kernels()


STORED = sorted(LABS.glob("[0-9][0-9]-*.ipynb"))


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"lab{p.name[:2]}")
def test_a_stored_learner_copy_opens_with_pictures_not_python_text(stored_lab_server, page, path):
    """First open, nothing run, notebook untrusted: each stored widget picture is drawn (as many maps,
    inspectors and memory views as the stored outputs hold), none is shown as Python text."""


    nb = nbformat.read(path, as_version=4)
    stored = [o["data"]["text/html"] for c in nb.cells for o in c.get("outputs", [])
              if "text/html" in o.get("data", {})]
    try:
        open_notebook(page, stored_lab_server.url(f"/doc/tree/{path.name}"))
        for cls in ("mockgpu-clustermap", "mockgpu-inspector", "mockgpu-memory", "mockgpu-mig"):
            want = sum(html.count(f'class="{cls}"') for html in stored)
            expect(page.locator(f".jp-OutputArea-output .{cls}")).to_have_count(want, timeout=30_000)
        text = outputs_text(page)
        assert not [r for r in RAW if r in text], [r for r in RAW if r in text]
        mig = page.locator(".jp-OutputArea-output .mockgpu-mig")
        if mig.count():  # the sanitizer keeps the slices' placement: side by side, not stacked
            lefts = mig.evaluate_all("ms => ms.slice(0, 2).map(m => m.getBoundingClientRect().left)")
            assert lefts[0] != lefts[1]
            mig.first.scroll_into_view_if_needed()
    finally:
        page.screenshot(path=str(artifacts_dir() / f"{path.stem}-first-open.png"))
        stored_lab_server.shutdown_kernels()
