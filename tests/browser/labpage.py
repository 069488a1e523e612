"""What a learner does in JupyterLab, done through Playwright: open a notebook, Run → Run All Cells, wait."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Page, expect

# curated screenshots for the README, rewritten only with MOCKGPU_UPDATE_SCREENSHOTS=1
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
NUMBERED = re.compile(r"\[\d+\]:")
TRACEBACK = "Traceback (most recent call last)"


@dataclass
class RunResult:
    prompts: list[str]
    seconds: float


def docs_screenshot(locator, name: str) -> None:
    """Refresh a README screenshot from what this run drew (only when MOCKGPU_UPDATE_SCREENSHOTS=1)."""
    if os.environ.get("MOCKGPU_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        locator.screenshot(path=str(SCREENSHOTS / name))


def open_notebook(page: Page, url: str, timeout_ms: float = 90_000) -> None:
    """Load the notebook and wait until its kernel has started and is idle."""
    page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=timeout_ms)
    expect(page.locator("#jp-main-statusbar")).to_contain_text(re.compile(r"\| Idle"), timeout=timeout_ms)


def run_all_cells(page: Page) -> None:
    """The menu path a learner takes: Run, then Run All Cells."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def code_prompts(page: Page) -> list[str]:
    return [t.strip() for t in page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt").all_inner_texts()]


def error_outputs(page: Page) -> list[str]:
    texts = page.locator(".jp-Notebook .jp-OutputArea-output").all_inner_texts()
    return [t for t in texts if TRACEBACK in t]


def wait_until_all_ran(page: Page, timeout_s: float = 180.0, poll_s: float = 0.5) -> RunResult:
    """Wait until every code cell shows an execution count (``[n]:``) and the kernel is idle.

    Fails early, with the traceback text, when a cell raised (Lab then stops running the rest)."""
    start = time.monotonic()
    prompts: list[str] = []
    while time.monotonic() - start < timeout_s:
        prompts = code_prompts(page)
        errors = error_outputs(page)
        if errors:
            raise AssertionError(f"a cell raised in the browser run:\n{errors[0][-2000:]}")
        status = page.locator("#jp-main-statusbar").inner_text()
        if prompts and all(NUMBERED.fullmatch(p) for p in prompts) and "| Idle" in status:
            return RunResult(prompts=prompts, seconds=time.monotonic() - start)
        time.sleep(poll_s)
    raise TimeoutError(f"cells not all run after {timeout_s:.0f}s; prompts: {prompts}")
