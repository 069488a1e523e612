"""Polling with a deadline, for tests that wait on a live cluster (importable from the test packages)."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(pred: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> object:
    """``pred()``'s first truthy value; AssertionError naming ``what`` once ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
