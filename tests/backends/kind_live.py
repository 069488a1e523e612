"""What the live kind tests share: one cluster per module made from a spec with the offline images
(``kind_environment``), deleted at the end, and kubectl through its kubeconfig."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mockgpu.backends.base import UpOptions
from mockgpu.backends.kind import KindBackend

from .conftest import ROOT, kind_environment, spec_at


def live_cluster(name: str, spec_file: str, tmp: Path, what: str) -> Iterator[dict[str, Any]]:
    """Generator for a module fixture: the cluster ``name`` from ``clusters/<spec_file>`` as
    ``{"spec", "kubeconfig", "backend"}``; skips, saying why, where Docker, kind or kubectl is missing."""
    env, problem = kind_environment()
    if problem:
        pytest.skip(f"{what} needs Docker, kind and kubectl: {problem}")
    mp = pytest.MonkeyPatch()
    for key in ("PATH", "MOCKGPU_KIND_NODE_IMAGE", "MOCKGPU_PYTHON_BASE"):
        if env.get(key):
            mp.setenv(key, env[key])
    backend = KindBackend()
    spec = spec_at(ROOT / "clusters" / spec_file)
    if name in backend.cluster_names():  # a run that was killed before its own cleanup
        backend.down(name)
    t0 = time.monotonic()
    info = backend.up(UpOptions(spec=spec, name=name, kubeconfig=tmp / "kubeconfig"))
    print(f"{what}: {spec_file} cluster up in {time.monotonic() - t0:.0f} s")
    try:
        yield {"spec": spec, "kubeconfig": info.kubeconfig, "backend": backend}
    finally:
        t0 = time.monotonic()
        backend.down(name)
        print(f"{what}: down in {time.monotonic() - t0:.0f} s")
        mp.undo()


def kubectl(c: dict[str, Any], *args: str, input: str | None = None, check: bool = True) -> str:
    res = subprocess.run(["kubectl", "--kubeconfig", str(c["kubeconfig"]), *args], input=input,
                         capture_output=True, text=True, timeout=120)
    if check and res.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def get(c: dict[str, Any], *args: str) -> dict[str, Any]:
    return json.loads(kubectl(c, "get", *args, "-o", "json"))


def wait_for(what: str, fn: Callable[[], Any], timeout: float = 180.0) -> Any:
    """``fn()`` once it is truthy, polled every second; fails naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = fn()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1.0)
