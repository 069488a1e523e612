"""``selectHost``: the highest total wins; ties go to the node at the top of Go's ``container/heap``.

kube-scheduler v1.37.2 (``schedule_one.go``, ``framework/sorted_nodes.go``) builds a max-heap over the scored
nodes (in feasible order) keyed on ``(TotalScore, Randomizer)`` and pops once. ``Randomizer`` is only set
(``rand.Int()``) for nodes that scheduler extenders scored; without extenders (the case mockgpu models) every
``Randomizer`` is 0, so a tie is decided by the heap's layout alone: deterministic, no random draw. (Earlier
releases' ``selectHost`` broke ties by reservoir sampling with ``rand.Intn``, and so did mockgpu's v1.35 model.)
The heap is reproduced exactly here.
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def _less(h: list[tuple[str, int]], i: int, j: int) -> bool:
    return h[i][1] > h[j][1]  # max-heap on total score; equal Randomizers (0) never order two nodes


def _down(h: list[tuple[str, int]], i0: int, n: int) -> None:
    i = i0
    while True:
        j1 = 2 * i + 1
        if j1 >= n or j1 < 0:
            return
        j = j1
        j2 = j1 + 1
        if j2 < n and _less(h, j2, j1):
            j = j2
        if not _less(h, j, i):
            return
        h[i], h[j] = h[j], h[i]
        i = j


def _heap_pop(h: list[tuple[str, int]]) -> tuple[str, int]:
    n = len(h) - 1
    h[0], h[n] = h[n], h[0]
    _down(h, 0, n)
    return h.pop()


def heap_order(scores: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """The order Go's ``heap.Init`` + repeated ``heap.Pop`` yields (highest first, ties in heap order)."""
    h = list(scores)
    for i in range(len(h) // 2 - 1, -1, -1):
        _down(h, i, len(h))
    return [_heap_pop(h) for _ in range(len(scores))]


def select_host(scores: Sequence[tuple[str, int]], rng: random.Random | None = None) -> str:
    """The chosen node name among ``(name, total)`` pairs (non-empty): the first ``heap.Pop``.

    ``rng`` is accepted for callers written against the v1.35 model and not used: v1.37.2 draws no random
    number to break a tie between plugin-scored nodes.
    """
    return heap_order(scores)[0][0]
