"""The capstone's auto-check (mockgpu/capstone.py) on a live clusters/capstone.yaml: the cheapest plan passes, and
each kind of wrong plan fails with a hint that names the problem but not the pool or resource to use instead."""

from __future__ import annotations

import pytest

from mockgpu import capstone
from mockgpu.widgets import LabCluster
from mockgpu.widgets.clustermap import cluster_map
from mockgpu.widgets.timeline import USD_PER_GPU_HOUR

GOOD = {"training": ("a100-40", "nvidia.com/gpu"), "inference": ("mig", "nvidia.com/mig-2g.20gb"),
        "notebooks": ("shared", "nvidia.com/gpu.shared")}
# what the hint for a workload must not say: its pool or resource in the cheapest plan
ANSWER_WORDS = {"training": ("a100-40",), "inference": ("2g.20gb",), "notebooks": ("gpu.shared", "shared")}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with LabCluster("clusters/capstone.yaml", name="capstone-test", home=tmp_path_factory.mktemp("home")) as lab:
        yield lab


def test_cheapest_plan_is_found_from_what_the_nodes_advertise(lab):
    available = capstone.offers(lab.client.snapshot().nodes)
    cost, plan = capstone.cheapest_plan(available)
    assert {k: (o.pool, o.resource) for k, o in plan.items()} == GOOD
    a100, a100_40 = USD_PER_GPU_HOUR["A100-80GB"], USD_PER_GPU_HOUR["A100-40GB"]
    assert cost == pytest.approx(4 * a100_40 + 3 * a100 * 2 / 8 + 4 * a100 / 4)


def test_offers_price_each_kind_of_unit(lab):
    available = capstone.offers(lab.client.snapshot().nodes)
    a100 = USD_PER_GPU_HOUR["A100-80GB"]
    assert available[("a100", "nvidia.com/gpu")].per_node == (("a100-0", 2), ("a100-1", 2))
    assert available[("mig", "nvidia.com/mig-3g.40gb")].usd_per_hour == pytest.approx(a100 * 4 / 8)
    assert available[("mig", "nvidia.com/mig-1g.10gb")].total == 5
    shared = available[("shared", "nvidia.com/gpu.shared")]
    assert (shared.kind, shared.total, shared.usd_per_hour) == (capstone.SHARED, 8, pytest.approx(a100 / 4))
    assert ("shared", "nvidia.com/gpu") not in available  # renamed: a whole-GPU request never lands there


def test_a_pod_takes_its_units_from_one_node(lab):
    available = capstone.offers(lab.client.snapshot().nodes)
    two_by_two = available[("a100", "nvidia.com/gpu")]
    assert not capstone._fits([(two_by_two, 4)])
    assert capstone._fits([(two_by_two, 2), (two_by_two, 2)])
    assert not capstone._fits([(two_by_two, 2)] * 3)


def test_the_cheapest_plan_passes_on_the_live_cluster(lab):
    report = capstone.check(lab, GOOD)
    assert report.ok, str(report)
    assert all(o.ok and o.right and not o.hint for o in report.outcomes.values())
    assert report.cost == pytest.approx(capstone.cheapest_plan(capstone.offers(lab.client.snapshot().nodes))[0])
    assert report.summary() == f"All three run, at ${report.cost:.2f} per hour: the lowest this cluster allows."
    lines = capstone.placements(lab)
    assert lines.count("inference: mig-0, 1 x nvidia.com/mig-2g.20gb") == 3
    assert "training: a100-40-0, 4 x nvidia.com/gpu" in lines
    # the check returns once the nodes have published the memory the pods loaded: a map drawn now shows it
    used = {(n.name, g.index): g.memory_used_mib for n in cluster_map(lab.client.snapshot()).nodes for g in n.gpus}
    assert used[("mig-0", 0)] == 3 * 18 * 1024 and used[("shared-0", 0)] + used[("shared-0", 1)] == 4 * 12 * 1024
    assert [used[("a100-40-0", i)] for i in range(4)] == [30 * 1024] * 4


WRONG = [
    # (workload, its pair, what the hint must say)
    ("training", ("a100", "nvidia.com/gpu"), "the training job's pod is Pending: 0/6 nodes are available"),
    ("training", ("h100", "nvidia.com/gpu"), "the training pod runs, at $27.52 per hour, but this cluster can run it"),
    ("training", ("mig", "nvidia.com/mig-3g.40gb"), "needs whole GPUs"),
    ("inference", ("mig", "nvidia.com/mig-1g.10gb"), "3 of the 3 inference pods died: out of GPU memory"),
    ("inference", ("mig", "nvidia.com/mig-3g.40gb"), "2 of the 3 inference pods are Pending"),
    ("inference", ("shared", "nvidia.com/gpu.shared"), "must not share GPU memory"),
    ("inference", ("a100", "nvidia.com/gpu"), "for less"),
    ("notebooks", ("mig", "nvidia.com/mig-1g.10gb"), "4 of the 4 notebooks pods died: out of GPU memory"),
    ("notebooks", ("h100", "nvidia.com/gpu"), "for less"),
]


@pytest.mark.parametrize("workload,pair,says", WRONG, ids=[f"{w}-{p[0]}-{p[1].split('/')[1]}" for w, p, _ in WRONG])
def test_a_wrong_pair_fails_with_a_hint_that_does_not_give_the_answer(lab, workload, pair, says):
    report = capstone.check(lab, {**GOOD, workload: pair})
    assert not report.ok
    outcome = report.outcomes[workload]
    assert not outcome.ok and not outcome.right
    assert says in outcome.hint, outcome.hint
    for word in ANSWER_WORDS[workload]:
        assert word not in outcome.hint.replace(pair[0], "").replace(pair[1], ""), outcome.hint
    # the other two workloads are judged on their own, and are right
    assert all(o.ok for k, o in report.outcomes.items() if k != workload), str(report)
    assert "Not quite" in str(report) and f"{workload}: Not quite: " in str(report)
    assert workload in outcome.hint or workload.upper() in outcome.hint  # a hint names what it is about


@pytest.mark.parametrize("value,says", [
    (None, "NOTEBOOKS is still None"),
    ("shared", "should be a pair of strings"),
    (("nowhere", "nvidia.com/gpu"), "NOTEBOOKS: there is no pool 'nowhere'"),
    (("h100", "nvidia.com/gpu.shared"), "NOTEBOOKS: pool 'h100' does not advertise 'nvidia.com/gpu.shared'"),
])
def test_a_malformed_pair_says_what_to_fill_in_and_the_rest_still_runs(lab, value, says):
    report = capstone.check(lab, {**GOOD, "notebooks": value})
    assert not report.ok and says in report.outcomes["notebooks"].hint, str(report)
    assert report.outcomes["training"].ok and report.outcomes["inference"].ok
    assert report.cost is None and report.summary().startswith("Not everything runs yet.")
    assert not lab.pods_of("Deployment", "inference") == []
    assert not [p for p in lab.client.list_pods("default") if p["metadata"]["name"].startswith("notebooks-")]
