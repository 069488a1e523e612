"""The utilization a fake workload reports, step by step: a deterministic model of a training loop.

A real training job does not hold a GPU at one flat percentage: the first steps are slow while the input pipeline
fills and kernels are compiled/autotuned, steady steps sit near the job's typical utilization with small
step-to-step noise, and every few steps an evaluation or checkpoint leaves the GPU waiting on the host. DCGM's
``DCGM_FI_DEV_GPU_UTIL`` samples exactly that shape. ``utilization(profile, step, mean, seed=)`` gives it:

* ``steady``: ``mean`` at every step (the workload's old behaviour; what a test asserting one value uses);
* ``training``: steps ``0 .. WARMUP-1`` ramp linearly up to ``mean``; every ``EVAL_EVERY``-th step (the last of
  each period) drops to ``EVAL_FRACTION`` of ``mean``; the others are ``mean`` plus noise uniform in
  ``+-NOISE`` points, drawn from ``random.Random`` seeded by ``(seed, step)``, so a given seed and step always give
  the same value, on every machine and in every process (no clock, no global random state);
* ``idle``: 0 (a process that holds memory and computes nothing: what an idle holder shows).

Values are clamped to 0..100 and rounded to one decimal. Simplified: no dependence on the model, batch size or the
GPU's speed, and time-slicing neighbours do not slow each other down (the ledger sums what they report, capped at
100 %, as ``nvidia-smi`` would show a saturated GPU).
"""

from __future__ import annotations

import random

PROFILES = ("training", "steady", "idle")
WARMUP = 5  # steps
EVAL_EVERY = 20  # steps per period; its last step evaluates / checkpoints
EVAL_FRACTION = 0.25
NOISE = 4.0  # percentage points either side


def utilization(profile: str, step: int, mean: float, *, seed: int = 0) -> float:
    """The utilization (%) reported at ``step`` (0-based) by a workload of this profile around ``mean``."""
    if profile not in PROFILES:
        raise ValueError(f"unknown utilization profile {profile!r}: one of {', '.join(PROFILES)}")
    if step < 0:
        raise ValueError(f"step must not be negative, got {step}")
    mean = max(0.0, min(100.0, float(mean)))
    if profile == "idle" or mean == 0:
        return 0.0
    if profile == "steady":
        return round(mean, 1)
    if step < WARMUP:
        value = mean * (step + 1) / (WARMUP + 1)
    elif step % EVAL_EVERY == EVAL_EVERY - 1:
        value = mean * EVAL_FRACTION
    else:
        value = mean + random.Random(f"mockgpu-util:{seed}:{step}").uniform(-NOISE, NOISE)
    return round(max(0.0, min(100.0, value)), 1)


__all__ = ["EVAL_EVERY", "PROFILES", "WARMUP", "utilization"]
