"""The widgets against a real API-only embedded cluster: what they read comes through the Kubernetes API.

No scheduler or kubelet runs here (``control_plane=False``); where the test needs their effects it writes
them through the API the way those loops do (a binding, a status condition, a GPU-state ConfigMap, a
container log file). ``test_widgets_control_plane.py`` runs them against the real loops.
"""

from __future__ import annotations

import time

import pytest
from widget_objects import alloc, gpu, proc, state_cm

from mockgpu.control.kubelet.containerlogs import cri_line
from mockgpu.widgets import ClusterGone, ClusterMap, LabCluster, MemoryView, PodInspector, SubmitPanel, connect
from mockgpu.widgets.panels import PendingTimeline
from mockgpu.widgets.submit import Submission, deployment_manifest, job_manifest, pod_manifest

G0 = gpu(0)["uuid"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with LabCluster("clusters/seed-4x2.yaml", name="widgets-test", home=tmp_path_factory.mktemp("home"),
                    control_plane=False) as lab:
        yield lab


@pytest.fixture(autouse=True)
def clean(lab):
    yield
    lab.client.delete_pods("default")


def _bind(lab, name: str, node: str) -> None:
    lab.client.core.create_namespaced_pod_binding(name, "default", {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}}, _preload_content=False)


def _publish(lab, cm: dict) -> None:
    core = lab.client.core
    try:
        core.create_namespace({"metadata": {"name": "mockgpu-system"}}, _preload_content=False)
    except Exception:  # noqa: BLE001 - already there
        pass
    try:
        core.delete_namespaced_config_map(cm["metadata"]["name"], "mockgpu-system", _preload_content=False)
    except Exception:  # noqa: BLE001 - not there yet
        pass
    core.create_namespaced_config_map("mockgpu-system", cm, _preload_content=False)


def test_cluster_map_draws_the_spec_nodes_and_a_pending_pod(lab):
    panel = SubmitPanel(lab.client)
    result = panel.submit(Submission("inspect", 4, name="big"))
    assert result.kind == "waiting" and result.pod == "default/big"
    m = ClusterMap(lab.client).refresh()
    assert [n.name for n in m.nodes] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert all(n.resources == {"nvidia.com/gpu": (2, 0)} for n in m.nodes)
    assert [h.pod for h in m.pending] == ["default/big"]


def test_a_bound_pod_with_published_devices_colours_its_gpu(lab):
    SubmitPanel(lab.client).submit(Submission("train", 1, name="t1"))
    _bind(lab, "t1", "gpu-0")
    _publish(lab, state_cm("gpu-0", [gpu(0, used=8192), gpu(1)], [alloc("t1", "nvidia.com/gpu", [G0])],
                           [proc("t1", G0, 0, 8192)]))
    panel = ClusterMap(lab.client)
    m = panel.refresh()
    assert [h.pod for h in m.nodes[0].gpus[0].holders] == ["default/t1"] and m.nodes[0].resources[
        "nvidia.com/gpu"] == (2, 1)
    assert 'data-pod="default/t1"' in panel.html.value
    (g0, _g1) = MemoryView(lab.client, nodes=["gpu-0"]).refresh()
    assert [(p.pod, p.used_mib) for p in g0.pods] == [("default/t1", 8192)]


def test_half_a_gpu_is_refused_by_the_api_server_and_shown_in_the_panel(lab):
    panel = SubmitPanel(lab.client)
    result = panel.submit(Submission("inspect", "0.5", name="half"))
    assert result.kind == "refused" and "422" in result.message and "must be an integer" in result.message
    assert "must be an integer" in panel.html.value and "Traceback" not in panel.html.value


def test_an_unschedulable_pod_shows_the_scheduler_message_in_panel_and_inspector(lab):
    panel = SubmitPanel(lab.client)
    panel.submit(Submission("inspect", 4, name="big"))
    msg = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: " \
          "4 No preemption victims found for incoming pod."
    lab.client.core.patch_namespaced_pod_status("big", "default", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg}]}})
    assert panel.refresh().kind == "pending" and "4 Insufficient nvidia.com/gpu" in panel.html.value
    m = PodInspector(lab.client).show("big")
    assert m.failed_message == msg


def test_inspector_reads_the_container_log_through_the_api(lab):
    SubmitPanel(lab.client).submit(Submission("inspect", 1, name="look"))
    _bind(lab, "look", "gpu-1")
    pod = lab.client.get_pod("default", "look")
    # the kubelet's CRI layout: <ns>_<pod>_<uid>/<container>/<restart>.log, one "<time> stdout F <line>" per line
    logdir = lab.cluster.state.pod_logs_dir / f"default_look_{pod['metadata']['uid']}" / "main"
    logdir.mkdir(parents=True)
    lines = (f"NVIDIA_VISIBLE_DEVICES={G0}", "CUDA_VISIBLE_DEVICES=<unset>", "CUDA devices: 1")
    (logdir / "0.log").write_bytes(b"".join(cri_line("stdout", line) for line in lines))
    inspector = PodInspector(lab.client)
    m = inspector.show("look")
    assert m.node == "gpu-1" and m.env == {"NVIDIA_VISIBLE_DEVICES": G0, "CUDA_VISIBLE_DEVICES": "<unset>"}
    assert "mockgpu-inspector" in inspector.html.value


