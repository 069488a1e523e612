"""The catalog holds the reference's numbers and flags what the reference does not know."""

from __future__ import annotations

import pytest

from mockgpu.errors import MockgpuError
from mockgpu.gpu.catalog import get_model, models

EXPECTED = [  # key, product name (as nvidia-smi prints it), memory MiB, SMs, MIG
    ("A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", 40960, 108, True),
    ("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", 81920, 108, True),
    ("H100-SXM5-80GB", "NVIDIA H100 80GB HBM3", 81559, 132, True),
    ("H100-NVL", "NVIDIA H100 NVL", 95830, 132, True),
    ("H200", "NVIDIA H200", 143771, 132, True),
    ("A30", "NVIDIA A30", 24258, 56, True),
    ("L4", "NVIDIA L4", 23034, 58, False),
    ("T4", "Tesla T4", 15360, 40, False),
]


def test_keys_are_exactly_the_supported_models():
    assert models() == tuple(e[0] for e in EXPECTED)


@pytest.mark.parametrize("key,product,mib,sms,mig", EXPECTED, ids=[e[0] for e in EXPECTED])
def test_model_specs(key, product, mib, sms, mig):
    m = get_model(key)
    assert (m.product_name, m.memory_mib, m.sm_count, m.mig_supported) == (product, mib, sms, mig)
    assert bool(m.profiles) == mig


@pytest.mark.parametrize("alias,key", [("A100-80GB", "A100-SXM4-80GB"), ("H100", "H100-SXM5-80GB"),
                                       ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"), ("Tesla-T4", "T4")],
                         ids=["a100-80gb", "h100", "product-name", "tesla-t4"])
def test_aliases(alias, key):
    assert get_model(alias).key == key


def test_unknown_model_lists_known_ones():
    with pytest.raises(MockgpuError, match=r"unknown GPU model 'V100'.*A100-SXM4-40GB, A100-SXM4-80GB, .*T4"):
        get_model("V100")


@pytest.mark.parametrize("key", [k for k in models() if get_model(k).mig_supported])
def test_profile_tables_are_consistent(key):
    m = get_model(key)
    for p in m.profiles:
        assert p.placements, p.name
        assert all(size == p.memory_slots for _, size in p.placements), p.name
        assert all(start % size == 0 and start + size <= m.memory_slots for start, size in p.placements), p.name
        assert p.max_count <= len(p.placements), p.name
        assert 0 < p.memory_mib <= m.memory_mib and 0 < p.sm_count <= m.sm_count, p.name


def test_a100_80gb_values_from_the_reference():
    m = get_model("A100-SXM4-80GB")
    p = m.profile("3g.40gb")
    assert (p.id, p.memory_mib, p.sm_count, p.sm_slices, p.memory_slots, p.max_count) == (9, 40192, 42, 3, 4, 2)
    assert p.placements == ((0, 4), (4, 4))
    # The reference has no exact MiB for 1g.10gb on the 80GB part: GiB * 1024, flagged as derived.
    one = m.profile("1g.10gb")
    assert one.memory_mib == 9728 and one.memory_mib_source.startswith("DERIVED")


def test_h200_unknowns_are_flagged_not_invented():
    p = get_model("H200").profile("3g.71gb")
    assert not p.id_observed and not p.sm_count_observed
    assert "ASSUMED" in p.placements_source and "DERIVED" in p.memory_mib_source
    assert get_model("H200").profile("2g.35gb").id_observed


def test_unknown_profile_names_model_profiles():
    with pytest.raises(MockgpuError, match=r"A30 has no MIG profile '1g.10gb' \(profiles: 1g.6gb, "):
        get_model("A30").profile("1g.10gb")
