"""Lab 01's cost clock: the bill of idle GPUs grows with the wait, faster when the learner speeds it up."""

from __future__ import annotations

import time

import pytest

from mockgpu.widgets.costclock import CostClock, clock_text, cost_chart_png, cost_usd


def test_the_bill_is_idle_gpus_times_hours_times_price():
    assert cost_usd(8, 11 * 60, 3.4309) == pytest.approx(8 * 11 / 60 * 3.4309)
    assert clock_text(3 * 3600 + 2 * 60 + 5) == "3:02:05"


def test_a_tick_advances_the_wait_at_the_chosen_speed_only_while_running():
    clock = CostClock(8, 3.4309, speed=60)
    clock.tick(1.0)
    assert clock.waited_s == 0  # stopped until the learner presses start
    clock.running.value = True
    assert clock.running.description == "pause"
    clock.tick(1.0)
    assert clock.waited_s == 60
    clock.speed.value = 600
    clock.tick(3.0)
    assert clock.waited_s == 60 + 1800
    assert f"${cost_usd(8, 1860, 3.4309):,.2f}" in clock.readout.value and "0:31:00" in clock.readout.value
    clock.tick(10.0)  # the clock stops at the end of its hour: six hours stay the exercise's to work out
    assert clock.waited_s == 3600 and not clock.running.value
    clock.running.value = True
    clock.tick(1.0)
    assert clock.waited_s == 3600


def test_the_clock_thread_ticks_while_displayed_and_stops():
    clock = CostClock(8, 3.4309, speed=600, running=True)
    bundle = clock._repr_mimebundle_()
    try:
        assert "text/html" in bundle and "data:image/png;base64," in bundle["text/html"]
        deadline = time.monotonic() + 5
        while clock.waited_s < 600 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert clock.waited_s >= 600
    finally:
        clock.stop()
    clock._thread.join(2)
    assert not clock._thread.is_alive()


def test_the_chart_is_a_png_and_the_same_every_time():
    png = cost_chart_png(8, 3.4309)
    assert png.startswith(b"\x89PNG") and png == cost_chart_png(8, 3.4309)
