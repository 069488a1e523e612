"""The widgets against the embedded cluster with its real scheduler loop and fake kubelets (no hand-made
state): the scheduler's message in the submit panel, the injected env in the inspector, the pod's GPU on
the map and its wait on the timeline."""

from __future__ import annotations

import pytest

from mockgpu.widgets import ClusterMap, LabCluster, PendingTimeline, PodInspector, Submission, SubmitPanel
from mockgpu.widgets.labkit import has_control_plane

pytestmark = pytest.mark.skipif(not has_control_plane(),
                                reason="this checkout's embedded backend has no scheduler/kubelets yet")
HOLD = ("sh", "-c", "mockgpu-workload inspect && exec sleep 600")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with LabCluster("clusters/seed-4x2.yaml", name="widgets-cp", home=tmp_path_factory.mktemp("home")) as lab:
        yield lab


def test_an_impossible_request_shows_the_schedulers_message_in_the_panel(lab):
    panel = SubmitPanel(lab.client)
    out = panel.submit(Submission("train", 4, name="too-big"), wait=20)
    assert out.kind == "pending"
    assert out.message.startswith("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    assert "4 Insufficient nvidia.com/gpu" in panel.html.value
    rows = PodInspector(lab.client).show("too-big").rows
    assert len(rows) == 4 and all(r.reason == "NodeResourcesFit: Insufficient nvidia.com/gpu" for r in rows)


def test_the_inspector_and_map_show_the_device_the_plugin_allocated(lab):
    lab.submit("holder", command=HOLD)
    lab.wait("holder", "running")
    inspector = PodInspector(lab.client)
    m = lab.eventually(lambda: inspector.show("holder"), lambda m: m.allocations and m.smi_lines, timeout=20)
    (uuid,) = m.allocations[0]["uuids"]
    assert m.env == {"NVIDIA_VISIBLE_DEVICES": uuid, "CUDA_VISIBLE_DEVICES": "<unset>"}
    assert any(uuid in line and "cuda:0" in line for line in m.cuda_lines)
    assert [r.node for r in m.rows if r.selected] == [m.node]
    cmap = ClusterMap(lab.client).refresh()
    tiles = [g for n in cmap.nodes if n.name == m.node for g in n.gpus if g.uuid == uuid]
    assert [h.pod for h in tiles[0].holders] == ["default/holder"]


def test_the_timeline_has_the_bound_pod_and_the_still_pending_one(lab):
    rows = {r.pod: r for r in PendingTimeline(lab.client).refresh().rows}
    assert rows["default/too-big"].pending and not rows["default/holder"].pending
    assert rows["default/holder"].waited_s < rows["default/too-big"].waited_s


def test_settle_waits_until_running_pods_are_on_their_tiles(lab):
    lab.submit("settled", command=("sleep", "600"))
    lab.wait("settled", "running")
    m = ClusterMap(lab.client).settle()
    assert not any(n.unplaced for n in m.nodes)
    assert any(h.pod == "default/settled" for n in m.nodes for g in n.gpus for h in g.holders)
