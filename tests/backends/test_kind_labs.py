"""Labs under nbval on real kind clusters (``MOCKGPU_BACKEND=kind``): the same notebooks, unchanged, with
kind's kube-scheduler and real kubelets deciding and the workloads in real containers of the mockgpu image.

Each lab (the copy with answers, labs/solutions/) starts its own kind cluster named after the lab (``lab04``, ...),
deleted when its kernel stops;
a cluster takes one to two minutes to create. Skipped where Docker, kind or kubectl is missing (saying
which). The Nodes are the spec's (the first one is kind's control plane, config.py), so the FailedScheduling
messages count the same nodes as on the embedded backend.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import ROOT, kind_environment

pytestmark = pytest.mark.kind
KIND_CLI = "kind"  # on the PATH kind_environment() gives
LABS = ("01-why-is-my-4-gpu-job-pending", "04-five-steps-of-allocation", "07-time-slicing-and-oom-blast-radius",
        "09-dra-vs-device-plugins")


@pytest.mark.timeout(1200)  # a kind cluster per lab: one to two minutes to create, the lab, then its deletion
@pytest.mark.parametrize("lab", LABS)
def test_lab_runs_on_kind(tmp_path, lab):
    env, problem = kind_environment()
    if problem:
        pytest.skip(f"labs on kind need Docker, kind and kubectl: {problem}")
    # the notebook kernels import this checkout (the image kind loads is built from it too), whatever
    # checkout the environment's mockgpu was installed from
    env.update(MOCKGPU_BACKEND="kind", MOCKGPU_HOME=str(tmp_path / "home"),
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p))
    env.pop("MOCKGPU_KUBECONFIG", None)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env",
            "-o", "timeout=900", str(ROOT / "labs" / "solutions" / f"{lab}.ipynb")]
    sanitize = ROOT / "labs" / "nbval-sanitize.cfg"
    if sanitize.is_file():
        args += ["--nbval-sanitize-with", str(sanitize)]
    try:
        done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1100)
    finally:
        # the cluster outlives Run All and goes when the kernel stops, but nbval gives a kernel 5 s to stop and
        # deleting a kind cluster takes longer: delete it here, or it keeps the next tests' nodes from starting
        # (kubelets in every node container share the host's inotify instances)
        name = f"lab{lab[:2]}"
        subprocess.run([KIND_CLI, "delete", "cluster", "--name", name], env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
