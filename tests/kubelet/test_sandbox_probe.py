"""The sandbox probe (``mockgpu.control.kubelet.sandboxprobe``): where the workload sandbox cannot be built --
bwrap missing, or namespaces refused (a bwrap that fails as the real one does under Docker's default seccomp) with
no fallback layer possible -- ``mockgpu up`` and ``LabCluster.start()`` fail with one line naming the cause and
the fix and start nothing; where it can (this machine: bootstrap installs bubblewrap), ``up`` says which sandbox
layer pods run under and starts. With namespaces refused, ``up`` falls back (uid 65532 + Landlock as root, the
cluster's user + Landlock otherwise) where that layer can run, and says so in its line."""

from __future__ import annotations

import logging
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mockgpu.control.kubelet import confine, sandboxprobe
from mockgpu.control.kubelet.runtime import ProcessRuntime
from mockgpu.control.kubelet.sandbox import BWRAP, WORKLOAD_UID
from mockgpu.widgets.labkit import LabCluster

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)

# What bubblewrap 0.8 prints, as root, in a container under Docker's default seccomp profile (issue 23).
SECCOMP_BWRAP = """#!/bin/sh
case "$1" in --version) echo "bubblewrap 0.8.0"; exit 0;; --help) exit 0;; esac
echo "bwrap: Creating new namespace failed: Operation not permitted" >&2
exit 1
"""


def fake_path(tmp_path: Path, *, bwrap: str | None) -> Path:
    """A PATH directory holding only ``bwrap`` (a script), or nothing at all."""
    d = tmp_path / "path"
    d.mkdir()
    if bwrap is not None:
        (d / "bwrap").write_text(bwrap)
        (d / "bwrap").chmod(0o755)
    return d


def mockgpu(home: Path, path: str, *args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "MOCKGPU_HOME": str(home), "PYTHONPATH": str(ROOT), "PATH": path, "HOME": str(home)}
    return subprocess.run([*prefix, sys.executable, "-m", "mockgpu.cli", *args], env=env, capture_output=True,
                          text=True, timeout=90)


SECCOMP_EXEC = Path(__file__).parent / "seccomp_exec.py"
AS_ROOT = os.geteuid() == 0


def barrier(path: str) -> str | None:
    """The first directory on the way to ``path`` that users other than its owner cannot pass, if any."""
    for d in reversed(Path(os.path.realpath(path)).parents):
        if not d.stat().st_mode & stat.S_IXOTH:
            return str(d)
    return None


def fallback_possible() -> bool:
    """Whether a fallback layer can run here once namespaces are refused: as root, uid 65532 must be able to run
    this interpreter (Landlock optional); otherwise the kernel must offer Landlock."""
    if AS_ROOT:
        return barrier(sys.executable) is None and shutil.which("setpriv", path=os.defpath + ":/usr/sbin:/sbin")
    try:
        confine.abi_version()
    except confine.LandlockUnavailable:
        return False
    return True


def seccomp_wrapper(tmp_path: Path) -> str:
    real = shutil.which("bwrap")
    assert real, "bubblewrap is not installed (scripts/bootstrap installs it as root)"
    return f'#!/bin/sh\nexec {sys.executable} {SECCOMP_EXEC} {real} "$@"\n'


@pytest.mark.parametrize(("cause", "as_root", "container", "fix"), [
    ("bwrap not found on PATH", True, False, "apt-get install bubblewrap"),
    ("setpriv not found (Debian: util-linux)", True, True, "apt-get install util-linux"),
    ("bwrap: Creating new namespace failed: Operation not permitted", True, True,
     f"`docker run {sandboxprobe.DOCKER_FIX_USER}` (bubblewrap then runs as uid {WORKLOAD_UID} in a user "
     f"namespace), or with `{sandboxprobe.DOCKER_FIX_ROOT}` (or --privileged)"),
    ("bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged "
     "user namespaces.", False, True, f"`docker run {sandboxprobe.DOCKER_FIX_USER}` (or --privileged)"),
    ("bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged "
     "user namespaces.", False, False, "sysctl kernel.unprivileged_userns_clone=1"),
    ("bwrap: Creating new namespace failed: Operation not permitted", True, False,
     f"namespaces are refused here (a container's seccomp profile?): run it with `docker run "
     f"{sandboxprobe.DOCKER_FIX_USER}`"),
    ("bwrap: something else entirely", False, False, "The workload sandbox"),
], ids=["no-bwrap", "no-setpriv", "container-root", "container-user", "host-user", "undetected-container-root",
        "unknown"])
