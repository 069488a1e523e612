"""MIG layouts: valid ones place deterministically, impossible ones say which instance and why."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from mockgpu.gpu.catalog import get_model
from mockgpu.gpu.mig import MigLayoutError, gi_id_for, place_layout

# the project's MIG reference, copied into the package with its attribution
REFERENCE = Path(__file__).resolve().parents[2] / "mockgpu" / "gpu" / "data" / "mig-profiles.json"

VALID = [  # model, layout, expected (profile, start) in mig_index order
    ("A100-SXM4-80GB", {"1g.10gb": 7}, [("1g.10gb", s) for s in (4, 5, 6, 0, 1, 2, 3)]),
    ("A100-SXM4-80GB", {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1},
     [("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)]),
    ("A100-SXM4-80GB", {"4g.40gb": 1, "3g.40gb": 1}, [("3g.40gb", 4), ("4g.40gb", 0)]),
    ("A100-SXM4-40GB", {"3g.20gb": 2}, [("3g.20gb", 4), ("3g.20gb", 0)]),
    ("A100-SXM4-40GB", {"2g.10gb": 3, "1g.5gb": 1}, [("2g.10gb", 4), ("2g.10gb", 0), ("2g.10gb", 2), ("1g.5gb", 6)]),
    ("H100-SXM5-80GB", {"1g.20gb": 4}, [("1g.20gb", 4), ("1g.20gb", 6), ("1g.20gb", 0), ("1g.20gb", 2)]),
    ("H100-SXM5-80GB", {"7g.80gb": 1}, [("7g.80gb", 0)]),
    ("A30", {"2g.12gb": 1, "1g.6gb": 2}, [("2g.12gb", 0), ("1g.6gb", 2), ("1g.6gb", 3)]),
    ("A100-SXM4-80GB", {"1g.10gb+me": 1, "1g.10gb": 6}, None),
    ("A100-SXM4-80GB", {"3g.40gb": 1, "1g.10gb": 0}, [("3g.40gb", 0)]),
]


@pytest.mark.parametrize("model,layout,expected", VALID, ids=[f"{m}:{json.dumps(lay)}" for m, lay, _ in VALID])
def test_valid_layouts_place(model, layout, expected):
    placed = place_layout(get_model(model), layout, "GPU 0")
    assert sum(layout.values()) == len(placed)
    taken = [slot for p in placed for slot in range(p.start, p.start + p.size)]
    assert len(taken) == len(set(taken)), "instances overlap"
    assert [p.mig_index for p in placed] == list(range(len(placed)))
    assert [p.gi_id for p in placed] == sorted(p.gi_id for p in placed)
    if expected is not None:
        assert [(p.profile.name, p.start) for p in placed] == expected


INVALID = [  # model, layout, message after "GPU 1 (<model>): "
    ("A100-SXM4-80GB", {"4g.40gb": 2},
     "cannot place 4g.40gb #2: no free placement (slots 0-3 taken by 4g.40gb #1)"),
    ("A100-SXM4-80GB", {"7g.80gb": 1, "1g.10gb": 1},
     "cannot place 1g.10gb #1: no free placement (slots 0-7 taken by 7g.80gb #1)"),
    ("A100-SXM4-80GB", {"3g.40gb": 2, "1g.10gb": 1},
     "cannot place 1g.10gb #1: no free placement (slots 0-3 taken by 3g.40gb #1; slots 4-7 taken by 3g.40gb #2)"),
    ("A100-SXM4-80GB", {"1g.10gb": 8}, "cannot place 1g.10gb #8: no free placement (slot 0 taken by 1g.10gb #1;"),
    ("A100-SXM4-80GB", {"1g.10gb+me": 2}, "at most 1 1g.10gb+me per GPU, the layout asks for 2"),
    ("A100-SXM4-80GB", {"1g.5gb": 1}, "no MIG profile '1g.5gb' (profiles: 1g.10gb, 1g.10gb+me, 1g.20gb,"),
    ("A100-SXM4-40GB", {"1g.10gb": 5}, "cannot place 1g.10gb #5: no free placement"),
    ("L4", {"1g.6gb": 1}, "MIG is not supported on this model"),
    ("A30", {"2g.12gb": 2, "1g.6gb": 1}, "cannot place 1g.6gb #1: no free placement (slots 0-1 taken by 2g.12gb #1;"),
]


@pytest.mark.parametrize("model,layout,message", INVALID, ids=[f"{m}:{json.dumps(lay)}" for m, lay, _ in INVALID])
def test_invalid_layouts_explain(model, layout, message):
    with pytest.raises(MigLayoutError) as exc:
        place_layout(get_model(model), layout, "GPU 1")
    assert str(exc.value).startswith(f"GPU 1 ({model}): {message}")


def test_gi_ids_match_the_guide_example():
    # MIG guide: two 3g.20gb on an A100 -> GI 1 at 4:4 and GI 2 at 0:4.
    assert gi_id_for(8, 4, 4) == 1 and gi_id_for(8, 0, 4) == 2
    assert gi_id_for(8, 0, 8) == 0
    assert [gi_id_for(8, s, 1) for s in range(7)] == [11, 12, 13, 14, 7, 8, 9]


def test_placement_is_deterministic():
    m = get_model("A100-SXM4-80GB")
    layout = {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert place_layout(m, layout) == place_layout(m, dict(reversed(list(layout.items()))))


def _feasible_multisets(model: str, names: list[str]) -> set[tuple[int, ...]]:
    """Every non-empty multiset of ``names`` that place_layout accepts."""
    m = get_model(model)
    ok = set()
    for counts in itertools.product(*[range(m.profile(n).max_count + 1) for n in names]):
        layout = {n: c for n, c in zip(names, counts, strict=True) if c}
        if not layout:
            continue
        try:
            place_layout(m, layout)
        except MigLayoutError:
            continue
        ok.add(counts)
    return ok


def _maximal_by_arrangement(model: str, names: list[str]) -> set[tuple[int, ...]]:
    """Multisets with some arrangement (from the catalog's placements) where no further instance fits:
    the reference's definition of 'maximal'."""
    m = get_model(model)
    options = [(k, s, z) for k, n in enumerate(names) for s, z in m.profile(n).placements]
    out: set[tuple[int, ...]] = set()

    def grow(free: frozenset[int], counts: tuple[int, ...], last: int) -> None:
        fits = [o for o in options if set(range(o[1], o[1] + o[2])) <= free]
        if not fits and any(counts):
            out.add(counts)
        for i, (k, s, z) in enumerate(options):
            if i >= last and (k, s, z) in fits:
                grow(free - set(range(s, s + z)), tuple(c + (j == k) for j, c in enumerate(counts)), i)

    grow(frozenset(range(m.memory_slots)), (0,) * len(names), 0)
    return out


@pytest.mark.parametrize("key,names", [
    ("profile_set_pre_R525_without_1g.10gb", ["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]),
    ("profile_set_R525plus_with_1g.10gb", ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]),
], ids=["pre-R525", "R525+"])
def test_a100_40gb_combinations_match_the_reference_enumeration(key, names):
    ref = json.loads(REFERENCE.read_text())["derived_a100_40gb_combinations"][key]
    assert len(_feasible_multisets("A100-SXM4-40GB", names)) == ref["distinct_nonempty_multisets"]
    want = {tuple(d.get(n, 0) for n in names) for d in ref["maximal"]}
    assert _maximal_by_arrangement("A100-SXM4-40GB", names) == want


def test_mig_parted_default_configs_place():
    ref = json.loads(REFERENCE.read_text())
    keys = {"A100-40GB": "A100-SXM4-40GB", "A100-80GB": "A100-SXM4-80GB", "H100-80GB": "H100-SXM5-80GB",
            "H100-NVL-94GB": "H100-NVL", "H200-141GB": "H200", "A30-24GB": "A30"}
    checked = 0
    for g in ref["gpus"]:
        if g["key"] not in keys:
            continue
        m = get_model(keys[g["key"]])
        place_layout(m, g["mig_parted_all_balanced"])
        for name, n in g["mig_parted_all_homogeneous_counts"].items():
            place_layout(m, {name: n})
            with pytest.raises(MigLayoutError):
                place_layout(m, {name: n + 1})
            checked += 1
    assert checked >= 35
