"""Labs 01, 03, 04, 07 and 09 under nbval on the real control plane (``MOCKGPU_BACKEND=upstream``): the same
notebooks, unchanged, with the real kube-apiserver, controller manager and scheduler deciding (lab 09: the real
scheduler allocating ResourceClaims from the ResourceSlices of mockgpu's DRA driver)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LABS = ("01-why-is-my-4-gpu-job-pending", "03-binpacking-vs-spreading", "04-five-steps-of-allocation",
        "07-time-slicing-and-oom-blast-radius", "09-dra-vs-device-plugins")


def test_labs_run_on_upstream(upstream_bin, tmp_path):
    env = {**os.environ, "MOCKGPU_BACKEND": "upstream", "MOCKGPU_HOME": str(tmp_path / "home")}
    env.pop("MOCKGPU_KUBECONFIG", None)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env",
            *(str(ROOT / "labs" / "solutions" / f"{lab}.ipynb") for lab in LABS)]
    sanitize = ROOT / "labs" / "nbval-sanitize.cfg"
    if sanitize.is_file():
        args += ["--nbval-sanitize-with", str(sanitize)]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
