"""Shared helpers for the backend tests: specs, a fixed render state dir, a scripted command runner."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mockgpu.backends.kind.run import Result, Runner
from mockgpu.config import load_spec

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "clusters").glob("*.yaml"))
SPEC_IDS = [p.stem for p in SPECS]
# A fixed host folder so rendered output does not depend on $HOME; golden files use it.
STATE_DIR = Path("/var/tmp/mockgpu-state")
UPDATE_GOLDEN = os.environ.get("MOCKGPU_UPDATE_GOLDEN") == "1"


def spec_at(path: Path):
    """Load a spec with a repo-relative source, as `mockgpu up --spec clusters/x.yaml` would."""
    return load_spec(path.relative_to(ROOT)) if Path.cwd() == ROOT else load_spec(path)


class FakeRunner(Runner):
    """Answers commands from a handler; records every command it was asked to run."""

    def __init__(self, handler: Callable[[list[str], str | None], Result], tools: set[str] | None = None):
        self.handler = handler
        self.tools = {"docker", "kind", "kubectl", "helm"} if tools is None else tools
        self.calls: list[list[str]] = []
        self.inputs: list[str | None] = []
        self.slept = 0.0

    def which(self, tool: str) -> str | None:
        return f"/fake/bin/{tool}" if tool in self.tools else None

    def run(self, args: list[str], *, input: str | None = None, timeout: float | None = 600) -> Result:
        self.calls.append(list(args))
        self.inputs.append(input)
        return self.handler(list(args), input)

    def sleep(self, seconds: float) -> None:
        self.slept += seconds

    def called(self, *prefix: str) -> bool:
        return any(c[: len(prefix)] == list(prefix) for c in self.calls)


@pytest.fixture(autouse=True)
def _default_node_image(monkeypatch):
    """Render with the default pinned node image whatever the developer's shell exports."""
    monkeypatch.delenv("MOCKGPU_KIND_K8S_VERSION", raising=False)
    monkeypatch.delenv("MOCKGPU_KIND_NODE_IMAGE", raising=False)
    monkeypatch.delenv("MOCKGPU_PYTHON_BASE", raising=False)


@pytest.fixture(autouse=True)
def _complete_capabilities(monkeypatch):
    """Scripted-runner tests do not depend on this machine's capability bounding set (a sandbox may lack
    some); test_preflight checks the privileged-container check with explicit sets."""
    from mockgpu.backends.kind import preflight

    monkeypatch.setattr(preflight, "missing_capabilities", lambda proc=None: [])


@pytest.fixture
def workshop():
    return load_spec(ROOT / "clusters" / "workshop.yaml")
