"""Deployments, ReplicaSets and Jobs end to end on the embedded backend, driven with kubectl as a user would:
controllers, scheduler and fake kubelets running workloads from the allowlist (``sleep``, ``sh``, ``echo``).

The issue's "done when": a 3-replica GPU Deployment gets 3 Running pods on distinct GPUs and ``kubectl rollout
status`` succeeds; ``kubectl create job`` completes and ``kubectl wait --for=condition=complete`` returns;
deleting the Deployment removes its pods.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import polling
import pytest
from kubectl_harness import KUBECTL, events, get, kubectl_runner

from mockgpu.backends.embedded import EmbeddedCluster

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"
pytestmark = [pytest.mark.skipif(KUBECTL is None, reason="no kubectl on PATH"), pytest.mark.timeout(180)]
wait_for = functools.partial(polling.wait_for, timeout=60.0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(SEED, home=tmp_path_factory.mktemp("home"), kubelets=True, scheduler=True,
                         delete_on_exit=True) as c:
        yield c


@pytest.fixture(scope="module")
def kubectl(cluster: EmbeddedCluster):
    return kubectl_runner(cluster.kubeconfig, timeout=90)


GPU_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: infer}
spec:
  replicas: 3
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: server
        image: mockgpu/workload
        command: [sh, -c, 'echo "GPU=$NVIDIA_VISIBLE_DEVICES"; sleep 600']
        resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_gpu_deployment_runs_on_distinct_gpus_rolls_out_and_is_deleted_with_its_pods(kubectl):
    kubectl("apply", "-f", "-", stdin=GPU_DEPLOYMENT)
    out = kubectl("rollout", "status", "deployment/infer", "--timeout=90s")
    assert 'deployment "infer" successfully rolled out' in out
    pods = [p for p in get(kubectl, "pods", "-l", "app=infer")["items"] if not p["metadata"].get("deletionTimestamp")]
    assert len(pods) == 3 and all(p["status"]["phase"] == "Running" for p in pods)
    rs = get(kubectl, "replicasets", "-l", "app=infer")["items"]
    assert len(rs) == 1
    rs_name, pod_hash = rs[0]["metadata"]["name"], rs[0]["metadata"]["labels"]["pod-template-hash"]
    assert rs_name == f"infer-{pod_hash}"
    for p in pods:
        assert p["metadata"]["name"].startswith(f"{rs_name}-") and len(p["metadata"]["name"]) == len(rs_name) + 6
        assert p["metadata"]["labels"] == {"app": "infer", "pod-template-hash": pod_hash}
        assert p["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name,
                                                     "uid": rs[0]["metadata"]["uid"], "controller": True,
                                                     "blockOwnerDeletion": True}]

    def gpus() -> list[tuple[str, str]] | None:
        seen = []
        for p in pods:
            log = kubectl("logs", p["metadata"]["name"])
            line = next((ln for ln in log.splitlines() if ln.startswith("GPU=GPU-")), None)
            if line is None:
                return None
            seen.append((p["spec"]["nodeName"], line.removeprefix("GPU=")))
        return seen
    placed = wait_for(gpus, what="each pod's GPU in its log")
    assert len(set(placed)) == 3, placed  # three pods, three different GPUs

    d = get(kubectl, "deployment", "infer")
    assert d["status"]["readyReplicas"] == d["status"]["availableReplicas"] == d["status"]["updatedReplicas"] == 3
    assert d["status"]["observedGeneration"] == d["metadata"]["generation"] == 1
    conds = {c["type"]: (c["status"], c["reason"], c["message"]) for c in d["status"]["conditions"]}
    assert conds == {"Available": ("True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                     "Progressing": ("True", "NewReplicaSetAvailable",
                                     f'ReplicaSet "{rs_name}" has successfully progressed.')}
    assert ("Normal", "ScalingReplicaSet", f"Scaled up replica set {rs_name} from 0 to 3") in events(
        kubectl, "Deployment", "infer")
    created = [m for t, r, m in events(kubectl, "ReplicaSet", rs_name) if r == "SuccessfulCreate"]
    assert sorted(created) == sorted(f"Created pod: {p['metadata']['name']}" for p in pods)
    table = kubectl("get", "deployment", "infer").splitlines()
    assert table[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table[1].split()[:4] == ["infer", "3/3", "3", "3"]

    kubectl("delete", "deployment", "infer")
    wait_for(lambda: not get(kubectl, "pods", "-l", "app=infer")["items"], what="the Deployment's pods gone")
    assert not get(kubectl, "replicasets", "-l", "app=infer")["items"]


def test_kubectl_create_job_completes_and_wait_returns(kubectl):
    assert kubectl("create", "job", "j1", "--image=x", "--", "sleep", "1").strip() == "job.batch/j1 created"
    out = kubectl("wait", "--for=condition=complete", "job/j1", "--timeout=60s")
    assert out.strip() == "job.batch/j1 condition met"
    job = get(kubectl, "job", "j1")
    st = job["status"]
    assert (st["succeeded"], st.get("failed", 0), st.get("active", 0)) == (1, 0, 0)
    assert st["startTime"] <= st["completionTime"] and st["uncountedTerminatedPods"] == {}
    assert [(c["type"], c["status"], c["reason"]) for c in st["conditions"]] == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"), ("Complete", "True", "CompletionsReached")]
    uid = job["metadata"]["uid"]
    pods = get(kubectl, "pods", "-l", "job-name=j1")["items"]
    assert len(pods) == 1 and pods[0]["status"]["phase"] == "Succeeded"
    assert pods[0]["metadata"]["name"].startswith("j1-") and len(pods[0]["metadata"]["name"]) == 8
    assert pods[0]["metadata"]["labels"] == {"batch.kubernetes.io/controller-uid": uid,
                                             "batch.kubernetes.io/job-name": "j1", "controller-uid": uid,
                                             "job-name": "j1"}
    assert not pods[0]["metadata"].get("finalizers")  # the tracking finalizer is gone once counted
    evs = events(kubectl, "Job", "j1")
    assert evs[0] == ("Normal", "SuccessfulCreate", f"Created pod: {pods[0]['metadata']['name']}")
    assert evs[-1] == ("Normal", "Completed", "Job completed")
    row = kubectl("get", "job", "j1").splitlines()
    assert row[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert row[1].split()[:3] == ["j1", "Complete", "1/1"]
    kubectl("delete", "job", "j1")  # kubectl asks for background propagation: the pods go too
    wait_for(lambda: not get(kubectl, "pods", "-l", "job-name=j1")["items"], what="j1's pods gone")


def test_orphaned_job_pods_lose_the_tracking_finalizer(kubectl):
    kubectl("create", "job", "keep", "--image=x", "--", "sleep", "600")
    wait_for(lambda: get(kubectl, "job", "keep")["status"].get("active") == 1, what="keep running")
    kubectl("delete", "job", "keep", "--cascade=orphan")
    wait_for(lambda: "NotFound" in kubectl("get", "job", "keep", check=False), what="keep deleted")
    (pod,) = get(kubectl, "pods", "-l", "job-name=keep")["items"]
    wait_for(lambda: not get(kubectl, "pod", pod["metadata"]["name"])["metadata"].get("finalizers"),
             what="the orphan's finalizer released")
    assert not get(kubectl, "pod", pod["metadata"]["name"])["metadata"].get("ownerReferences")
    kubectl("delete", "pod", pod["metadata"]["name"])  # and it can be deleted like any pod


def test_job_with_parallelism_runs_every_completion(kubectl):
    kubectl("apply", "-f", "-", stdin="""
