"""Where the upstream binaries are, and which versions they must be (``versions.env``, read by
``scripts/upstream-build`` too, so the build and the backend can never disagree).

Lookup order: ``$MOCKGPU_UPSTREAM_BIN`` (a folder with every binary), else
``$MOCKGPU_UPSTREAM_CACHE/<k8s-version>/bin``, else ``<checkout>/.cache/upstream/<k8s-version>/bin``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mockgpu.errors import MockgpuError

VERSIONS_FILE = Path(__file__).with_name("versions.env")
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
ALL = (*CONTROL_PLANE, "kubelet", "kubeadm", "kubectl", "kind")


def versions() -> dict[str, str]:
    """``KUBERNETES_VERSION``, ``ETCD_VERSION``, ``KIND_VERSION`` from versions.env."""
    out = {}
    for line in VERSIONS_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def checkout_root() -> Path:
    return Path(__file__).resolve().parents[3]


def bin_dir() -> Path:
    if os.environ.get("MOCKGPU_UPSTREAM_BIN"):
        return Path(os.environ["MOCKGPU_UPSTREAM_BIN"]).expanduser()
    cache = os.environ.get("MOCKGPU_UPSTREAM_CACHE")
    base = Path(cache).expanduser() if cache else checkout_root() / ".cache" / "upstream"
    return base / versions()["KUBERNETES_VERSION"] / "bin"


def missing(names: tuple[str, ...] = CONTROL_PLANE) -> str | None:
    """None when every binary in ``names`` is there; else one line saying how to get them."""
    d = bin_dir()
    absent = [n for n in names if not os.access(d / n, os.X_OK)]
    if not absent:
        return None
    if not (checkout_root() / "scripts" / "upstream-build").is_file():
        # an installation without the checkout's scripts: the lab image (lab.Dockerfile) or a plain pip install
        how = ("this installation has no scripts/upstream-build: build them in a checkout of mockgpu and set "
               "MOCKGPU_UPSTREAM_BIN to their folder, or use a lab image built with them (scripts/lab-image)")
    elif shutil.which("go"):
        how = "run ./scripts/upstream-build"
    else:
        how = "install Go (https://go.dev/doc/install), then run ./scripts/upstream-build"
    return f"the upstream backend needs {', '.join(absent)} in {d}: {how}"


def kueue_manifests() -> Path:
    """Kueue's release manifests as ``scripts/upstream-build kueue`` renders them, next to the binaries' folder."""
    return bin_dir().parent / "kueue" / versions()["KUEUE_VERSION"] / "manifests.yaml"


def kueue_missing() -> str | None:
    """None when Kueue's manager and its rendered manifests are built (``scripts/upstream-build kueue``); else one
    line saying how to build them."""
    d, manifests = bin_dir(), kueue_manifests()
    if os.access(d / "kueue-manager", os.X_OK) and manifests.is_file():
        return None
    if (checkout_root() / "scripts" / "upstream-build").is_file():
        how = "run ./scripts/upstream-build kueue" if shutil.which("go") else \
            "install Go (https://go.dev/doc/install), then run ./scripts/upstream-build kueue"
    else:
        how = "build it in a checkout of mockgpu (scripts/upstream-build kueue) and set MOCKGPU_UPSTREAM_BIN"
    return f"spec.kueue needs Kueue {versions()['KUEUE_VERSION']} (kueue-manager and its manifests) next to {d}: {how}"


def binary(name: str) -> Path:
    """The path of one upstream binary (MockgpuError saying how to build it when absent)."""
    problem = missing((name,))
    if problem:
        raise MockgpuError(problem, exit_code=2)
    return bin_dir() / name
