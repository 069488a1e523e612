"""Widgets that follow the cluster by themselves, still pictures of a step, and a lab cluster's lifetime.

An API-only embedded cluster (``control_plane=False``): the test changes the cluster through the API, as
the scheduler or a learner's submit panel would, and waits for the displayed widget to show it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mockgpu.widgets import ClusterMap, LabCluster, PodInspector, SubmitPanel
from mockgpu.widgets.live import Live
from mockgpu.widgets.panels import Frozen
from mockgpu.widgets.submit import Submission

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def lab(tmp_path):
    with LabCluster("clusters/seed-4x2.yaml", name="live-test", home=tmp_path, control_plane=False) as lab:
        yield lab


def _until(check, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_displayed_map_shows_a_pod_submitted_later_without_a_refresh_call(lab):
    cmap = ClusterMap(lab.client)
    bundle = cmap._repr_mimebundle_()  # what displaying it in a notebook does
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert _until(lambda: "mockgpu-clustermap" in cmap.html.value)
    assert "default/later" not in cmap.html.value
    SubmitPanel(lab.client, live=False).submit(Submission("inspect", 4, name="later"))
    assert _until(lambda: "default/later" in cmap.html.value), cmap.html.value[-300:]
    lab.client.delete_pod("default", "later")
    assert _until(lambda: "default/later" not in cmap.html.value)


def test_the_submit_panel_follows_its_pod_from_pending_to_bound(lab):
    panel = SubmitPanel(lab.client)
    panel._repr_mimebundle_()
    panel.submit(Submission("inspect", 1, name="mine"))
    assert "not scheduled yet" in panel.html.value or "Pending" in panel.html.value
    lab.client.core.create_namespaced_pod_binding("mine", "default", {  # what the scheduler does
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "mine"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-2"}}, _preload_content=False)
    assert _until(lambda: "gpu-2" in panel.html.value), panel.html.value


def test_panels_of_one_cluster_share_one_watcher_and_it_stops_with_the_last(lab):
    cmap, inspector = ClusterMap(lab.client), PodInspector(lab.client)
    first, second = cmap.watch(throttle=0.05), inspector.watch(throttle=0.05)
    assert first is second and first.subscribers == 2
    assert first.threads_alive() == 5  # four watches and one redraw thread, whatever the number of panels
    cmap.stop()
    assert not first.stopped
    inspector.stop()
    assert first.stopped
    assert _until(lambda: first.threads_alive() == 0, timeout=15)  # each watch ends with its request


def test_closing_the_lab_stops_its_widgets(tmp_path):
    lab = LabCluster("clusters/seed-4x2.yaml", name="live-close", home=tmp_path, control_plane=False).start()
    cmap = ClusterMap(lab.client)
    live = cmap.watch()
    lab.close()
    assert live.stopped
    assert Live.of(lab.client) is not live  # a new watcher would be a new one
    Live.of(lab.client).stop()


def test_a_redraw_that_fails_does_not_stop_the_others(lab):
    calls = []

    def broken():
        raise RuntimeError("boom")

    live = Live(lab.client, broken, throttle=0.01, period=0.1).start()
    live.add(lambda: calls.append(1))
    try:
        assert _until(lambda: len(calls) >= 2)  # the period redraws even without an event
    finally:
        live.stop()


def test_a_frozen_picture_keeps_the_step_it_was_taken_at(lab):
    cmap = ClusterMap(lab.client, live=False)
    empty = cmap.freeze()
    assert isinstance(empty, Frozen) and "mockgpu-clustermap" in empty._repr_html_()
    SubmitPanel(lab.client, live=False).submit(Submission("inspect", 4, name="after"))
    later = cmap.freeze()
    assert "default/after" in later._repr_html_()
    assert "default/after" not in empty._repr_html_()
    assert "snapshot" in empty._repr_html_()


def test_every_displayed_widget_carries_its_picture_as_html(lab):
    for panel in (ClusterMap(lab.client, live=False), PodInspector(lab.client, live=False),
                  SubmitPanel(lab.client, live=False)):
        panel.refresh()
        bundle = panel._repr_mimebundle_()
        html = bundle["text/html"]
        assert panel.picture() in html and "VBox(" not in html and "HTML(value" not in html
    assert "Submit" in SubmitPanel(lab.client, live=False)._repr_mimebundle_()["text/html"]


def _status(home: Path) -> str:
    env = {**os.environ, "MOCKGPU_HOME": str(home)}
    env.pop("MOCKGPU_KUBECONFIG", None)
    return subprocess.run([sys.executable, "-m", "mockgpu.cli", "status"], env=env, capture_output=True,
                          text=True, check=True, timeout=60).stdout


def test_status_never_lists_a_lab_cluster_whose_process_was_killed(tmp_path):
    script = textwrap.dedent(f"""
        import sys, time
        from mockgpu.widgets import LabCluster
        LabCluster("clusters/seed-4x2.yaml", name="killed", home={str(tmp_path)!r}, control_plane=False).start()
        print("up", flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        assert "killed" in _status(tmp_path) and "running" in _status(tmp_path)
        os.kill(proc.pid, signal.SIGKILL)  # no atexit, no clean-up: the kernel was killed
        proc.wait(30)
        assert (tmp_path / "killed").exists()  # what it left behind ...
        assert "killed" not in _status(tmp_path)  # ... is not a cluster any more
        assert not (tmp_path / "killed").exists()
    finally:
        proc.kill()
        proc.wait(30)


def test_a_lab_cluster_outlives_its_cells_and_goes_with_the_kernel(tmp_path):
    """A real Jupyter kernel: the cluster is still there after the cells ran; shutting the kernel down (what
    closing a notebook or ``jupyter`` stopping does) deletes it."""
    jupyter_client = pytest.importorskip("jupyter_client", reason="jupyter_client is not installed")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(REPO), env={**os.environ, "MOCKGPU_HOME": str(tmp_path)})
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        reply = kc.execute_interactive(
            "from mockgpu.widgets import LabCluster\n"
            "lab = LabCluster('clusters/seed-4x2.yaml', name='kernel-lab', control_plane=False).start()",
            timeout=120)
        assert reply["content"]["status"] == "ok"
        assert "kernel-lab" in _status(tmp_path)
        kc.stop_channels()
        km.shutdown_kernel(now=False)  # a polite shutdown: atexit runs in the kernel
        assert "kernel-lab" not in _status(tmp_path)
        assert not (tmp_path / "kernel-lab").exists()
    finally:
        if km.is_alive():
            km.shutdown_kernel(now=True)


def test_a_refused_submission_stays_on_the_live_panel(lab):
    panel = SubmitPanel(lab.client)
    result = panel.submit(Submission("inspect", "0.5", name="half"))
    assert result.kind == "refused"
    panel.refresh()  # what the live redraw does
    assert "refused" in panel.html.value
