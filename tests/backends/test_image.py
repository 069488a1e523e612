"""The image's build context: what .dockerignore lets through must be enough for `pip install .`
(checked by building the wheel from exactly those files), and the Dockerfile follows the rules."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from mockgpu.backends.common.images import mockgpu_image, package_version

from .conftest import ROOT


def _context(dest):
    """Copy what .dockerignore admits: it is '*' then '!' re-includes, minus caches (asserted here)."""
    lines = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "*", "the context must start from nothing"
    includes = [ln[1:].rstrip("/") for ln in lines if ln.startswith("!")]
    for name in includes:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return includes


def test_dockerfile_copies_only_the_context_and_pins_its_base():
    text = (ROOT / "Dockerfile").read_text()
    # users get the public base; scripts/kind-images passes a local one (built from Debian packages) as BASE
    assert re.search(r"^ARG BASE=python:3\.11-slim$", text, re.M)
    assert re.findall(r"^FROM (.+)$", text, re.M) == ["${BASE}"]
    instructions = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert not any(":latest" in ln for ln in instructions)
    copied = re.findall(r"^COPY (.+) \S+$", text, re.M)
    sources = {s for line in copied for s in line.split()}
    assert sources == {"pyproject.toml", "README.md", "mockgpu"}
    assert "pip install ." in text


def test_context_builds_a_wheel_with_the_data_and_commands(tmp_path):
    pytest.importorskip("setuptools", reason="building the wheel offline needs setuptools in this venv")
    pytest.importorskip("wheel", reason="building the wheel offline needs wheel in this venv")
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    # the package, and what the lab image (lab.Dockerfile) adds: the labs and their cluster specs, and the recipe
    # with Binder's link to it
    assert set(_context(ctx)) == {"pyproject.toml", "README.md", "mockgpu", "clusters", "labs", "lab.Dockerfile",
                                  "binder/Dockerfile"}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(ctx)], check=True, capture_output=True, timeout=240)
    (whl,) = (tmp_path / "dist").glob("mockgpu-*.whl")
    assert whl.name.startswith(f"mockgpu-{package_version()}-")
    assert mockgpu_image() == f"mockgpu:{package_version()}"
    names = zipfile.ZipFile(whl).namelist()
    assert "mockgpu/gpu/data/gpus.json" in names
    assert "mockgpu/deviceplugin/api/api.proto" in names
    entry = zipfile.ZipFile(whl).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "mockgpu = mockgpu.cli:main" in entry and "nvidia-smi = " in entry
    # the image installs no extras: the notebook-only dependencies must not be runtime ones
    meta = zipfile.ZipFile(whl).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    runtime = [ln for ln in meta.splitlines() if ln.startswith("Requires-Dist:") and "extra ==" not in ln]
    assert runtime and not [ln for ln in runtime if re.search(r"numpy|matplotlib|ipywidgets|tqdm", ln)]
    assert any(re.match(r"Requires-Dist: numpy.*extra == \"notebook\"", ln) for ln in meta.splitlines())


def test_nothing_imports_the_kubernetes_aio_client_the_image_drops():
    """The Dockerfile deletes kubernetes/aio (68 MB) from the image: mockgpu must use the sync client only."""
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "mockgpu").rglob("*.py")
        if re.search(r"\bkubernetes\.aio\b|from kubernetes import .*\baio\b", path.read_text())
    ]
    assert offenders == []
    assert "kubernetes.__file__), 'aio')" in (ROOT / "Dockerfile").read_text()


IMAGE_COMMANDS = ("mockgpu.cli", "mockgpu.deviceplugin.command", "mockgpu.dra.command",
                  "mockgpu.control.kubelet.publish_command", "mockgpu.workloads", "mockgpu.gpu.smi")


def test_the_images_commands_do_not_load_the_cel_stack_the_image_drops():
    """The Dockerfile uninstalls cel-python and what only it needs: what the image runs (the device plugin, the
    GPU-state publisher, the DRA driver, workloads, nvidia-smi) must not import them."""
    import subprocess
    import sys

    code = ("import importlib, sys\n"
            f"for m in {IMAGE_COMMANDS!r}: importlib.import_module(m)\n"
            "print(sorted(m for m in ('celpy', 'lark', 're2', 'pendulum', 'jmespath') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
    assert "pip uninstall -y -q cel-python google-re2 pendulum lark jmespath" in (ROOT / "Dockerfile").read_text()
