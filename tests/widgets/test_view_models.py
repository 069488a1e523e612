"""The widgets' view models against hand-made API objects: no cluster, no browser, no kernel."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest
from widget_objects import alloc, event, gpu, mig, pod, proc, spec_nodes, state_cm

from mockgpu.sched.config import default_config
from mockgpu.sched.cycle import annotations as sched_annotations
from mockgpu.sched.cycle import schedule_one
from mockgpu.sched.snapshot import NodeInfo
from mockgpu.widgets.clustermap import cluster_map
from mockgpu.widgets.colors import pod_color
from mockgpu.widgets.inspector import inspect_pod, parse_log
from mockgpu.widgets.memory import memory_view
from mockgpu.widgets.render import cluster_map_html, inspector_html, memory_html, timeline_html
from mockgpu.widgets.snapshot import Snapshot
from mockgpu.widgets.submit import Submission, outcome, pod_manifest, resource_choices
from mockgpu.widgets.timeline import USD_PER_GPU_HOUR, idle_gpu_seconds, price_key, timeline

G0, G1 = gpu(0)["uuid"], gpu(1)["uuid"]


def t(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=UTC)


# --- colours -------------------------------------------------------------------------------------------

def test_pod_colour_is_a_function_of_the_name():
    assert pod_color("default/a") == pod_color("default/a")
    assert len({pod_color(f"default/p{i}") for i in range(50)}) > 40
    assert all(c.startswith("#") and len(c) == 7 for c in (pod_color("x"), pod_color("")))


# --- cluster map ---------------------------------------------------------------------------------------

def test_whole_gpus_are_coloured_by_the_pod_holding_them_and_pending_pods_are_listed():
    nodes = spec_nodes("seed-4x2.yaml")
    pods = [pod("a", 1, node="gpu-0", phase="Running"), pod("big", 4)]
    cms = [state_cm("gpu-0", [gpu(0, used=10240), gpu(1)], [alloc("a", "nvidia.com/gpu", [G0])],
                    [proc("a", G0, 0, 10240)])]
    m = cluster_map(Snapshot.of(nodes, pods, configmaps=cms))
    card = m.nodes[0]
    assert card.name == "gpu-0" and card.published and card.resources == {"nvidia.com/gpu": (2, 1)}
    g0, g1 = card.gpus
    assert [h.pod for h in g0.holders] == ["default/a"] and g0.holders[0].used_mib == 10240
    assert g0.holders[0].color == pod_color("default/a") and not g1.holders
    assert [h.pod for h in m.pending] == ["default/big"]
    assert [n.published for n in m.nodes] == [True, False, False, False]
    assert "GPU 0 [whole] 10240/81920 MiB: a" in m.describe()
    html = cluster_map_html(m)
    assert html.count('class="mockgpu-node"') == 4 and 'data-pod="default/a"' in html


def _claim_pod(name: str, claims: list[dict], **kw) -> dict:
    p = pod(name, 0, **kw)
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": c["name"]} for c in claims]}
    p["spec"]["resourceClaims"] = claims
    return p


def test_pods_with_resource_claims_are_pending_unplaced_or_on_the_devices_the_kubelet_published():
    nodes = spec_nodes("seed-4x2.yaml")
    waiting = _claim_pod("w", [{"name": "gpus", "resourceClaimTemplateName": "two"}])
    started = _claim_pod("s", [{"name": "one", "resourceClaimName": "one-40g"}], node="gpu-0", phase="Running")
    placed = _claim_pod("p", [{"name": "one", "resourceClaimName": "c1"}], node="gpu-1", phase="Running")
    cms = [state_cm("gpu-0", [gpu(0), gpu(1)]),
           state_cm("gpu-1", [gpu(0), gpu(1)], [alloc("p", "resourceclaims/c1", [G1])])]
    m = cluster_map(Snapshot.of(nodes, [waiting, started, placed, pod("big", 4)], configmaps=cms))
    assert [(h.pod, h.resource, h.device_id) for h in m.pending] == [
        ("default/big", "nvidia.com/gpu", "4 x nvidia.com/gpu"), ("default/w", "resourceclaims/gpus", "claim gpus")]
    gpu0, gpu1 = m.nodes[0], m.nodes[1]
    assert [(h.pod, h.resource) for h in gpu0.unplaced] == [("default/s", "resourceclaims/one-40g")]
    assert not gpu1.unplaced and [h.pod for h in gpu1.gpus[1].holders] == ["default/p"]
    assert gpu0.resources == {"nvidia.com/gpu": (2, 0)}  # claims are not extended resources


def test_mig_instances_are_slices_at_their_placement_with_their_own_holders():
    slices = [mig(f"MIG-{i}", "1g.10gb", i, 1, 9856) for i in range(7)]
    cms = [state_cm("mig-0", [gpu(0, mig=slices)], [alloc("p", "nvidia.com/mig-1g.10gb", ["MIG-3"])])]
    nodes = [n for n in spec_nodes("workshop.yaml") if n["metadata"]["name"] == "mig-0"]
    m = cluster_map(Snapshot.of(nodes, [pod("p", 1, resource="nvidia.com/mig-1g.10gb", node="mig-0",
                                            phase="Running")], configmaps=cms))
    tile = m.nodes[0].gpus[0]
    assert tile.mode == "MIG" and [s.start for s in tile.mig] == list(range(7))
    assert [bool(s.holders) for s in tile.mig] == [False, False, False, True, False, False, False]
    html = cluster_map_html(m)
    assert 'data-start="3" data-size="1" data-pod="default/p"' in html
    assert "left:37.50%;width:12.50%" in html  # slot 3 of 8


def test_time_sliced_replicas_stack_on_their_physical_gpu():
    cms = [state_cm("shared-0", [gpu(0, replicas=4), gpu(1, replicas=4)],
                    [alloc("a", "nvidia.com/gpu", [G0], [0]), alloc("b", "nvidia.com/gpu", [G0], [2]),
                     alloc("c", "nvidia.com/gpu", [G1], [1])])]
    pods = [pod(n, 1, node="shared-0", phase="Running") for n in "abc"]
    m = cluster_map(Snapshot.of([], pods, configmaps=cms))
    # a node object is not needed for the state; without one the card is absent, so build with the node
    assert m.nodes == ()
    nodes = [n for n in spec_nodes("workshop.yaml") if n["metadata"]["name"] == "shared-0"]
    card = cluster_map(Snapshot.of(nodes, pods, configmaps=cms)).nodes[0]
    assert card.gpus[0].mode == "time-sliced x4"
    assert [(h.name, h.replica) for h in card.gpus[0].holders] == [("a", 0), ("b", 2)]
    assert [(h.name, h.replica) for h in card.gpus[1].holders] == [("c", 1)]


def test_finished_pods_do_not_hold_devices_and_unpublished_nodes_still_show_gpu_pods():
    nodes = spec_nodes("seed-4x2.yaml")
    pods = [pod("done", 1, node="gpu-0", phase="Succeeded", exit_code=0), pod("run", 2, node="gpu-1",
                                                                            phase="Running")]
    cms = [state_cm("gpu-0", [gpu(0), gpu(1)], [alloc("done", "nvidia.com/gpu", [G0])])]
    m = cluster_map(Snapshot.of(nodes, pods, configmaps=cms))
    assert not m.nodes[0].gpus[0].holders and m.nodes[0].resources["nvidia.com/gpu"] == (2, 0)
    assert [(h.pod, h.device_id) for h in m.nodes[1].unplaced] == [("default/run", "2 x nvidia.com/gpu")]


# --- inspector -----------------------------------------------------------------------------------------

def _scheduled(p: dict, nodes: list[dict], placed: dict[str, list[dict]]) -> dict:
    """Annotate ``p`` the way the scheduler loop does, with the real scheduling core."""
    infos = [NodeInfo.from_node(n, placed.get(n["metadata"]["name"], [])) for n in nodes]
    res = schedule_one(p, infos, default_config().profile_for(p), random.Random(1))
    p["metadata"]["annotations"].update(sched_annotations(res))
    if res.selected_node:
        p["spec"]["nodeName"] = res.selected_node
    else:
        p["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                      "message": res.message}]
    return p


def test_inspector_shows_every_node_and_plugin_and_the_failed_scheduling_message():
    nodes = spec_nodes("seed-4x2.yaml")
    big = _scheduled(pod("big", 4), nodes, {})
    m = inspect_pod(Snapshot.of(nodes, [big]), "big")
    assert m.failed_message.startswith("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    assert [r.node for r in m.rows] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert all(not r.feasible and r.reason == "NodeResourcesFit: Insufficient nvidia.com/gpu" for r in m.rows)
    assert "FailedScheduling: 0/4 nodes" in m.describe()
    assert 'class="mockgpu-failed"' in inspector_html(m)


def test_inspector_marks_the_selected_node_and_sums_final_scores():
    nodes = spec_nodes("seed-4x2.yaml")
    busy = pod("busy", 1, node="gpu-0", phase="Running")
    one = _scheduled(pod("one", 2), nodes, {"gpu-0": [busy]})
    m = inspect_pod(Snapshot.of(nodes, [busy, one]), "default/one")
    sel = [r for r in m.rows if r.selected]
    assert len(sel) == 1 and sel[0].node == one["spec"]["nodeName"] and sel[0].node != "gpu-0"
    gpu0 = next(r for r in m.rows if r.node == "gpu-0")
    assert not gpu0.feasible and gpu0.total is None
    assert sel[0].total == sum(int(v) for v in json.loads(
        one["metadata"]["annotations"]["mockgpu.io/finalscore-result"])[sel[0].node].values())
    assert not m.failed_message


INSPECT_LOG = """NVIDIA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000000
CUDA_VISIBLE_DEVICES=<unset>
CUDA devices: 1
  cuda:0  NVIDIA A100-SXM4-80GB  GPU-00000000-0000-0000-0000-000000000000  80.00 GiB  108 SMs
