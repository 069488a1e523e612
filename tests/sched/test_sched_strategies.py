"""The pure strategy functions H6's simulator calls, plus upstream's TestBrokenLinearFunction table."""

from __future__ import annotations

import pytest

from mockgpu.sched import strategies as s

CM = {"cpu": 1, "memory": 1}

STRATEGY_ROWS = [
    # reference §4b: (4000-3000)*100/4000 = 25, (10000-5000)*100/10000 = 50 -> (25+50)//2 = 37
    ("least: reference example", s.least_allocated, {"cpu": 3000, "memory": 5000}, {"cpu": 4000, "memory": 10000},
     CM, 37),
    # reference §4c: 75, 50 -> 62
    ("most: reference example", s.most_allocated, {"cpu": 3000, "memory": 5000}, {"cpu": 4000, "memory": 10000},
     CM, 62),
    # over-commit: least -> 0 for cpu; most caps at 100
    ("least: over-committed resource scores 0", s.least_allocated, {"cpu": 5000, "memory": 0},
     {"cpu": 4000, "memory": 10000}, CM, 50),
    ("most: over-committed resource capped at 100", s.most_allocated, {"cpu": 5000, "memory": 0},
     {"cpu": 4000, "memory": 10000}, CM, 50),
    # allocatable 0 (GPU absent on a CPU node): skipped, neither score nor weight counted: (50*1+50*1)/2
    ("least: resource with allocatable 0 skipped", s.least_allocated,
     {"cpu": 2000, "memory": 5000, "nvidia.com/gpu": 1}, {"cpu": 4000, "memory": 10000},
     {"cpu": 1, "memory": 1, "nvidia.com/gpu": 5}, 50),
    # GPU weighted: reference §5a node-b: cpu 43, mem 43, gpu 7/8 -> 87: (43+43+5*87)/7 = 521/7 = 74
    ("most: reference 5a node-b with gpu weight 5", s.most_allocated,
     {"cpu": 28000, "memory": 224 * 2**30, "nvidia.com/gpu": 7},
     {"cpu": 64000, "memory": 512 * 2**30, "nvidia.com/gpu": 8}, {"cpu": 1, "memory": 1, "nvidia.com/gpu": 5}, 74),
    # node-a: cpu 52/64 -> 81, mem 288/512 -> 56, gpu 1/8 -> 12: (81+56+60)/7 = 197/7 = 28
    ("most: reference 5a node-a with gpu weight 5", s.most_allocated,
     {"cpu": 52000, "memory": 288 * 2**30, "nvidia.com/gpu": 1},
     {"cpu": 64000, "memory": 512 * 2**30, "nvidia.com/gpu": 8}, {"cpu": 1, "memory": 1, "nvidia.com/gpu": 5}, 28),
    ("least: no configured resource present -> 0", s.least_allocated, {"cpu": 1}, {}, CM, 0),
]


@pytest.mark.parametrize("fn,requested,allocatable,weights,want", [r[1:] for r in STRATEGY_ROWS],
                         ids=[r[0] for r in STRATEGY_ROWS])
def test_strategies(fn, requested, allocatable, weights, want):
    assert fn(requested, allocatable, weights) == want


RTCR_ROWS = [
    # reference §4d quirk: cpu 5000/4000 -> util 100 -> f = 0, dropped; mem 90 -> 10 => 10, not 5
    ("zero shaped score dropped from the mean", {"cpu": 5000, "memory": 9000}, {"cpu": 4000, "memory": 10000},
     ((0, 10), (100, 0)), 10),
    # most-requested-like shape: util 75 -> 75, 50 -> 50: round(62.5) = 63 (RTCR rounds, MostAllocated floors)
    ("rounds half away from zero", {"cpu": 3000, "memory": 5000}, {"cpu": 4000, "memory": 10000},
     ((0, 0), (100, 10)), 63),
    # util 33 (1/3 floored) -> 33 on shape (0,0),(100,10) ; memory util 0 -> 0 dropped -> 33
    ("utilisation floored", {"cpu": 1, "memory": 0}, {"cpu": 3, "memory": 10}, ((0, 0), (100, 10)), 33),
]


@pytest.mark.parametrize("requested,allocatable,shape,want", [r[1:] for r in RTCR_ROWS], ids=[r[0] for r in RTCR_ROWS])
def test_requested_to_capacity_ratio(requested, allocatable, shape, want):
    assert s.requested_to_capacity_ratio(requested, allocatable, CM, shape) == want


# upstream TestBrokenLinearFunction (shape points already in internal units)
BROKEN_LINEAR = [
    ("10:1..90:9", ((10, 1), (90, 9)),
     [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9), (100, 9), (110, 9)]),
    ("0:2,40:10,100:0", ((0, 2), (40, 10), (100, 0)),
     [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
    ("flat 2", ((0, 2), (40, 2), (100, 2)), [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
]


@pytest.mark.parametrize("shape,points", [r[1:] for r in BROKEN_LINEAR], ids=[r[0] for r in BROKEN_LINEAR])
def test_broken_linear_function(shape, points):
    assert [s.broken_linear(shape, p) for p, _ in points] == [want for _, want in points]


def test_go_truncation_on_decreasing_segment():
    # (0,100)->(100,0) at 33: 100 + (-100*33)/100 = 100 - 33 = 67 (exact); at 1/3 steps Go truncates toward 0:
    # (0,10)->(3,0) at 1: 10 + (-10*1)/3 = 10 - 3 = 7 (floor division would give 10 - 4 = 6)
    assert s.broken_linear(((0, 10), (3, 0)), 1) == 7


def test_dispatch_by_enum_and_name():
    req, alloc = {"cpu": 3000, "memory": 5000}, {"cpu": 4000, "memory": 10000}
    assert s.score(s.ScoringStrategy.MOST_ALLOCATED, req, alloc, CM) == 62
    assert s.score("LeastAllocated", req, alloc, CM) == 37
    assert s.score("RequestedToCapacityRatio", req, alloc, CM, ((0, 0), (100, 10))) == 63
    with pytest.raises(ValueError):
        s.score("RequestedToCapacityRatio", req, alloc, CM)
    assert set(s.STRATEGIES) == set(s.ScoringStrategy)