apiVersion: batch/v1
kind: Job
metadata: {name: par}
spec:
  completions: 4
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: x, command: [sleep, "1"]}]
""")
    peak = 0

    def done() -> bool:
        nonlocal peak
        st = get(kubectl, "job", "par")["status"]
        peak = max(peak, st.get("active", 0))
        return any(c["type"] == "Complete" and c["status"] == "True" for c in st.get("conditions") or [])
    wait_for(done, what="job par Complete")
    assert peak <= 2
    assert get(kubectl, "job", "par")["status"]["succeeded"] == 4
    assert len(get(kubectl, "pods", "-l", "job-name=par")["items"]) == 4


def test_job_past_its_backoff_limit_fails(kubectl):
    kubectl("apply", "-f", "-", stdin="""
apiVersion: batch/v1
kind: Job
metadata: {name: crash}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: x, command: [sh, -c, "exit 3"]}]
""")
    kubectl("wait", "--for=condition=failed", "job/crash", "--timeout=60s")
    st = get(kubectl, "job", "crash")["status"]
    assert st["failed"] == 1 and "succeeded" not in st and "completionTime" not in st
    assert [(c["type"], c["reason"], c["message"]) for c in st["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]
    assert ("Warning", "BackoffLimitExceeded", "Job has reached the specified backoff limit") in events(
        kubectl, "Job", "crash")
    assert kubectl("get", "job", "crash").splitlines()[1].split()[:3] == ["crash", "Failed", "0/1"]


def _replicasets(kubectl, app: str) -> dict[str, tuple[int, str]]:
    items = get(kubectl, "replicasets", "-l", f"app={app}")["items"]
    return {r["metadata"]["name"]: (r["spec"]["replicas"],
                                    r["metadata"]["annotations"]["deployment.kubernetes.io/revision"])
            for r in items}


def test_scale_rollout_restart_and_undo(kubectl):
    kubectl("create", "deployment", "web", "--image=x", "--replicas=2", "--", "sleep", "600")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    (first,) = _replicasets(kubectl, "web")
    assert kubectl("scale", "deployment/web", "--replicas=3").strip() == "deployment.apps/web scaled"
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert _replicasets(kubectl, "web") == {first: (3, "1")}
    assert ("Normal", "ScalingReplicaSet", f"Scaled up replica set {first} from 2 to 3") in events(
        kubectl, "Deployment", "web")

    kubectl("rollout", "restart", "deployment/web")
    kubectl("rollout", "status", "deployment/web", "--timeout=90s")
    after = _replicasets(kubectl, "web")
    (second,) = set(after) - {first}
    assert after == {first: (0, "1"), second: (3, "2")}
    msgs = [m for _, r, m in events(kubectl, "Deployment", "web") if r == "ScalingReplicaSet"]
    assert f"Scaled up replica set {second} from 0 to 1" in msgs  # maxSurge 25% of 3 rounds up to 1
    assert f"Scaled down replica set {first} from 3 to 2" in msgs
    live = [p for p in get(kubectl, "pods", "-l", "app=web")["items"] if not p["metadata"].get("deletionTimestamp")]
    assert {p["metadata"]["labels"]["pod-template-hash"] for p in live} == {second.removeprefix("web-")}

    kubectl("rollout", "undo", "deployment/web")
    kubectl("rollout", "status", "deployment/web", "--timeout=90s")
    assert _replicasets(kubectl, "web") == {first: (3, "3"), second: (0, "2")}  # the old ReplicaSet comes back
    d = get(kubectl, "deployment", "web")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    kubectl("delete", "deployment", "web")


def test_recreate_stops_old_pods_before_starting_new_ones(kubectl):
    kubectl("apply", "-f", "-", stdin="""