def test_the_fix_follows_the_cause_and_the_place(cause, as_root, container, fix):
    line = sandboxprobe.refusal(f"workload sandbox unavailable: {cause}", as_root=as_root, container=container)
    assert "\n" not in line
    assert line.startswith("no pod can start here: the workload sandbox is unavailable (")
    assert cause.split(";")[0] in line and fix in line


def test_a_bwrap_refused_by_seccomp_fails_the_probe_with_the_docker_options(tmp_path, monkeypatch):
    """Namespaces refused and (here: bubblewrap is the only layer tried) no fallback."""
    monkeypatch.setattr(sandboxprobe, "in_container", lambda: True)
    bwrap = fake_path(tmp_path, bwrap=SECCOMP_BWRAP) / "bwrap"
    verdict = sandboxprobe.probe(str(bwrap), layers=(BWRAP,))
    assert not verdict.ok
    assert "Creating new namespace failed: Operation not permitted" in verdict.line
    assert "seccomp=unconfined" in verdict.line


def test_the_probe_passes_on_this_machine():
    verdict = sandboxprobe.probe()
    assert verdict.ok, verdict.line
    assert verdict.line.startswith("sandbox: bubblewrap ")


@pytest.mark.parametrize("bwrap", [None, SECCOMP_BWRAP], ids=["missing", "seccomp"])
def test_up_fails_in_one_line_and_starts_nothing(tmp_path, bwrap):
    if bwrap is not None and fallback_possible():
        return test_up_falls_back_when_namespaces_are_refused(tmp_path, bwrap)
    home = tmp_path / "home"
    r = mockgpu(home, str(fake_path(tmp_path, bwrap=bwrap)), "up", "--name", "nopods")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("mockgpu: no pod can start here: the workload sandbox is unavailable (")
    if bwrap is None:
        assert "bwrap not found on PATH" in lines[0] and "apt-get install bubblewrap" in lines[0]
    else:
        assert "Creating new namespace failed: Operation not permitted" in lines[0]
    assert not (home / "nopods").exists()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="seccomp_exec.py's filter names x86_64 syscall numbers")
def test_up_fails_in_one_line_under_a_real_seccomp_refusal(tmp_path):
    """The real bwrap under a filter that refuses namespaces as Docker's default seccomp profile does: its own
    message, and the Docker options for this user, in the one line."""
    wrapper = seccomp_wrapper(tmp_path)
    if fallback_possible():
        return test_up_falls_back_when_namespaces_are_refused(tmp_path, wrapper)
    # no fallback here (as root: uid 65532 cannot run this interpreter): refused, the causes named
    home = tmp_path / "home"
    r = mockgpu(home, str(fake_path(tmp_path, bwrap=wrapper)), "up", "--name", "nopods")
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    want = ("Creating new namespace failed: Operation not permitted" if os.geteuid() == 0 else
            "No permissions to create new namespace")  # bwrap blames the kernel when not root
    assert lines[0].startswith("mockgpu: no pod can start here: the workload sandbox is unavailable (bwrap: ")
    assert want in lines[0]
    fix = sandboxprobe.fix_for(lines[0], as_root=os.geteuid() == 0, container=sandboxprobe.in_container())
    assert fix in lines[0] and fix != "see the README's section 'The workload sandbox'"
    assert "no fallback (" in lines[0]
    assert not (home / "nopods").exists()


