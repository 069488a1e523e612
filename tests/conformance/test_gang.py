"""Gang scheduling, side by side: a PodGroup (``scheduling.k8s.io/v1beta1``, GenericWorkload on) on the embedded
control plane and on the real kube-apiserver and kube-scheduler v1.37.2.

The issue's story: a PodGroup with ``minCount: 2`` and two 2-GPU pods on a cluster with one free node stays
unscheduled as a group (no pod bound), and binds both when a second node frees. Compared: each pod's node,
its ``PodScheduled`` condition (status, reason, message), its FailedScheduling texts, and the PodGroup's
``PodGroupInitiallyScheduled`` condition (status, reason, message). A gang short of pods (PreEnqueue) and a pod
whose PodGroup does not exist are held without any write on both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import upstream_env
from conformance_harness import NS, make_node, make_pod
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mockgpu.backends.embedded import EmbeddedCluster
from mockgpu.backends.upstream import UpstreamCluster

GPU = "nvidia.com/gpu"
SPEC = """apiVersion: mockgpu.io/v1alpha1
kind: ClusterSpec
metadata: {name: gang}
spec:
  nodePools: []
  featureGates: {GenericWorkload: true}
"""


@pytest.fixture(scope="module")
def gang_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gang-spec") / "gang.yaml"
    path.write_text(SPEC)
    return path


@pytest.fixture(scope="module")
def gang_sides(tmp_path_factory: pytest.TempPathFactory, gang_spec: Path) -> Iterator[dict[str, Any]]:
    upstream_env.require_upstream()
    with UpstreamCluster(gang_spec, name="conformance-gang", home=tmp_path_factory.mktemp("gang-up"),
                         controllers="*,-node-lifecycle-controller",
                         apiserver_args=("--disable-admission-plugins=TaintNodesByCondition",),
                         delete_on_exit=True) as up, \
            EmbeddedCluster(gang_spec, name="conformance-gang", home=tmp_path_factory.mktemp("gang-emb"),
                            scheduler=True, delete_on_exit=True) as emb:
        sides = {"embedded": emb.api_client(), "upstream": up.api_client()}
        yield sides
        for api in sides.values():
            api.close()


def _pod(name: str, gpus: int, group: str | None = None, node: str = "") -> dict[str, Any]:
    extra = {"schedulingGroup": {"podGroupName": group}} if group else {}
    return make_pod(name, {GPU: str(gpus)}, limits=True, node_name=node, **extra)


def _podgroup(name: str, count: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": count}}}}


def _observe(api: Any, pods: list[str], group: str) -> dict[str, Any]:
    core, sched = client.CoreV1Api(api), client.SchedulingV1beta1Api(api)
    out: dict[str, Any] = {}
    for name in pods:
        pod = core.read_namespaced_pod(name, NS)
        cond = next(((c.status, c.reason or "", c.message or "") for c in pod.status.conditions or []
                     if c.type == "PodScheduled"), None)
        events = core.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}").items
        failed = sorted({e.message for e in events if e.reason == "FailedScheduling"})
        out[name] = {"node": pod.spec.node_name, "condition": cond, "FailedScheduling": failed}
    status = api.sanitize_for_serialization(sched.read_namespaced_pod_group(group, NS)).get("status") or {}
    out[f"podgroup {group}"] = sorted((c["type"], c["status"], c["reason"], c["message"])
                                      for c in status.get("conditions") or [])
    return out


def _wait(what: Callable[[], bool], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.25)
    return False


def _settled(api: Any, pods: list[str], group: str, bound: bool) -> Callable[[], bool]:
    def check() -> bool:
        seen = _observe(api, pods, group)
        if bound:
            return all(seen[p]["node"] for p in pods) and bool(seen[f"podgroup {group}"])
        return all(seen[p]["condition"] and seen[p]["FailedScheduling"] for p in pods) \
            and bool(seen[f"podgroup {group}"])
    return check


def _differences(emb: dict[str, Any], up: dict[str, Any]) -> list[tuple[str, str]]:
    return [(key, f"embedded {emb[key]!r}, upstream {up[key]!r}") for key in up if emb.get(key) != up[key]]


def test_a_gang_waits_for_room_for_all_its_pods(report, gang_sides):
    """One free node for two 2-GPU pods of a minCount-2 gang: neither is bound; a second node frees: both are."""
    pods = ["w0", "w1"]
    before: dict[str, dict[str, Any]] = {}
    for api in gang_sides.values():
        core, sched = client.CoreV1Api(api), client.SchedulingV1beta1Api(api)
        for n in ("gang-n1", "gang-n2"):
            core.create_node(make_node(n, {"cpu": 32, "memory": "256Gi", GPU: 2}))
        core.create_namespaced_pod(NS, _pod("blocker", 2, node="gang-n2"))
        sched.create_namespaced_pod_group(NS, _podgroup("g", 2))
        for p in pods:
            core.create_namespaced_pod(NS, _pod(p, 2, "g"))
    for name, api in gang_sides.items():
        assert _wait(_settled(api, pods, "g", bound=False)), f"{name}: the gang's pods were not rejected"
        time.sleep(2)  # a retry (the real scheduler's second attempt) must not bind them either
        before[name] = _observe(api, pods, "g")
        assert not any(before[name][p]["node"] for p in pods), f"{name} bound part of the gang: {before[name]}"
    open_ = report.add("gang", "one free node for a gang of two 2-GPU pods",
                       _differences(before["embedded"], before["upstream"]))
    assert not open_, open_

    after: dict[str, dict[str, Any]] = {}
    for api in gang_sides.values():
        client.CoreV1Api(api).delete_namespaced_pod("blocker", NS, grace_period_seconds=0)
    for name, api in gang_sides.items():
        assert _wait(_settled(api, pods, "g", bound=True)), f"{name}: the gang was not bound once room freed"
        seen = _observe(api, pods, "g")
        # two equal pods on two equal nodes: which pod lands where is a tie (upstream takes the first node to pass
        # its parallel filters), so each pod's node is compared as bound or not, and the nodes as a set
        after[name] = {k: ({**v, "FailedScheduling": None, "node": bool(v["node"])} if isinstance(v, dict) else v)
                       for k, v in seen.items()}
        after[name]["nodes"] = sorted(seen[p]["node"] for p in pods)
    open_ = report.add("gang", "a second node frees: the gang binds",
                       _differences(after["embedded"], after["upstream"]))
    assert not open_, open_
    assert after["upstream"]["nodes"] == ["gang-n1", "gang-n2"]


def test_a_gang_short_of_pods_and_a_missing_podgroup_wait_without_a_write(report, gang_sides):
    """PreEnqueue: minCount 3 with one pod, and a pod naming no existing PodGroup: no condition, no event."""
    seen: dict[str, dict[str, Any]] = {}
    for api in gang_sides.values():
        core, sched = client.CoreV1Api(api), client.SchedulingV1beta1Api(api)
        sched.create_namespaced_pod_group(NS, _podgroup("h", 3))
        core.create_namespaced_pod(NS, make_pod("lonely", {"cpu": "1"}, schedulingGroup={"podGroupName": "h"}))
        core.create_namespaced_pod(NS, make_pod("orphan", {"cpu": "1"}, schedulingGroup={"podGroupName": "none"}))
    time.sleep(5)  # both schedulers had time to look at them
    for name, api in gang_sides.items():
        seen[name] = _observe(api, ["lonely", "orphan"], "h")
        try:
            client.SchedulingV1beta1Api(api).read_namespaced_pod_group("none", NS)
            raise AssertionError("PodGroup 'none' exists")
        except ApiException as exc:
            assert exc.status == 404
    open_ = report.add("gang", "PreEnqueue: a gang short of pods, a pod without its PodGroup",
                       _differences(seen["embedded"], seen["upstream"]))
    assert not open_, open_
    assert seen["upstream"]["lonely"] == {"node": None, "condition": None, "FailedScheduling": []}


def test_a_gang_with_no_room_at_all(report, gang_sides):
    """Every GPU taken (by the first test's gang): the cycle's first pod finds no node and the rest are not tried;
    they get the group's status from before its PostFilter's part is appended."""
    pods = [f"k{i}" for i in range(4)]
    seen: dict[str, dict[str, Any]] = {}
    for api in gang_sides.values():
        client.SchedulingV1beta1Api(api).create_namespaced_pod_group(NS, _podgroup("k", 4))
        for p in pods:
            client.CoreV1Api(api).create_namespaced_pod(NS, _pod(p, 2, "k"))
    for name, api in gang_sides.items():
        assert _wait(_settled(api, pods, "k", bound=False)), f"{name}: the gang's pods were not rejected"
        seen[name] = _observe(api, pods, "k")
        # which pod the cycle tries first is queue order (creation time, then arrival): compare the texts as a set
        seen[name] = {"messages": sorted(str(seen[name][p]["condition"]) for p in pods),
                      "podgroup k": seen[name]["podgroup k"], "bound": [seen[name][p]["node"] for p in pods]}
    open_ = report.add("gang", "no room at all for a gang of four", _differences(seen["embedded"], seen["upstream"]))
    assert not open_, open_
