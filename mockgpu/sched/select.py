"""``selectHost``: the highest total wins; ties are broken by reservoir sampling over a binary max-heap.

Upstream builds a Go ``container/heap`` over the scored nodes (in feasible order), pops the top, then keeps
popping while totals tie, replacing the pick with probability 1/k for the k-th tied node
(``rand.Intn(k) == 0``). The pop order of tied nodes depends on the heap's layout, so it is reproduced
exactly here; only the random source differs (``random.Random.randrange`` instead of Go's ``rand``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def _less(h: list[tuple[str, int]], i: int, j: int) -> bool:
    return h[i][1] > h[j][1]  # max-heap on total score


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


def select_host(scores: Sequence[tuple[str, int]], rng: random.Random) -> str:
    """The chosen node name among ``(name, total)`` pairs (non-empty)."""
    order = heap_order(scores)
    top = order[0][1]
    selected, count = order[0][0], 1
    for name, total in order[1:]:
        if total != top:
            break
        count += 1
        if rng.randrange(count) == 0:
            selected = name
    return selected