def test_up_falls_back_when_namespaces_are_refused(tmp_path, bwrap: str | None = None):
    """bwrap refused namespaces (the real one under the seccomp filter): ``up`` names the fallback layer and
    starts; its pods run there (the escape table's ``namespaces-refused`` rows run them)."""
    if not fallback_possible():
        pytest.skip("no fallback layer can run here (as root: uid 65532 cannot run this interpreter, "
                    f"{barrier(sys.executable)} is closed; test_up_fails_in_one_line_under_a_real_seccomp_refusal "
                    "checks the refusal instead)")
    if platform.machine() != "x86_64":
        pytest.skip("seccomp_exec.py's filter names x86_64 syscall numbers")
    home = tmp_path / "home"
    path = fake_path(tmp_path, bwrap=bwrap or seccomp_wrapper(tmp_path))
    path.chmod(0o755)
    up = mockgpu(home, f"{path}:{os.environ['PATH']}", "up", "--name", "fellback")
    try:
        assert up.returncode == 0, up.stderr
        said = up.stderr.strip().splitlines()
        head = f"sandbox: uid {WORKLOAD_UID} + Landlock ABI " if AS_ROOT else "sandbox: "
        assert said[0].startswith(head) and "(no namespaces: " in said[0], said
        assert "Landlock ABI" in said[0] and "no_new_privs" in said[0], said
        assert up.stdout.startswith("cluster 'fellback' (embedded, 0 nodes in its spec): running")
    finally:
        down = mockgpu(home, f"{path}:{os.environ['PATH']}", "down", "--name", "fellback")
    assert down.returncode == 0, down.stderr


