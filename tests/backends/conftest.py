"""Shared helpers for the backend tests: specs, a fixed render state dir, a scripted command runner."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from mockgpu.backends.common.run import Result, Runner
from mockgpu.config import load_spec

ROOT = Path(__file__).resolve().parents[2]
# Every spec renders for kind; those with DRA pools (e.g. clusters/dra.yaml) are refused with fake-gpu-operator and
# by the kubeconfig backend, which deploy no DRA driver (test_kind_dra.py), hence DEVICE_PLUGIN_SPECS.
DRA_SPECS = sorted(p for p in (ROOT / "clusters").glob("*.yaml") if "management: dra" in p.read_text()
                   or "management: both" in p.read_text())
SPECS = sorted((ROOT / "clusters").glob("*.yaml"))
SPEC_IDS = [p.stem for p in SPECS]
DEVICE_PLUGIN_SPECS = [p for p in SPECS if p not in DRA_SPECS]
# A fixed host folder so rendered output does not depend on $HOME; golden files use it.
STATE_DIR = Path("/var/tmp/mockgpu-state")
UPDATE_GOLDEN = os.environ.get("MOCKGPU_UPDATE_GOLDEN") == "1"


def docker_has(image: str) -> bool:
    try:
        return subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def kind_environment() -> tuple[dict[str, str], str | None]:
    """The environment for a real kind cluster: ``PATH`` with the upstream build's kind (when there is one),
    and the offline images ``scripts/kind-images`` builds when they exist locally and nothing else is set.
    Second: why kind cannot run here (Docker, kind or kubectl missing), or None."""
    from mockgpu.backends.kind import KindBackend
    from mockgpu.backends.upstream import binaries

    env = dict(os.environ)
    upstream_bin = binaries.bin_dir()
    if (upstream_bin / "kind").is_file():
        env["PATH"] = f"{upstream_bin}{os.pathsep}{env.get('PATH', '')}"
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = env["PATH"]
    try:
        problem = KindBackend().is_available()
    finally:
        os.environ["PATH"] = saved
    if problem:
        return env, problem
    node_image = "mockgpu/kind-node:" + binaries.versions()["KUBERNETES_VERSION"]
    if not env.get("MOCKGPU_KIND_NODE_IMAGE") and docker_has(node_image):
        env["MOCKGPU_KIND_NODE_IMAGE"] = node_image
    if not env.get("MOCKGPU_PYTHON_BASE") and docker_has("mockgpu/python-base:bookworm"):
        env["MOCKGPU_PYTHON_BASE"] = "mockgpu/python-base:bookworm"
    return env, None


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


def run_entrypoint(script: str, root: Path, names: dict[str, str], node_name: str) -> subprocess.CompletedProcess:
    """Run a DaemonSet's shell entrypoint for real (/bin/sh) as the kubelet would on node ``node_name``: the
    projected ``/etc/mockgpu`` under ``root`` with the name map ``names`` (kind node -> spec node, no newline,
    as the ConfigMap projects it) and a fake ``mockgpu`` on PATH that prints its arguments ``|``-separated."""
    cfg = root / "etc-mockgpu"
    (cfg / "nodes").mkdir(parents=True)
    (cfg / "spec.yaml").write_text("x")
    for kind_node, spec_node in names.items():
        (cfg / "nodes" / kind_node).write_text(spec_node)
    bindir = root / "bin"
    bindir.mkdir()
    fake = bindir / "mockgpu"
    fake.write_text('#!/bin/sh\nprintf "%s|" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "NODE_NAME": node_name}
    return subprocess.run(["/bin/sh", "-c", script.replace("/etc/mockgpu", str(cfg))], env=env,
                          capture_output=True, text=True, timeout=30)
