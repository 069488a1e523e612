"""Without the notebook extra (numpy, matplotlib, ipywidgets and what they pull in), as in the device-plugin
image built with a plain ``pip install .``: the console entry points and every module the DaemonSet's two
containers import still work, and ``mockgpu sim`` says which extra it needs in one line.

Each case runs in a fresh interpreter whose first act is a meta path finder that refuses those modules, so
they are absent even though this environment has them installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mockgpu.config import load_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.gpu.driver import write_node_driver

ROOT = Path(__file__).resolve().parents[1]
WORKSHOP = str(ROOT / "clusters" / "workshop.yaml")
NOTEBOOK_ONLY = ("numpy", "matplotlib", "ipywidgets", "IPython", "jedi", "tqdm")

# what the Dockerfile uninstalls after `pip install .`: the CEL stack (only the control plane evaluates CEL)
IMAGE_DROPS = ("celpy", "lark", "re2", "pendulum", "jmespath")


def _blocker(modules: tuple[str, ...]) -> str:
    return textwrap.dedent(f"""
        import sys

        class NotInstalled:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in {modules!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, NotInstalled())
    """)


BLOCK = _blocker(NOTEBOOK_ONLY)
ENTRY = {
    "mockgpu": "from mockgpu.cli import main",
    "nvidia-smi": "from mockgpu.gpu.smi import main",
    "mockgpu-workload": "from mockgpu.workloads import main",
}


def _python(code: str, *args: str, env: dict[str, str] | None = None,
            block: str = BLOCK) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-c", block + code, *args], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("argv", [["--help"], ["device-plugin", "--help"], ["doctor"]])
def test_the_images_cli_works_without_the_notebook_extra_and_the_cel_stack(argv):
    """The device-plugin image runs ``mockgpu device-plugin``: building the CLI's parser must not import the
    control plane (an eager import in ``mockgpu doctor`` once left every kind node without GPUs)."""
    done = _python("import sys; from mockgpu.cli import main; sys.exit(main())", *argv,
                   block=_blocker(NOTEBOOK_ONLY + IMAGE_DROPS))
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def driver_dir(tmp_path_factory):
    """A written fake driver for spec node whole-0 (written here, where numpy is allowed: it needs none)."""
    d = tmp_path_factory.mktemp("driver")
    write_node_driver(d, node_inventory(load_spec(WORKSHOP), "whole-0"))
    return d


@pytest.mark.parametrize(("entry", "argv", "rc", "expect"), [
    ("mockgpu", ["--help"], 0, "mockgpu: a mock-GPU Kubernetes testbed and teaching kit."),
    ("mockgpu", ["device-plugin", "--help"], 0, "what the DaemonSet runs"),
    ("mockgpu", ["device-plugin", "--spec", WORKSHOP, "--node", "mig-0", "--list"], 0,
     "nvidia.com/mig-1g.10gb: 8, nvidia.com/mig-2g.20gb: 1, nvidia.com/mig-3g.40gb: 1"),
    ("mockgpu", ["dra-driver", "--spec", str(ROOT / "clusters" / "dra.yaml"), "--node", "dra-0", "--list"], 0,
     "76 devices, 4 counter sets, 3 ResourceSlices"),
    ("mockgpu", ["gpu-state-publisher", "--help"], 0, "the kind DaemonSet's second container"),
    ("mockgpu", ["up", "--backend", "kind", "--dry-run", "--spec", WORKSHOP], 0, "kind: DaemonSet"),
    ("mockgpu", ["sim", "--help"], 0, "Sample tasks from the trace"),
    ("mockgpu", ["sim", "--quiet", "--seeds", "1"], 1,
     "mockgpu: mockgpu sim needs the notebook extra (tqdm is not installed): pip install 'mockgpu[notebook]'"),
    ("nvidia-smi", ["-L"], 0, "GPU 0: NVIDIA"),
    ("nvidia-smi", ["--help"], 0, "nvidia-smi"),
    ("mockgpu-workload", ["--help"], 0, "mockgpu-workload: the GPU programs the labs run in pods"),
    ("mockgpu-workload", ["inspect"], 0, "NVIDIA_VISIBLE_DEVICES"),
], ids=["mockgpu-help", "device-plugin-help", "device-plugin-list", "dra-driver-list", "publisher-help",
        "kind-dry-run", "sim-help", "sim-needs-the-extra", "nvidia-smi-L", "nvidia-smi-help", "workload-help",
        "workload-inspect"])
def test_entry_point_works_without_the_notebook_extra(driver_dir, entry, argv, rc, expect):
    code = ENTRY[entry] + "\nsys.exit(main(sys.argv[1:]))"
    proc = _python(code, *argv, env={"MOCKGPU_DRIVER_DIR": str(driver_dir)})
    assert proc.returncode == rc, proc.stderr
    out = " ".join((proc.stdout + proc.stderr).split())  # argparse wraps help text
    assert expect in out, out
    if rc:
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


_IMPORT_ALL = f"""
import importlib, pkgutil
pkg = importlib.import_module(sys.argv[1])
for m in pkgutil.walk_packages(getattr(pkg, "__path__", []), pkg.__name__ + "."):
    importlib.import_module(m.name)
leaked = sorted(m for m in sys.modules if m.partition(".")[0] in {NOTEBOOK_ONLY!r})
print("imported", sys.argv[1], leaked)
"""


@pytest.mark.parametrize(("package", "ok"), [
    ("mockgpu.deviceplugin", True),  # the DaemonSet's device-plugin container
    ("mockgpu.control", True),  # its gpu-state-publisher container (mockgpu.control.kubelet.publisher), and more
    ("mockgpu.gpu", True),  # nvidia-smi and the fake driver
    ("mockgpu.backends", True),  # mockgpu up/down/status
    ("mockgpu.config", True),
    ("mockgpu.sched", True),
    ("mockgpu.commands", True),
    ("mockgpu.sim.command", True),  # registered with the CLI; it imports the simulator only when run
    ("mockgpu.widgets", False),  # the blocker really blocks: the widgets need ipywidgets
], ids=lambda v: v if isinstance(v, str) else None)
def test_package_imports_without_the_notebook_extra(package, ok):
    proc = _python(_IMPORT_ALL, package)
    if ok:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == f"imported {package} []"
    else:
        assert proc.returncode == 1 and "ModuleNotFoundError: No module named 'ipywidgets'" in proc.stderr
