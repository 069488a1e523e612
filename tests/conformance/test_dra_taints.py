"""DRA device taints, side by side (issue 21 item 2): the real kube-scheduler and kube-controller-manager's device
taint eviction controller against the embedded ones, on the slices our driver publishes. A ``NoSchedule`` or
``NoExecute`` taint (in the slice or from a DeviceTaintRule) keeps an untolerating claim off a device; a toleration
lets it on (and is copied into the allocation result); a ``NoExecute`` DeviceTaintRule made after the pod was
scheduled evicts it (``DisruptionTarget``, ``DeviceTaintManagerEviction`` events, the rule's
``EvictionInProgress`` condition), unless the request tolerates it (forever, or for ``tolerationSeconds``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dra_harness import DRIVER, DraCase, DraRunner, claim, devices_of, dra_pod, request
from kubernetes import client

ROOT = Path(__file__).resolve().parents[2]
A100 = "A100-SXM4-80GB"
KEY = "gpu.mockgpu.io/xid"


def pool(name: str, count: int = 1, nodes: int = 1) -> dict:
    return {"name": name, "count": nodes, "gpu": {"model": A100, "count": count}}


def taint(effect: str, value: str = "79") -> dict:
    return {"key": KEY, "value": value, "effect": effect}


def rule(name: str, effect: str, **selector: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": selector, "taint": taint(effect)}}


def one_gpu(name: str, pod: str, **exactly) -> tuple[list[dict], list[dict]]:
    return [claim(name, request("gpu", **exactly))], [dra_pod(pod, gpu={"resourceClaimName": name})]


TOLERATE = [{"key": KEY, "operator": "Exists", "effect": "NoExecute"}]

CASES = [
    DraCase("t01 NoSchedule taint in the slice: the other GPU", [pool("t01-a", count=2)],
            *one_gpu("c", "t01-p"), taints={"gpu-0": [taint("NoSchedule")]},
            predicate=lambda req, d: d["attributes"]["index"]["int"] == 1, section="dra-taints"),
    DraCase("t02 NoExecute taint on the only GPU: unschedulable", [pool("t02-a")], *one_gpu("c", "t02-p"),
            taints={"gpu-0": [taint("NoExecute")]}, expect=(False,), section="dra-taints"),
    DraCase("t03 a toleration lets the claim have the tainted GPU", [pool("t03-a")],
            *one_gpu("c", "t03-p", tolerations=[{"key": KEY, "operator": "Exists"}]),
            taints={"gpu-0": [taint("NoSchedule")]}, section="dra-taints"),
    DraCase("t04 NoSchedule DeviceTaintRule on one node's pool: the other node", [pool("t04-a", nodes=2)],
            *one_gpu("c", "t04-p"), rules=[rule("t04-r", "NoSchedule", driver=DRIVER, pool="t04-a-0")],
            predicate=lambda req, d: True, section="dra-taints"),
    DraCase("t05 NoExecute DeviceTaintRule evicts the pod of a claim on the device", [pool("t05-a")],
            *one_gpu("c", "t05-p"), evict_rule=rule("t05-r", "NoExecute", driver=DRIVER, pool="t05-a-0",
                                                    device="gpu-0"),
            expect_evicted=(True,), rule_reason="Completed", section="dra-taints"),
    DraCase("t06 a NoExecute toleration keeps the pod", [pool("t06-a")], *one_gpu("c", "t06-p", tolerations=TOLERATE),
            evict_rule=rule("t06-r", "NoExecute", driver=DRIVER), expect_evicted=(False,), rule_reason="NotStarted",
            section="dra-taints"),
    DraCase("t07 tolerationSeconds 3: evicted after it", [pool("t07-a")],
            *one_gpu("c", "t07-p", tolerations=[{**TOLERATE[0], "tolerationSeconds": 3}]),
            evict_rule=rule("t07-r", "NoExecute", pool="t07-a-0"), expect_evicted=(True,), rule_reason="Completed",
            section="dra-taints"),
    DraCase("t08 effect None: nothing evicted, the rule says what NoExecute would do", [pool("t08-a", count=2)],
            *one_gpu("c", "t08-p"), evict_rule=rule("t08-r", "None", pool="t08-a-0"), expect_evicted=(False,),
            rule_reason="NoEffect", section="dra-taints"),
]


@pytest.fixture(scope="module")
def device_classes(upstream_cluster, embedded_cluster):
    docs = list(yaml.safe_load_all((ROOT / "clusters" / "dra" / "deviceclasses.yaml").read_text()))
    for c in (upstream_cluster, embedded_cluster):
        res = client.ResourceV1Api(c.api_client())
        for d in docs:
            res.create_device_class(d)
    return [d["metadata"]["name"] for d in docs]


@pytest.mark.parametrize("case", CASES, ids=[c.name.split()[0] for c in CASES])
def test_device_taints(report, sides, device_classes, case):
    emb, up = sides
    runner = DraRunner(emb, up)
    diffs = runner.run(case)
    open_ = report.add("dra-taints", case.name, diffs)
    for side, alloc in runner.last.items():
        for pod, d in alloc.decisions.items():
            print(f"{case.name}: {side} {pod} -> {d.node or d.event}; claims "
                  f"{[devices_of(alloc.claims[c]) for c in alloc.pod_claims.get(pod, []) if c in alloc.claims]}")
    for side, seen in runner.last_eviction.items():
        print(f"{case.name}: {side} after {case.evict_rule['metadata']['name']}: {seen}")  # type: ignore[index]
    assert not open_, "\n".join(f"{k}: {d}" for k, d in open_)
    for side, alloc in runner.last.items():
        got = tuple(alloc.decisions[p["metadata"]["name"]].node is not None for p in case.pods)
        assert got == case.expect, f"{side}: scheduled {got}, the case expects {case.expect}"
