"""The lab image under Docker's default security options (issue 23's "Done when"): labs 01 and 07 pass nbval inside
it as the learner (uid 1000) and as root, `mockgpu lab` serves a published port with its token, the hub's and
Binder's entry points are installed, and the upstream control plane runs inside with no Go when the image carries its
binaries. No container here gets --privileged, --security-opt or --cap-add: the tests first show that Docker's
default seccomp filter is in force inside."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from mockgpu.backends.upstream import binaries

# a container build, hub start and notebook runs take minutes (the suite default is 300 s)
pytestmark = pytest.mark.timeout(1800)

LABS = ["labs/solutions/01-why-is-my-4-gpu-job-pending.ipynb",
        "labs/solutions/07-time-slicing-and-oom-blast-radius.ipynb"]
NBVAL = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env"]
USERS = {"learner": [], "root": ["--user", "0:0"]}


def docker_run(image: str, *args: str, opts: tuple[str, ...] = (), timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "run", "--rm", *opts, image, *args], capture_output=True, text=True,
                          timeout=timeout)


# What the image promises about itself, read inside one container: (expression, expected).
LAYOUT_PROBE = r"""
import json, os, pathlib, shutil
from mockgpu.widgets.labkit import REPO

s = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
print(json.dumps({
  "uid": os.getuid(), "home": os.environ["HOME"], "cwd": os.getcwd(),
  "labs_writable": os.access("labs/01-why-is-my-4-gpu-job-pending.ipynb", os.W_OK),
  "opt_writable": os.access("/opt/mockgpu", os.W_OK) or os.access("/opt/venv/bin", os.W_OK),
  "repo": str(REPO), "bwrap": bool(shutil.which("bwrap")), "tini": bool(shutil.which("tini")),
  "singleuser": bool(shutil.which("jupyterhub-singleuser")), "notebook": bool(shutil.which("jupyter-notebook")),
  "autosave": json.load(open("/opt/venv/share/jupyter/lab/settings/overrides.json"))
      ["@jupyterlab/docmanager-extension:plugin"]["autosave"],
  "seccomp": s["Seccomp"].strip(), "cap_eff": s["CapEff"].strip(),
}))
"""


def test_image_layout_as_the_learner(lab_image):
    r = docker_run(lab_image, "python", "-c", LAYOUT_PROBE)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got == {
        "uid": 1000, "home": "/home/learner", "cwd": "/home/learner", "labs_writable": True, "opt_writable": False,
        "repo": "/opt/mockgpu", "bwrap": True, "tini": True, "singleuser": True, "notebook": True,
        "autosave": False,
        "seccomp": "2",  # SECCOMP_MODE_FILTER: Docker's default profile is on
        "cap_eff": "0000000000000000",  # a non-root user holds no capability
    }


@pytest.mark.parametrize("user", USERS)
def test_labs_01_and_07_pass_nbval_under_default_security(lab_image, container_name, user):
    opts = ("--name", container_name, *USERS[user])
    seccomp = docker_run(lab_image, "grep", "^Seccomp:", "/proc/self/status", opts=tuple(USERS[user]))
    assert seccomp.stdout.split() == ["Seccomp:", "2"], seccomp  # the default profile filters this container
    r = docker_run(lab_image, *NBVAL, *LABS, opts=opts, timeout=1500)
    tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-40:])
    assert r.returncode == 0, tail
    m = re.search(r"(\d+) passed", r.stdout)
    assert m and int(m.group(1)) >= 10 and "failed" not in r.stdout.splitlines()[-1], tail


def _wait_for_url(name: str, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    logs = ""
    while time.monotonic() < deadline:
        logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True, timeout=30)
        out = logs.stdout + logs.stderr
        m = re.search(r"http://127\.0\.0\.1:8888(/lab/tree/\S+)?token=([^\s&]+)", out)
        if m and "Jupyter Server" in out and "is running at" in out:
            return m.group(0)
        time.sleep(1)
    raise AssertionError(f"no URL with a token from `mockgpu lab` in {timeout} s:\n{logs}")


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_mockgpu_lab_serves_a_published_port_with_its_token(lab_image, container_name):
    """The image's default command, as the README's `docker run -p 8888:8888` runs it (a random host port here)."""
    subprocess.run(["docker", "run", "-d", "--name", container_name, "-p", "127.0.0.1::8888", lab_image],
                   check=True, capture_output=True, timeout=60)
    url = _wait_for_url(container_name)
    token = url.rsplit("token=", 1)[1]
    port = subprocess.run(["docker", "port", container_name, "8888/tcp"], capture_output=True, text=True,
                          check=True).stdout.split(":")[-1].strip()
    base = f"http://127.0.0.1:{port}"
    assert _get(f"{base}/api/status?token={token}") == 200
    assert _get(f"{base}/api/status") == 403  # token authentication stays on
    assert _get(f"{base}/api/contents/01-why-is-my-4-gpu-job-pending.ipynb?content=0&token={token}") == 200


def test_jupyter_token_from_the_environment_is_the_token(lab_image, container_name):
    subprocess.run(["docker", "run", "-d", "--name", container_name, "-e", "JUPYTER_TOKEN=workshop-token-1234",
                    lab_image], check=True, capture_output=True, timeout=60)
    assert _wait_for_url(container_name).endswith("?token=workshop-token-1234")


def test_upstream_backend_runs_inside_with_no_go(lab_image, container_name):
    """MOCKGPU_BACKEND=upstream: lab 01 on the real kube-apiserver, controller manager and scheduler the image carries
    (scripts/lab-image puts them in when scripts/upstream-build has built them here)."""
    if binaries.missing(("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")):
        pytest.skip(f"no upstream binaries on this machine, so the image carries none: {binaries.missing()}")
    r = docker_run(lab_image, "sh", "-c", "command -v go; kubectl version --client=true -o json")
    assert r.returncode == 0 and "/go" not in r.stdout, r
    assert json.loads(r.stdout)["clientVersion"]["gitVersion"] == binaries.versions()["KUBERNETES_VERSION"]
    r = docker_run(lab_image, *NBVAL, LABS[0], opts=("--name", container_name, "-e", "MOCKGPU_BACKEND=upstream"),
                   timeout=1200)
    tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-40:])
    assert r.returncode == 0 and re.search(r"\d+ passed", r.stdout), tail
