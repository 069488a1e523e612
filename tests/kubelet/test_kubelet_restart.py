"""Restart policy and crash-loop back-off, as the kubelet computes them."""

from __future__ import annotations

import pytest

from mockgpu.control.kubelet.restart import (
    CrashLoopBackoff,
    backoff_table,
    crashloop_message,
    go_duration,
    should_restart,
)


@pytest.mark.parametrize(
    "policy, code, want",
    [
        ("Always", 0, True),
        ("Always", 1, True),
        ("OnFailure", 0, False),
        ("OnFailure", 137, True),
        ("Never", 0, False),
        ("Never", 1, False),
    ],
    ids=lambda v: str(v),
)
def test_should_restart(policy: str, code: int, want: bool) -> None:
    assert should_restart(policy, code) is want


def test_unknown_policy_is_an_error() -> None:
    with pytest.raises(ValueError, match="restartPolicy"):
        should_restart("Sometimes", 1)


def test_backoff_table_matches_upstream() -> None:
    assert backoff_table(9) == [0, 10, 20, 40, 80, 160, 300, 300, 300]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_crash_loop_doubles_and_caps() -> None:
    clock = FakeClock()
    b = CrashLoopBackoff(clock=clock)
    delays = []
    for _ in range(8):
        d = b.on_exit(("uid", "c"))
        delays.append(d)
        clock.now += d + 1  # the container runs 1 s after each restart, then crashes again
    assert delays == backoff_table(8)


def test_crash_loop_resets_after_ten_quiet_minutes() -> None:
    clock = FakeClock()
    b = CrashLoopBackoff(clock=clock)
    for _ in range(4):
        clock.now += b.on_exit("k") + 1
    assert b.on_exit("k") == 80
    clock.now += 80 + 601
    assert b.on_exit("k") == 0
    assert b.on_exit("k") == 10


def test_keys_are_independent_and_scale_shrinks_waits() -> None:
    b = CrashLoopBackoff(scale=0.01, clock=FakeClock())
    b.on_exit("a")
    assert b.on_exit("a") == 10
    assert b.on_exit("b") == 0
    assert b.wait_seconds(10) == pytest.approx(0.1)


@pytest.mark.parametrize(
    "secs, text", [(10, "10s"), (80, "1m20s"), (160, "2m40s"), (300, "5m0s"), (3700, "1h1m40s")], ids=str
)
def test_go_duration(secs: float, text: str) -> None:
    assert go_duration(secs) == text


def test_crashloop_message_format() -> None:
    assert (
        crashloop_message(40, "trainer", "job-x", "default", "1234")
        == "back-off 40s restarting failed container=trainer pod=job-x_default(1234)"
    )
