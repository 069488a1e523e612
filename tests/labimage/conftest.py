"""The lab image (lab.Dockerfile) as a test fixture: the tag ``scripts/lab-image`` builds, built here when it is
absent (Docker's layer cache makes that seconds when CI built it first, as .ci/run does). Skips, saying why, only
when no Docker engine answers or the image cannot be built; every test then runs containers with Docker's default
security options (no --privileged, no --security-opt, no --cap-add)."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "lab-image"


def docker_problem() -> str | None:
    """None when a Docker engine answers; else why not, in one line."""
    if not shutil.which("docker"):
        return "no docker CLI on PATH (scripts/docker-engine start installs and starts one)"
    try:
        r = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                           timeout=30)
    except subprocess.TimeoutExpired:
        return "the Docker engine did not answer `docker info` within 30 s"
    if r.returncode != 0:
        return f"no Docker engine answers (scripts/docker-engine start): {(r.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


def image_tag() -> str:
    return subprocess.run([str(SCRIPT), "tag"], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="session")
def lab_image() -> str:
    problem = docker_problem()
    if problem:
        pytest.skip(problem)
    tag = image_tag()
    # always through the script: an image from an older checkout is rebuilt (cached layers: seconds)
    r = subprocess.run([str(SCRIPT), "build"], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        pytest.skip(f"the lab image could not be built: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return tag


@pytest.fixture
def container_name() -> Iterator[str]:
    """A unique container name, removed after the test whatever happened."""
    name = f"mockgpu-labimage-test-{uuid.uuid4().hex[:10]}"
    yield name
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