apiVersion: apps/v1
kind: Deployment
metadata: {name: rec}
spec:
  replicas: 2
  strategy: {type: Recreate}
  selector: {matchLabels: {app: rec}}
  template:
    metadata: {labels: {app: rec}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: x, command: [sleep, "600"]}]
""")
    kubectl("rollout", "status", "deployment/rec", "--timeout=60s")
    (old,) = _replicasets(kubectl, "rec")
    kubectl("set", "env", "deployment/rec", "MODE=2")
    kubectl("rollout", "status", "deployment/rec", "--timeout=90s")
    (new,) = set(_replicasets(kubectl, "rec")) - {old}
    msgs = [m for _, r, m in events(kubectl, "Deployment", "rec") if r == "ScalingReplicaSet"]
    assert msgs.index(f"Scaled down replica set {old} from 2 to 0") < msgs.index(
        f"Scaled up replica set {new} from 0 to 2")
    kubectl("delete", "deployment", "rec")


def test_orphan_adoption_and_foreground_cascades(kubectl):
    kubectl("create", "deployment", "orph", "--image=x", "--replicas=1", "--", "sleep", "600")
    kubectl("rollout", "status", "deployment/orph", "--timeout=60s")
    kubectl("delete", "deployment", "orph", "--cascade=orphan")
    wait_for(lambda: "NotFound" in kubectl("get", "deployment", "orph", check=False), what="orph deleted")
    (rs,) = get(kubectl, "replicasets", "-l", "app=orph")["items"]
    name = rs["metadata"]["name"]
    wait_for(lambda: not get(kubectl, "replicaset", name)["metadata"].get("ownerReferences"),
             what="the orphaned ReplicaSet released")
    (pod,) = get(kubectl, "pods", "-l", "app=orph")["items"]  # its pod stays, still owned by the ReplicaSet
    assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]

    kubectl("create", "deployment", "orph", "--image=x", "--replicas=1", "--", "sleep", "600")
    uid = get(kubectl, "deployment", "orph")["metadata"]["uid"]
    wait_for(lambda: (get(kubectl, "replicaset", name)["metadata"].get("ownerReferences") or [{}])[0].get("uid")
             == uid, what="the new Deployment adopting the old ReplicaSet")
    kubectl("rollout", "status", "deployment/orph", "--timeout=60s")
    assert [r["metadata"]["name"] for r in get(kubectl, "replicasets", "-l", "app=orph")["items"]] == [name]
    assert [p["metadata"]["name"] for p in get(kubectl, "pods", "-l", "app=orph")["items"]] == [
        pod["metadata"]["name"]]  # same template, same pod: nothing restarted

    kubectl("delete", "deployment", "orph", "--cascade=foreground")  # kubectl waits until the Deployment is gone
    assert "NotFound" in kubectl("get", "replicaset", name, check=False)  # dependents went first
    assert not [p for p in get(kubectl, "pods", "-l", "app=orph")["items"]
                if not p["metadata"].get("deletionTimestamp")]


def test_deployment_that_cannot_fit_exceeds_its_progress_deadline(kubectl):
    kubectl("apply", "-f", "-", stdin="""
