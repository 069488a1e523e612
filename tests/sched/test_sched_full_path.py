"""Scores through the whole path a cluster takes: KubeSchedulerConfiguration text → ``parse_config_text`` →
``schedule_one`` with Pod and Node dicts shaped as the API returns them.

Every expected number here was also produced by kube-scheduler v1.37.2's own plugins (``noderesources.NewFit``
/ ``NewBalancedAllocation`` on a ``cache.NewSnapshot`` of the same objects, feature gates at their v1.37.2
defaults), not only by reading the code.
"""

from __future__ import annotations

import random
import textwrap

import pytest
from sched_builders import container, infos, node, pod, req_pod

from mockgpu.sched.config import default_config, parse_config_text
from mockgpu.sched.cycle import schedule_one

RTCR_CONFIG = textwrap.dedent("""\
    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    profiles:
    - schedulerName: default-scheduler
      pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: RequestedToCapacityRatio
            requestedToCapacityRatio:
              shape:
              - {utilization: 0, score: 10}
              - {utilization: 100, score: 0}
            resources:
            - {name: cpu, weight: 1}
            - {name: memory, weight: 1}
    """)

TWO_CONTAINERS = req_pod("incoming", {"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
RTCR_NODES = [node("node1", {"cpu": "4000", "memory": "10000"}), node("node2", {"cpu": "6000", "memory": "10000"})]

def schedule(profile, incoming, nodes, existing=()):
    return schedule_one(incoming, infos(nodes, list(existing)), profile, random.Random(0))


RTCR_ROWS = [
    # requested_to_capacity_ratio_test.go's row: node1's two pods have *no containers* (st.MakePod().Obj()), so
    # they add nothing. node1 cpu util 75 -> 25, memory 50 -> 50: round(37.5) = 38; node2 50, 50 -> 50.
    ("existing pods without containers (upstream unit-test row)",
     [pod("a", node_name="node1"), pod("b", node_name="node1")], {"node1": 38, "node2": 50}),
    # The API never holds a pod without containers. With one container and no requests each, node1's pods count
    # the non-zero defaults 100m / 200Mi (NodeInfo.NonZeroRequested). 400Mi + 5000 > 10000 bytes: memory util 100
    # -> shaped score 0, and RTCR leaves a 0 out of the weighted mean: node1 = 25. v1.37.2 gives 25 as well.
    ("existing API-shaped pods: one container without requests each",
     [pod("a", container(), node_name="node1"), pod("b", container(), node_name="node1")], {"node1": 25, "node2": 50}),
]


@pytest.mark.parametrize("existing,want", [r[1:] for r in RTCR_ROWS], ids=[r[0] for r in RTCR_ROWS])
def test_rtcr_multi_container_pod_through_config(existing, want):
    profile = parse_config_text(RTCR_CONFIG, "rtcr.yaml").profiles["default-scheduler"]
    res = schedule(profile, TWO_CONTAINERS, RTCR_NODES, existing)
    assert {n: s["NodeResourcesFit"] for n, s in res.raw_scores.items()} == want


DEFAULT_ROWS = [
    # The observation that started the v1.37.2 work: cpu 1 (memory unset) on an empty 32-cpu / 256Gi node.
    # Balanced: with the pod 1/32 vs 0 -> std .0156 -> 98; without 100: 50 + (50 + 98 - 100) // 2 = 74.
    # Fit (LeastAllocated, non-zero memory 200Mi): cpu 96, memory 99 -> 97.
    ("cpu-only pod on an empty node", pod("p", container({"cpu": "1"})),
     [node("n1", {"cpu": "32", "memory": "256Gi"}), node("n2", {"cpu": "32", "memory": "256Gi"})],
     {"n1": {"NodeResourcesFit": 97, "NodeResourcesBalancedAllocation": 74},
      "n2": {"NodeResourcesFit": 97, "NodeResourcesBalancedAllocation": 74}}),
    # Pod-level requests (cpu 1, 1Gi) with a container asking cpu 2, 4Gi. NodeResourcesFit scoring ignores the
    # pod-level requests (its v1.37.2 scorer is built without the PodLevelResources flag): n1 cpu 50, mem 50 -> 50;
    # n2 75, 50 -> 62. BalancedAllocation honours them: n1 .25 vs .125 -> 93, 50 + (50 + 93 - 100) // 2 = 71;
    # n2 .125 vs .125 -> 100 -> 75.
    ("pod-level requests: ignored by Fit scoring, used by BalancedAllocation",
     pod("p", container({"cpu": "2", "memory": "4Gi"}), resources={"requests": {"cpu": "1", "memory": "1Gi"}}),
     [node("n1", {"cpu": "4", "memory": "8Gi"}), node("n2", {"cpu": "8", "memory": "8Gi"})],
     {"n1": {"NodeResourcesFit": 50, "NodeResourcesBalancedAllocation": 71},
      "n2": {"NodeResourcesFit": 62, "NodeResourcesBalancedAllocation": 75}}),
]


@pytest.mark.parametrize("incoming,nodes,want", [r[1:] for r in DEFAULT_ROWS], ids=[r[0] for r in DEFAULT_ROWS])
def test_default_profile_resource_scores(incoming, nodes, want):
    res = schedule(default_config().profiles["default-scheduler"], incoming, nodes)
    got = {n: {p: s[p] for p in ("NodeResourcesFit", "NodeResourcesBalancedAllocation")}
           for n, s in res.raw_scores.items()}
    assert got == want
