"""The widgets against the embedded cluster with its real scheduler loop and fake kubelets (no hand-made
state): the scheduler's message in the submit panel, the injected env in the inspector, the pod's GPU on
the map and its wait on the timeline."""

from __future__ import annotations

import pytest

from mockgpu.widgets import ClusterMap, LabCluster, PendingTimeline, PodInspector, Submission, SubmitPanel

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


def test_a_labs_job_and_deployment_are_found_by_owner_and_only_its_own_are_cleaned_up(tmp_path, monkeypatch):
    """On a shared cluster a lab's Job and Deployment (and their controller-made pods) go at close; a
    Deployment someone else made stays."""
    from mockgpu.widgets.snapshot import pod_owner
    from mockgpu.widgets.submit import deployment_manifest

    with LabCluster("clusters/seed-4x2.yaml", name="shared-cp", home=tmp_path) as owner:
        theirs = deployment_manifest(Submission("x", 1, name="theirs", command=("sleep", "600")))
        theirs["metadata"]["labels"] = {}
        theirs["spec"]["template"]["metadata"]["labels"] = {"mockgpu.io/app": "theirs"}
        owner.client.create_deployment(theirs)
        monkeypatch.setenv("MOCKGPU_KUBECONFIG", str(owner.cluster.kubeconfig))
        with LabCluster("clusters/seed-4x2.yaml", name="lab98") as lab:
            lab.submit_job("trainer", gpus=4)
            (trainer,) = lab.wait_pods("Job", "trainer")
            assert trainer["metadata"]["name"].startswith("trainer-") and not trainer["spec"].get("nodeName")
            assert pod_owner(trainer) == "Job trainer"
            lab.submit_deployment("serve", gpus=1, replicas=2, command=("sleep", "600"))
            pods = lab.wait_pods("Deployment", "serve", "running", count=2)
            assert {pod_owner(p) for p in pods} == {"Deployment serve"}
            lab.scale("serve", 1)
            lab.eventually(lambda: lab.pods_of("Deployment", "serve"), lambda ps: len(ps) == 1)
        assert [j["metadata"]["name"] for j in owner.client.list_jobs("default")] == []
        assert [d["metadata"]["name"] for d in owner.client.list_deployments("default")] == ["theirs"]
        left = owner.eventually(lambda: owner.client.list_pods("default"),
                                lambda ps: all(pod_owner(p) == "Deployment theirs" for p in ps), timeout=20)
        assert left and {pod_owner(p) for p in left} == {"Deployment theirs"}