$ nvidia-smi -L
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-00000000-0000-0000-0000-000000000000)
"""


def test_inspector_reads_the_injected_env_and_what_the_container_saw_from_the_log():
    env, cuda, smi = parse_log(INSPECT_LOG)
    assert env == {"NVIDIA_VISIBLE_DEVICES": G0, "CUDA_VISIBLE_DEVICES": "<unset>"}
    assert cuda[0] == "CUDA devices: 1" and "cuda:0" in cuda[1]
    assert smi == ("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-00000000-0000-0000-0000-000000000000)",)
    p = pod("i", 1, node="gpu-0", phase="Succeeded", exit_code=0)
    cms = [state_cm("gpu-0", [gpu(0), gpu(1)], [alloc("i", "nvidia.com/gpu", [G0])])]
    m = inspect_pod(Snapshot.of(spec_nodes("seed-4x2.yaml"), [p], configmaps=cms), "i", INSPECT_LOG)
    assert m.allocations[0]["deviceIds"] == [G0] and m.container_states == {"main": "Exited 0 (Completed)"}


def _claim(name: str, results: list[tuple[str, str]] | None, ns: str = "default") -> dict:
    """A ResourceClaim as the scheduler leaves it: ``results`` (request, device) allocated, or None (not yet)."""
    status = {} if results is None else {"allocation": {"devices": {"results": [
        {"request": r, "driver": "gpu.mockgpu.io", "pool": "dra-0", "device": d} for r, d in results]}}}
    return {"metadata": {"name": name, "namespace": ns}, "status": status}


@pytest.mark.parametrize("refs, made, stored, claims", [
    # a named claim, allocated
    ([{"name": "gpu", "resourceClaimName": "one-40g"}], [], [_claim("one-40g", [("gpu", "gpu-0")])],
     (("gpu", "gpu", "gpu-0"),)),
    # two claims, in the pod's order; one from a template (the claim controller's name in the pod status)
    ([{"name": "pair", "resourceClaimName": "pair"}, {"name": "mig", "resourceClaimTemplateName": "t"}],
     [{"name": "mig", "resourceClaimName": "d-mig-x7k2p"}],
     [_claim("d-mig-x7k2p", [("mig", "gpu-2-mig-1g10gb-0")]), _claim("pair", [("gpus", "gpu-0"), ("gpus", "gpu-1")])],
     (("pair", "gpus", "gpu-0"), ("pair", "gpus", "gpu-1"), ("mig", "mig", "gpu-2-mig-1g10gb-0"))),
    # not allocated yet; the template's claim not made yet; a claim of the same name in another namespace
    ([{"name": "gpu", "resourceClaimName": "one-40g"}], [], [_claim("one-40g", None)], ()),
    ([{"name": "mig", "resourceClaimTemplateName": "t"}], [], [_claim("d-mig-x7k2p", [("mig", "gpu-2")])], ()),
    ([{"name": "gpu", "resourceClaimName": "one-40g"}], [], [_claim("one-40g", [("gpu", "gpu-0")], "other")], ()),
    ([], [], [], ()),  # no claims: a device-plugin pod
])
def test_inspector_names_the_claim_and_request_that_gave_each_dra_device(refs, made, stored, claims):
    p = pod("d", 0, node="dra-0", phase="Running")
    p["spec"]["resourceClaims"] = refs
    p["status"]["resourceClaimStatuses"] = made
    m = inspect_pod(Snapshot.of([], [p], claims=stored), "d", INSPECT_LOG)
    assert m.claims == claims
    html = inspector_html(m)
    assert ("Allocated through DRA" in html) == bool(claims)
    assert ("Injected by the device plugin" in html) != bool(claims)
    for claim, request, device in claims:
        assert f"claim {claim} (request {request}): {device}" in html
        assert f"claim {claim} request {request}: {device}" in m.describe()


def test_failed_message_falls_back_to_the_newest_failed_scheduling_event():
    p = pod("x", 3)
    evs = [event("x", "FailedScheduling", "old", "2026-12-02T10:00:01Z"),
           event("x", "FailedScheduling", "new", "2026-12-02T10:00:05Z"),
           event("y", "FailedScheduling", "other pod", "2026-12-02T10:00:09Z")]
    assert inspect_pod(Snapshot.of([], [p], evs), "x").failed_message == "new"


# --- memory / OOM --------------------------------------------------------------------------------------

def test_time_slicing_oom_blast_radius_is_every_pod_that_died_on_the_shared_gpu():
    ooms = [{"time": "2026-12-02T10:00:03Z", "device": G0, "gpuIndex": 0, "namespace": "default",
             "pod": "greedy", "container": "main", "requestedMiB": 4096, "freeMiB": 1024},
            {"time": "2026-12-02T10:00:04Z", "device": G0, "gpuIndex": 0, "namespace": "default",
             "pod": "victim", "container": "main", "requestedMiB": 512, "freeMiB": 0}]
    pods = [pod("greedy", 1, node="shared-0", phase="Failed", exit_code=1),
            pod("victim", 1, node="shared-0", phase="Failed", exit_code=1),
            pod("survivor", 1, node="shared-0", phase="Running")]
    cms = [state_cm("shared-0", [gpu(0, replicas=4, used=20480), gpu(1, replicas=4)],
                    [alloc("survivor", "nvidia.com/gpu", [G0], [1])], [proc("survivor", G0, 0, 20480)], ooms)]
    (g0, g1) = memory_view(Snapshot.of([], pods, configmaps=cms))
    assert g0.mode == "time-sliced x4" and g0.casualties == ("default/greedy", "default/victim")
    rows = {p.pod: p for p in g0.pods}
    assert rows["default/survivor"].used_mib == 20480 and not rows["default/survivor"].died
    assert rows["default/greedy"].oom and rows["default/greedy"].died
    assert not g1.pods and not g1.ooms
    assert "blast radius" in memory_html([g0])


def test_mig_oom_stays_inside_its_instance():
    slices = [mig("MIG-a", "3g.40gb", 0, 4, 40192, 40192), mig("MIG-b", "2g.20gb", 4, 2, 19968, 8192)]
    ooms = [{"time": "2026-12-02T10:00:03Z", "device": "MIG-a", "gpuIndex": 0, "namespace": "default",
             "pod": "greedy", "container": "main", "requestedMiB": 4096, "freeMiB": 0}]
    pods = [pod("greedy", 1, node="mig-0", phase="Failed", exit_code=1),
            pod("calm", 1, node="mig-0", phase="Running")]
    cms = [state_cm("mig-0", [gpu(0, mig=slices)], [alloc("calm", "nvidia.com/mig-2g.20gb", ["MIG-b"])],
                    [proc("calm", "MIG-b", 0, 8192)], ooms)]
    (g0,) = memory_view(Snapshot.of([], pods, configmaps=cms))
    assert g0.mode == "MIG" and g0.casualties == ("default/greedy",)
    assert {(p.pod, p.partition, p.died) for p in g0.pods} == {("default/greedy", "MIG 3g.40gb", True),
                                                               ("default/calm", "MIG 2g.20gb", False)}


# --- pending timeline ----------------------------------------------------------------------------------

@pytest.mark.parametrize("product,key", [("NVIDIA-A100-SXM4-80GB", "A100-80GB"), ("NVIDIA-A100-SXM4-40GB",
                         "A100-40GB"), ("NVIDIA-H100-80GB-HBM3", "H100-80GB"), ("NVIDIA-H200", "H200"),
                                         ("Tesla-T4", "A100-80GB")], ids=["a100-80", "a100-40", "h100", "h200",
                                                                          "unknown-default"])
def test_price_rows(product, key):
    assert price_key(product) == key


def test_idle_gpu_seconds_integrates_free_gpus_over_the_wait():
    holds = [(t("2026-12-02T10:00:00"), t("2026-12-02T11:00:00"), 2)]
    assert idle_gpu_seconds(8, holds, t("2026-12-02T10:00:00"), t("2026-12-02T12:00:00")) == 6 * 3600 + 8 * 3600
    assert idle_gpu_seconds(8, holds, t("2026-12-02T12:00:00"), t("2026-12-02T10:00:00")) == 0


def test_a_pending_4_gpu_job_costs_the_idle_gpus_of_its_wait():
    nodes = spec_nodes("seed-4x2.yaml")
    pods = [pod("small", 1, node="gpu-0", phase="Running", created="2026-12-02T10:00:00Z",
                bound="2026-12-02T10:00:00Z"),
            pod("big", 4, created="2026-12-02T10:00:00Z")]
    m = timeline(Snapshot.of(nodes, pods), now=t("2026-12-02T13:00:00"))
    big = next(r for r in m.rows if r.pod == "default/big")
    assert m.capacity == 8 and m.price_key == "A100-80GB" and big.pending and big.waited_s == 3 * 3600
    assert big.idle_gpu_hours == pytest.approx(7 * 3)
    assert big.idle_cost_usd == pytest.approx(21 * USD_PER_GPU_HOUR["A100-80GB"])
    small = next(r for r in m.rows if r.pod == "default/small")
    assert not small.pending and small.waited_s == 0
    assert "$72.05" in timeline_html(m)


def test_a_finished_pod_stops_holding_gpus_at_its_finish_time():
    nodes = spec_nodes("seed-4x2.yaml")
    pods = [pod("done", 8, node="gpu-0", phase="Succeeded", exit_code=0, bound="2026-12-02T10:00:00Z",
                finished="2026-12-02T11:00:00Z"),
            pod("late", 1, created="2026-12-02T10:00:00Z", node="gpu-1", phase="Running",
                bound="2026-12-02T12:00:00Z")]
    m = timeline(Snapshot.of(nodes, pods), now=t("2026-12-02T13:00:00"))
    late = next(r for r in m.rows if r.pod == "default/late")
    assert late.waited_s == 2 * 3600 and late.idle_gpu_hours == pytest.approx(8)  # 0 free, then 8 for 1 h


# --- submit --------------------------------------------------------------------------------------------

def test_submission_becomes_a_pod_with_limits_and_the_profile():
    m = pod_manifest(Submission("train", 2, "nvidia.com/mig-1g.10gb", "bin-packing"))
    c = m["spec"]["containers"][0]
    assert m["metadata"]["name"] == "train-2-mig-1g-10gb" and m["spec"]["schedulerName"] == "bin-packing"
    assert c["resources"] == {"limits": {"nvidia.com/mig-1g.10gb": "2"}} and c["command"][:2] == [
        "mockgpu-workload", "train"]
    assert "schedulerName" not in pod_manifest(Submission("inspect", 1))["spec"]
    with pytest.raises(ValueError, match="unknown scenario"):
        pod_manifest(Submission("mine", 1))


def test_resource_choices_come_from_node_allocatable_whole_gpus_first():
    nodes = spec_nodes("seed-4x2.yaml")
    nodes[0]["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "7"
    assert resource_choices(nodes) == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]
    assert resource_choices([]) == ["nvidia.com/gpu"]


@pytest.mark.parametrize("p,kind", [
    (pod("p", node="gpu-0", phase="Running"), "bound"),
    (pod("p", conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                           "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}]), "pending"),
    (pod("p"), "waiting"),
], ids=["bound", "unschedulable", "not-yet"])
def test_outcome_is_read_from_the_pod(p, kind):
    assert outcome(Snapshot.of([], [p]), "default/p").kind == kind
    assert outcome(Snapshot.of([], []), "default/p").kind == "refused"
