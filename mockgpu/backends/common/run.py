"""Running the external tools (docker, kind, kubectl, helm) and printing named steps.

Everything that touches the machine goes through ``Runner`` so tests can replace it with a recorder.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

from mockgpu.errors import MockgpuError


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str


class Runner:
    """Runs commands; never raises for a missing tool (returncode 127, like a shell)."""

    def which(self, tool: str) -> str | None:
        return shutil.which(tool)

    def run(self, args: list[str], *, input: str | None = None, timeout: float | None = 600) -> Result:
        try:
            proc = subprocess.run(args, input=input, capture_output=True, text=True, timeout=timeout, check=False)
        except FileNotFoundError:
            return Result(127, "", f"{args[0]}: command not found")
        except subprocess.TimeoutExpired:
            return Result(124, "", f"{' '.join(args)} timed out after {timeout:.0f}s")
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def check(self, args: list[str], *, input: str | None = None, timeout: float | None = 600) -> Result:
        """Run and raise MockgpuError with the tool's last stderr line on failure."""
        res = self.run(args, input=input, timeout=timeout)
        if res.returncode != 0:
            lines = [ln for ln in (res.stderr or res.stdout).strip().splitlines() if ln.strip()]
            last = lines[-1].strip() if lines else f"exit code {res.returncode}"
            raise MockgpuError(f"`{' '.join(args[:3])}` failed: {last}")
        return res


@dataclass
class Progress:
    """Prints ``[i/n] step ... done (1.2s)`` lines and the total time, to stderr by default."""

    total: int
    out: TextIO = field(default_factory=lambda: sys.stderr)
    started: float = field(default_factory=time.monotonic)
    index: int = 0

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        self.index += 1
        t0 = time.monotonic()
        print(f"[{self.index}/{self.total}] {name} ...", file=self.out, flush=True)
        try:
            yield
        except BaseException:
            print(f"[{self.index}/{self.total}] {name} failed after {time.monotonic() - t0:.1f}s", file=self.out)
            raise
        print(f"[{self.index}/{self.total}] {name} done ({time.monotonic() - t0:.1f}s)", file=self.out, flush=True)

    def note(self, message: str) -> None:
        print(f"      {message}", file=self.out, flush=True)

    def finish(self, what: str) -> None:
        print(f"{what} in {time.monotonic() - self.started:.1f}s", file=self.out, flush=True)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    message: str  # one line: the version found, or what is wrong and how to fix it
    blocking: bool = True


def tool_check(r: Runner, tool: str, args: list[str], pattern: str, install: str) -> Check:
    """A tool on PATH, with its version (from ``args``' output, matched by ``pattern``), or how to install it."""
    if r.which(tool) is None:
        return Check(tool, False, f"`{tool}` is not on PATH: install it ({install})")
    res = r.run([tool, *args], timeout=30)
    m = re.search(pattern, res.stdout + res.stderr)
    return Check(tool, True, f"{tool} {m.group(1) if m else 'version unknown'}")


def kubectl_check(r: Runner) -> Check:
    return tool_check(r, "kubectl", ["version", "--client"], r"Client Version: (v[\d.]+\S*)",
                 "https://kubernetes.io/docs/tasks/tools/")