apiVersion: apps/v1
kind: Deployment
metadata: {name: huge}
spec:
  replicas: 1
  progressDeadlineSeconds: 3
  selector: {matchLabels: {app: huge}}
  template:
    metadata: {labels: {app: huge}}
    spec:
      containers:
      - {name: c, image: x, command: [sleep, "600"], resources: {limits: {nvidia.com/gpu: 4}}}
""")
    out = kubectl("rollout", "status", "deployment/huge", "--timeout=60s", check=False)
    assert 'error: deployment "huge" exceeded its progress deadline' in out  # no node has 4 GPUs
    conds = {c["type"]: (c["status"], c["reason"]) for c in get(kubectl, "deployment", "huge")["status"]["conditions"]}
    assert conds == {"Available": ("False", "MinimumReplicasUnavailable"),
                     "Progressing": ("False", "ProgressDeadlineExceeded")}
    (pod,) = get(kubectl, "pods", "-l", "app=huge")["items"]
    assert pod["status"]["phase"] == "Pending"
    kubectl("delete", "deployment", "huge")


def test_job_active_deadline_and_suspend(kubectl):
    kubectl("apply", "-f", "-", stdin="""
apiVersion: batch/v1
kind: Job
metadata: {name: slow}
spec:
  activeDeadlineSeconds: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: x, command: [sleep, "600"]}]
""")
    kubectl("wait", "--for=condition=failed", "job/slow", "--timeout=60s")
    st = get(kubectl, "job", "slow")["status"]
    assert [(c["type"], c["reason"]) for c in st["conditions"]] == [("FailureTarget", "DeadlineExceeded"),
                                                                    ("Failed", "DeadlineExceeded")]
    assert ("Warning", "DeadlineExceeded", "Job was active longer than specified deadline") in events(
        kubectl, "Job", "slow")
    wait_for(lambda: not [p for p in get(kubectl, "pods", "-l", "job-name=slow")["items"]
                          if p["status"]["phase"] == "Running"], what="the deadline's pods stopped")

    kubectl("apply", "-f", "-", stdin="""
apiVersion: batch/v1
kind: Job
metadata: {name: later}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: x, command: [sleep, "1"]}]
""")
    wait_for(lambda: any(c["type"] == "Suspended" and c["status"] == "True"
                         for c in get(kubectl, "job", "later")["status"].get("conditions") or []),
             what="later Suspended")
    assert kubectl("get", "job", "later").splitlines()[1].split()[:3] == ["later", "Suspended", "0/1"]
    assert not get(kubectl, "pods", "-l", "job-name=later")["items"]
    kubectl("patch", "job", "later", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    kubectl("wait", "--for=condition=complete", "job/later", "--timeout=60s")
    conds = {c["type"]: (c["status"], c["reason"]) for c in get(kubectl, "job", "later")["status"]["conditions"]}
    assert conds["Suspended"] == ("False", "JobResumed")
    assert [r for _, r, _ in events(kubectl, "Job", "later") if r in ("Suspended", "Resumed")] == ["Suspended",
                                                                                                    "Resumed"]


def test_pod_failure_policy_fails_the_job_on_a_fatal_exit_code(kubectl):
    kubectl("apply", "-f", "-", stdin="""