def test_timeline_prices_the_wait_of_a_pending_pod(lab):
    SubmitPanel(lab.client).submit(Submission("inspect", 4, name="big"))
    m = PendingTimeline(lab.client).refresh()
    (row,) = m.rows
    assert row.pod == "default/big" and row.pending and m.capacity == 8 and m.price_key == "A100-80GB"
    assert row.idle_gpu_hours == pytest.approx(8 * row.waited_s / 3600)


def test_live_watch_redraws_when_a_pod_appears(lab):
    panel = ClusterMap(lab.client)
    panel.refresh()
    live = panel.watch(throttle=0.05)
    try:
        SubmitPanel(lab.client).submit(Submission("inspect", 4, name="watched"))
        deadline = time.monotonic() + 10
        while "default/watched" not in panel.html.value and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "default/watched" in panel.html.value
    finally:
        panel.stop()
    assert live._stopped.is_set()


def test_a_missing_kubeconfig_says_how_to_start_a_cluster(tmp_path):
    with pytest.raises(ClusterGone, match="mockgpu up --spec clusters/seed-4x2.yaml"):
        connect(tmp_path / "nope")


def test_a_stopped_cluster_shows_a_message_with_the_command_not_a_traceback(tmp_path):
    lab = LabCluster("clusters/seed-4x2.yaml", name="gone", home=tmp_path, control_plane=False).start()
    panel = ClusterMap(lab.client)
    assert panel.refresh() is not None
    lab.close()
    assert panel.refresh() is None
    assert "mockgpu-error" in panel.html.value
    assert "mockgpu up --spec clusters/seed-4x2.yaml --name gone" in panel.html.value


def test_a_lab_run_after_a_crashed_run_starts_clean(tmp_path):
    first = LabCluster("clusters/seed-4x2.yaml", name="again", home=tmp_path, control_plane=False).start()
    SubmitPanel(first.client).submit(Submission("inspect", 1, name="left-over"))
    first.cluster.stop()  # the kernel died: state stays behind
    with LabCluster("clusters/seed-4x2.yaml", name="again", home=tmp_path, control_plane=False) as second:
        assert second.client.list_pods() == []
    assert not (tmp_path / "again").exists()


def test_the_submit_button_creates_the_pod_the_controls_describe(lab):
    panel = SubmitPanel(lab.client, profiles=["default-scheduler", "bin-packing"])
    panel.refresh()
    assert list(panel.resource.options) == ["nvidia.com/gpu"]
    panel.scenario.value, panel.gpus.value, panel.scheduler.value = "train", 2, "bin-packing"
    panel.name.value = "clicked"
    panel.button.click()
    pod = lab.client.get_pod("default", "clicked")
    assert pod["spec"]["schedulerName"] == "bin-packing"
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert 'data-kind="waiting"' in panel.html.value


def test_with_mockgpu_kubeconfig_a_lab_uses_that_cluster_and_deletes_only_its_own_pods(tmp_path, monkeypatch):
    with LabCluster("clusters/seed-4x2.yaml", name="shared", home=tmp_path, control_plane=False) as owner:
        owner.client.create_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "not-a-lab-pod"},
                                 "spec": {"containers": [{"name": "c", "image": "x"}]}})
        monkeypatch.setenv("MOCKGPU_KUBECONFIG", str(owner.cluster.kubeconfig))
        with LabCluster("clusters/seed-4x2.yaml", name="lab99") as lab:
            assert lab.external and lab.cluster is None
            assert len(lab.client.list_nodes()) == 4
            lab.submit("lab-pod", "inspect", 1)
        names = [p["metadata"]["name"] for p in owner.client.list_pods("default")]
        assert names == ["not-a-lab-pod"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: pod_manifest(Submission("inspect", 1, name="p")),
        lambda: job_manifest(Submission("train", 1, name="j")),
        lambda: deployment_manifest(Submission("infer", 1, name="d"), 2),
    ],
    ids=["pod", "job", "deployment"],
)
def test_on_kind_a_lab_runs_its_workloads_in_the_loaded_mockgpu_image(make):
    """kind nodes run real containers: what the client creates names the image ``up`` loaded, never pulled;
    the caller's manifest (which a lab may print) stays as it was."""
    from mockgpu.backends.common.images import mockgpu_image
    from mockgpu.widgets.client import with_image

    untouched = make()
    manifest = make()
    assert with_image(manifest, None) is manifest  # embedded/upstream: the kubelets ignore the image
    placed = with_image(manifest, (mockgpu_image(), "Never"))
    assert manifest == untouched
    spec = placed["spec"]["template"]["spec"] if "template" in placed["spec"] else placed["spec"]
    assert [(c["image"], c["imagePullPolicy"]) for c in spec["containers"]] == [(mockgpu_image(), "Never")]
    # the pod identity the embedded kubelet gives the fake CUDA (nvidia-smi, OOM log), here by the downward API
    (container,) = spec["containers"]
    assert {e["name"]: e.get("value") or e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}.items() >= {
        "MOCKGPU_POD_NAME": "metadata.name", "MOCKGPU_POD_NAMESPACE": "metadata.namespace",
        "MOCKGPU_CONTAINER_NAME": container["name"]}.items()
