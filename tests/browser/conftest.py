"""Fixtures for the browser tests: one JupyterLab per module on a copy of labs/, a fresh Chromium per test.

They skip, with the reason, where Debian's chromium, JupyterLab or Playwright is missing; .ci/run installs
chromium. No browser is ever downloaded: Playwright drives /usr/bin/chromium.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest
from labserver import LABS, LabServer, copy_labs_without_outputs

# Debian's chromium, started as the machine notes say: headless, no sandbox (CI runs as root), and
# nothing that phones home (the network is closed, so those connections would only fail). /dev/shm is
# small in containers, hence --disable-dev-shm-usage.
CHROMIUM_PATH = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def _missing() -> str | None:
    if not os.access(CHROMIUM_PATH, os.X_OK):
        return f"Debian chromium not installed at {CHROMIUM_PATH}; .ci/run installs it (apt-get install chromium)"
    for module, what in (("jupyterlab", "JupyterLab"), ("playwright", "Python Playwright")):
        if importlib.util.find_spec(module) is None:
            return f"{what} is not installed in this environment (pip install -e '.[lab,notebook,test]')"
    return None


def _serve(tmp_path_factory, name: str, copy):
    """A JupyterLab on what ``copy(dst)`` puts in a fresh folder, stopped (kernels too) at the end."""
    reason = _missing()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp(name)
    copy(tmp / "labs")
    server = LabServer(root=tmp / "labs", home=tmp / "home")
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """A JupyterLab serving output-free copies of labs/: the learner's copies and, in solutions/, the labs
    with answers (their checks say Correct); stopped (kernels too) after the module."""
    yield from _serve(tmp_path_factory, "jupyterlab", lambda dst: copy_labs_without_outputs(LABS, dst))


@pytest.fixture(scope="module")
def stored_lab_server(tmp_path_factory):
    """A JupyterLab serving the learner's copies (labs/*.ipynb) exactly as stored, outputs and widget state
    included: what ``./scripts/lab`` opens. The notebooks are not trusted on this fresh Jupyter home."""
    yield from _serve(tmp_path_factory, "jupyterlab-stored", lambda dst: shutil.copytree(
        LABS, dst, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")))


@pytest.fixture(scope="module")
def playwright_chromium():
    reason = _missing()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw.chromium


@pytest.fixture
def page(playwright_chromium, tmp_path):
    """A page in a new Chromium with a fresh, empty profile (``--user-data-dir`` in tmp)."""
    context = playwright_chromium.launch_persistent_context(
        str(tmp_path / "chromium-profile"), executable_path=CHROMIUM_PATH, headless=True, args=CHROMIUM_ARGS,
        viewport={"width": 1400, "height": 900}, timeout=60_000)
    try:
        yield context.pages[0] if context.pages else context.new_page()
    finally:
        context.close()
