"""The training-loop utilization model the fake workloads report: warm-up, seeded noise, evaluation dips."""

from __future__ import annotations

import pytest

from mockgpu.gpu.utilmodel import EVAL_EVERY, NOISE, WARMUP, utilization


@pytest.mark.parametrize(("profile", "step", "mean", "want"), [
    ("steady", 0, 40, 40.0),
    ("steady", 99, 40, 40.0),
    ("idle", 7, 80, 0.0),
    ("training", 0, 60, 10.0),             # warm-up: (step + 1) / (WARMUP + 1) of the mean
    ("training", WARMUP - 1, 60, 50.0),
    ("training", EVAL_EVERY - 1, 80, 20.0),   # the last step of each period evaluates: a quarter of the mean
    ("training", 3 * EVAL_EVERY - 1, 80, 20.0),
    ("training", 10, 0, 0.0),              # a mean of 0 is idle whatever the profile
    ("steady", 3, 150, 100.0),             # clamped
], ids=lambda v: str(v))
def test_table(profile: str, step: int, mean: float, want: float) -> None:
    assert utilization(profile, step, mean) == want


def test_training_steps_are_noisy_around_the_mean_and_reproducible() -> None:
    steps = [s for s in range(WARMUP, 200) if s % EVAL_EVERY != EVAL_EVERY - 1]
    values = [utilization("training", s, 80) for s in steps]
    assert all(80 - NOISE <= v <= 80 + NOISE for v in values)
    assert len(set(values)) > 40  # varies step to step (0.1-point resolution: at most 81 values)
    assert values == [utilization("training", s, 80) for s in steps]  # same seed, same series
    assert values != [utilization("training", s, 80, seed=1) for s in steps]  # another seed, another series
    assert abs(sum(values) / len(values) - 80) < 1


@pytest.mark.parametrize(("profile", "step"), [("bursty", 0), ("training", -1)])
def test_rejects(profile: str, step: int) -> None:
    with pytest.raises(ValueError):
        utilization(profile, step, 50)