apiVersion: batch/v1
kind: Job
metadata: {name: fatal}
spec:
  backoffLimit: 6
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: main, operator: In, values: [42]}
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: x, command: [sh, -c, "exit 42"]}]
""")
    kubectl("wait", "--for=condition=failed", "job/fatal", "--timeout=60s")
    st = get(kubectl, "job", "fatal")["status"]
    (pod,) = get(kubectl, "pods", "-l", "job-name=fatal")["items"]  # no retry despite backoffLimit 6
    message = f"Container main for pod default/{pod['metadata']['name']} failed with exit code 42 matching FailJob " \
              "rule at index 0"
    assert [(c["type"], c["reason"], c["message"]) for c in st["conditions"]] == [
        ("FailureTarget", "PodFailurePolicy", message), ("Failed", "PodFailurePolicy", message)]
    assert st["failed"] == 1
    assert ("Warning", "PodFailurePolicy", message) in events(kubectl, "Job", "fatal")


def test_scaling_a_stuck_rollout_is_proportional(kubectl):
    kubectl("create", "deployment", "prop", "--image=x", "--replicas=4", "--", "sleep", "600")
    kubectl("rollout", "status", "deployment/prop", "--timeout=60s")
    (old,) = _replicasets(kubectl, "prop")
    # a template whose containers cannot start (not on the kubelet's allowlist), so its pods never get ready:
    # the rollout stops at maxSurge/maxUnavailable (old 3, new 2)
    kubectl("patch", "deployment", "prop", "--type=json", "-p",
            '[{"op": "replace", "path": "/spec/template/spec/containers/0/command", "value": ["no-such-tool"]}]')
    wait_for(lambda: sorted(r for r, _ in _replicasets(kubectl, "prop").values()) == [2, 3], what="stuck rollout")
    (new,) = set(_replicasets(kubectl, "prop")) - {old}
    assert _replicasets(kubectl, "prop")[old][0] == 3
    kubectl("scale", "deployment/prop", "--replicas=8")
    # 8 + 25% surge = 10 pods in all, shared 3:2 as the ReplicaSets were sized for 5
    wait_for(lambda: {k: r for k, (r, _) in _replicasets(kubectl, "prop").items()} == {old: 6, new: 4},
             what="proportional scaling to 6 and 4")
    msgs = [m for _, r, m in events(kubectl, "Deployment", "prop") if r == "ScalingReplicaSet"]
    assert f"Scaled up replica set {old} from 3 to 6" in msgs, msgs
    assert f"Scaled up replica set {new} from 2 to 4" in msgs, msgs
    kubectl("delete", "deployment", "prop")


def test_paused_deployment_scales_but_does_not_roll_out(kubectl):
    kubectl("create", "deployment", "pz", "--image=x", "--replicas=1", "--", "sleep", "600")
    kubectl("rollout", "status", "deployment/pz", "--timeout=60s")
    (first,) = _replicasets(kubectl, "pz")
    kubectl("rollout", "pause", "deployment/pz")
    kubectl("set", "env", "deployment/pz", "MODE=2")
    kubectl("scale", "deployment/pz", "--replicas=2")
    wait_for(lambda: _replicasets(kubectl, "pz") == {first: (2, "1")}, what="the paused Deployment scaled")
    cond = next(c for c in get(kubectl, "deployment", "pz")["status"]["conditions"] if c["type"] == "Progressing")
    assert (cond["status"], cond["reason"], cond["message"]) == ("Unknown", "DeploymentPaused", "Deployment is paused")
    kubectl("rollout", "resume", "deployment/pz")
    kubectl("rollout", "status", "deployment/pz", "--timeout=90s")
    after = _replicasets(kubectl, "pz")
    assert len(after) == 2 and after[first][0] == 0 and sorted(after.values())[-1] == (2, "2")
    kubectl("delete", "deployment", "pz")