@pytest.mark.skipif(platform.machine() != "x86_64", reason="seccomp_exec.py's filter names x86_64 syscall numbers")
@pytest.mark.parametrize("who", ["root-without-setuid", "ordinary-user"])
def test_up_fails_in_one_line_when_every_layer_is_impossible(request, who):
    """Namespaces refused, Landlock refused by the same seccomp filter (a profile that does not list it), and no
    uid switch: root without CAP_SETUID/CAP_SETGID (dropped from its bounding set), or an ordinary user. ``up``
    starts nothing and says, in one line, why and what to change."""
    setpriv = shutil.which("setpriv", path=os.defpath + ":/usr/sbin:/sbin")
    if not AS_ROOT or setpriv is None:
        pytest.skip("needs root and setpriv to become the user under test")
    # the ordinary user needs a home it can reach: pytest's tmp_path sits below root's 0700 directories
    home = Path(tempfile.mkdtemp(prefix="mockgpu-every-layer-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    if who == "root-without-setuid":
        drop = (setpriv, "--bounding-set=-setuid,-setgid", "--")
    else:
        if barrier(sys.executable):
            pytest.skip(f"uid 65533 cannot run this interpreter ({barrier(sys.executable)} is closed)")
        if barrier(str(ROOT / "mockgpu")):
            pytest.skip(f"uid 65533 cannot read this checkout ({barrier(str(ROOT / 'mockgpu'))} is closed)")
        os.chown(home, 65533, 65533)
        drop = (setpriv, "--reuid=65533", "--regid=65533", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                "--")
    prefix = (*drop, sys.executable, str(SECCOMP_EXEC), "--no-landlock")
    r = mockgpu(home, os.environ["PATH"], "up", "--name", "nopods", prefix=prefix)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("mockgpu: no pod can start here: the workload sandbox is unavailable (bwrap: "), line
    assert "no fallback (" in line, line
    if who == "root-without-setuid":
        assert "bwrap-userns: " in line and "uid: " in line, line
        assert "--cap-add SYS_ADMIN" in line, line  # the Docker options that let bubblewrap run
    else:
        assert "landlock: Landlock unavailable: Operation not permitted" in line, line
        assert "a kernel with Landlock" in line and "start the cluster as root" in line, line
    assert not (home / "nopods").exists()


def test_up_says_which_sandbox_then_starts(tmp_path):
    home = tmp_path / "home"
    up = mockgpu(home, os.environ["PATH"], "up", "--name", "probed")
    try:
        assert up.returncode == 0, up.stderr
        said = up.stderr.strip().splitlines()  # stdout stays what scripts read: the cluster line, the kubeconfig
        assert said[0].startswith("sandbox: bubblewrap ") and "pods run as" in said[0]
        assert up.stdout.startswith("cluster 'probed' (embedded, 0 nodes in its spec): running")
    finally:
        down = mockgpu(home, os.environ["PATH"], "down", "--name", "probed")
    assert down.returncode == 0, down.stderr


def test_lab_cluster_shows_the_same_line_instead_of_starting(tmp_path, monkeypatch):
    monkeypatch.delenv("MOCKGPU_KUBECONFIG", raising=False)
    monkeypatch.delenv("MOCKGPU_BACKEND", raising=False)
    monkeypatch.setenv("PATH", str(fake_path(tmp_path, bwrap=None)))
    lab = LabCluster("clusters/seed-4x2.yaml", name="labprobe", home=tmp_path / "home")
    with pytest.raises(sandboxprobe.PodsCannotStart) as exc:
        lab.start()
    assert str(exc.value) == sandboxprobe.probe().line
    assert "bwrap not found on PATH" in str(exc.value)
    assert lab.cluster is None and not (tmp_path / "home" / "labprobe").exists()


def test_a_notebook_shows_only_the_line(tmp_path):
    """In IPython (a lab's kernel) the first cell's error is that one line, not a traceback."""
    code = ("from IPython.core.interactiveshell import InteractiveShell\n"
            "r = InteractiveShell.instance().run_cell('from mockgpu.widgets import LabCluster\\n"
            "lab = LabCluster(\"clusters/seed-4x2.yaml\", name=\"labprobe\").start()')\n"
            "print('error:', type(r.error_in_exec).__name__)\n")
    env = {**os.environ, "MOCKGPU_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT),
           "PATH": str(fake_path(tmp_path, bwrap=None))}
    env.pop("MOCKGPU_KUBECONFIG", None)
    env.pop("MOCKGPU_BACKEND", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "mockgpu: no pod can start here: the workload sandbox is unavailable (bwrap not found on PATH); "
        "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)",
        "error: PodsCannotStart"]


def test_a_kubelets_warm_up_logs_an_unavailable_sandbox(tmp_path, caplog):
    """The daemon's log says it too (the kubelet's own start-up probe no longer passes over it in silence)."""
    runtime = ProcessRuntime(tmp_path / "rt", bwrap=None)
    with caplog.at_level(logging.WARNING, logger="mockgpu.control.kubelet.sandbox"):
        runtime.sandbox.warm()
    assert any("bwrap not found on PATH" in r.getMessage() and "every container will be refused" in r.getMessage()
               for r in caplog.records), caplog.text


def test_lab_cluster_names_the_layer_its_pods_run_under(tmp_path, monkeypatch):
    """Where the sandbox can be built, the lab's first cell lists the probe's line among its start-up steps."""
    monkeypatch.delenv("MOCKGPU_KUBECONFIG", raising=False)
    monkeypatch.delenv("MOCKGPU_BACKEND", raising=False)
    lab = LabCluster("clusters/seed-4x2.yaml", name="labline", home=tmp_path / "home")
    lab.check_sandbox()
    assert lab.sandbox_line == sandboxprobe.probe().line
    assert lab.sandbox_line.startswith("sandbox: ")


@pytest.mark.parametrize("as_root, hinted", [(True, True), (False, False)], ids=["root", "user"])
def test_an_interpreter_uid_65532_cannot_reach_is_named(as_root, hinted):
    """A root cluster's fallback layers run the kit's interpreter as uid 65532: when they fail on it (pyenv under a
    0700 /root), the line says so besides the Docker options."""
    exe = os.path.realpath(sys.executable)
    cause = (f"workload sandbox unavailable: bwrap: Creating new namespace failed: Operation not permitted; no "
             f"fallback (bwrap-userns: bwrap: Can't find source path {exe}: Permission denied; uid: confine: "
             f"[Errno 13] Permission denied: '{exe}')")
    line = sandboxprobe.refusal(cause, as_root=as_root, container=True)
    assert "\n" not in line
    assert (f"uid {WORKLOAD_UID} cannot reach {exe}, install Python where every user can run it" in line) == hinted
