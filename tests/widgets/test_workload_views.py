"""Restarts and owners in the views: a Deployment's replica that died of an OOM is restarted in place
(restartCount), and a controller-made pod is named by its owner, since its own name is random."""

from __future__ import annotations

from widget_objects import alloc, gpu, pod, proc, spec_nodes, state_cm

from mockgpu.widgets.clustermap import cluster_map
from mockgpu.widgets.inspector import inspect_pod
from mockgpu.widgets.memory import memory_view
from mockgpu.widgets.render import cluster_map_html, inspector_html, memory_html
from mockgpu.widgets.snapshot import Snapshot, pod_owner, restart_count
from mockgpu.widgets.submit import LAB_LABEL, Submission, deployment_manifest, job_manifest

G0 = "GPU-00000000-0000-0000-0000-000000000000"


def owned(p: dict, kind: str, name: str, template_hash: str | None = None) -> dict:
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1" if kind == "ReplicaSet" else "batch/v1",
                                         "kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}]
    if template_hash:
        p["metadata"]["labels"] = {"pod-template-hash": template_hash}
    return p


def crashlooping(p: dict, restarts: int) -> dict:
    """A pod whose container died with an OOM (exit 1) and waits in the kubelet's back-off."""
    p["status"]["containerStatuses"] = [{
        "name": "main", "restartCount": restarts,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-12-02T10:00:05Z"}}}]
    return p


def test_owner_is_the_deployment_behind_the_replicaset_and_the_job_itself():
    replica = owned(pod("inference-7d9f8c6b5-x2k9q"), "ReplicaSet", "inference-7d9f8c6b5", "7d9f8c6b5")
    assert pod_owner(replica) == "Deployment inference"
    assert pod_owner(owned(pod("trainer-abcde"), "Job", "trainer")) == "Job trainer"
    # a ReplicaSet not named after a Deployment's template hash stays a ReplicaSet
    assert pod_owner(owned(pod("rs-abcde"), "ReplicaSet", "rs", "7d9f8c6b5")) == "ReplicaSet rs"
    assert pod_owner(pod("bare")) == "" and restart_count(pod("bare")) == 0


def test_memory_view_shows_the_restarted_replica_its_owner_and_that_it_died():
    victim = crashlooping(owned(pod("inference-7d9f8c6b5-x2k9q", node="shared-0", phase="Running"),
                                "ReplicaSet", "inference-7d9f8c6b5", "7d9f8c6b5"), 3)
    big = pod("big", node="shared-0", phase="Running")
    ooms = [{"time": "2026-12-02T10:00:05Z", "device": G0, "gpuIndex": 0, "namespace": "default",
             "pod": "inference-7d9f8c6b5-x2k9q", "container": "main", "requestedMiB": 2048, "freeMiB": 1024}]
    cms = [state_cm("shared-0", [gpu(0, replicas=4, used=60416)],
                    [alloc("big", "nvidia.com/gpu", [G0], [0]),
                     alloc("inference-7d9f8c6b5-x2k9q", "nvidia.com/gpu", [G0], [1])],
                    [proc("big", G0, 0, 60416)], ooms)]
    (g0,) = memory_view(Snapshot.of([], [big, victim], configmaps=cms))
    rows = {p.pod: p for p in g0.pods}
    r = rows["default/inference-7d9f8c6b5-x2k9q"]
    assert (r.owner, r.restarts, r.died, r.oom) == ("Deployment inference", 3, True, True)
    assert (rows["default/big"].owner, rows["default/big"].restarts) == ("", 0)
    assert g0.casualties == ("default/inference-7d9f8c6b5-x2k9q",)
    assert "(Deployment inference)" in g0.describe() and "3 restarts" in g0.describe()
    html = memory_html([g0])
    assert "<th" in html and ">restarts<" in html and ">Deployment inference<" in html and ">3<" in html


def test_inspector_names_a_controller_made_pod_by_its_owner_and_counts_restarts():
    p = crashlooping(owned(pod("trainer-abcde", node="gpu-0", phase="Running"), "Job", "trainer"), 2)
    m = inspect_pod(Snapshot.of([], [p]), "default/trainer-abcde")
    assert (m.owner, m.restarts) == ("Job trainer", 2)
    assert m.describe().splitlines()[0] == ("pod default/trainer-abcde (Job trainer): Running, 2 restarts on gpu-0 "
                                            "(scheduler default-scheduler)")
    assert m.describe(by_owner=True).splitlines()[0] == ("the Job trainer's pod: Running, 2 restarts on gpu-0 "
                                                         "(scheduler default-scheduler)")
    assert "of Job trainer" in inspector_html(m) and "2 restarts" in inspector_html(m)
    bare = inspect_pod(Snapshot.of([], [pod("solo")]), "solo")
    assert bare.describe(by_owner=True).startswith("pod default/solo: Pending on -")
    assert "restarts" not in inspector_html(bare)


def test_job_and_deployment_manifests_carry_the_lab_label_and_a_valid_restart_policy():
    s = Submission("train", 4, name="trainer")
    job = job_manifest(s)
    assert job["kind"] == "Job" and job["metadata"]["labels"] == {LAB_LABEL: "true"}
    assert job["spec"]["template"]["metadata"]["labels"] == {LAB_LABEL: "true"}
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert (job["spec"]["parallelism"], job["spec"]["completions"], job["spec"]["backoffLimit"]) == (1, 1, 0)
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    dep = deployment_manifest(Submission("infer", 1, name="inference"), replicas=2)
    tmpl = dep["spec"]["template"]
    assert dep["spec"]["replicas"] == 2 and tmpl["spec"]["restartPolicy"] == "Always"
    assert dep["spec"]["selector"]["matchLabels"].items() <= tmpl["metadata"]["labels"].items()
    assert LAB_LABEL in tmpl["metadata"]["labels"] and LAB_LABEL in dep["metadata"]["labels"]


def test_cluster_map_holder_keeps_its_replica_while_restarting_and_shows_owner_and_restarts():
    victim = crashlooping(owned(pod("inference-7d9f8c6b5-x2k9q", node="shared-0", phase="Running"),
                                "ReplicaSet", "inference-7d9f8c6b5", "7d9f8c6b5"), 4)
    cms = [state_cm("shared-0", [gpu(0, replicas=4)],
                    [alloc("big", "nvidia.com/gpu", [G0], [0]),
                     alloc("inference-7d9f8c6b5-x2k9q", "nvidia.com/gpu", [G0], [1])])]
    nodes = [n for n in spec_nodes("workshop.yaml") if n["metadata"]["name"] == "shared-0"]
    m = cluster_map(Snapshot.of(nodes, [pod("big", node="shared-0", phase="Running"), victim], configmaps=cms))
    (big, replica) = m.nodes[0].gpus[0].holders
    assert (big.owner, big.restarts) == ("", 0)
    assert (replica.owner, replica.restarts, replica.replica) == ("Deployment inference", 4, 1)
    assert "inference-7d9f8c6b5-x2k9q replica 1 (4 restarts)" in m.describe()
    html = cluster_map_html(m)
    assert "of Deployment inference (Running, 4 restarts)" in html and "↻4" in html
