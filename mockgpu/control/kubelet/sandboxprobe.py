"""One probe of the workload sandbox, for ``mockgpu up``, ``mockgpu doctor`` and the labs' ``LabCluster``.

``probe()`` builds the sandbox a kubelet builds -- the same allowlist, binds, bwrap options and workload uid,
through ``ProcessRuntime`` itself -- around a trivial command (the sandboxed interpreter imports the fake CUDA
module), once, and returns a ``Verdict``: one line saying which sandbox layer pods will run under (bubblewrap's
namespaces, or where they are refused uid 65532 / the cluster's user with Landlock, ``no_new_privs`` and rlimits)
and what it does not promise, or, when no pod can start, one line naming the cause and the fix (install
bubblewrap; the Docker options that let a container build namespaces; the kernel setting for unprivileged user
namespaces; Landlock). Nothing ever falls back to running pods unsandboxed: a failed probe means ``up`` refuses
to report a cluster that cannot run a single pod.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mockgpu.control.kubelet.runtime import ProcessRuntime
from mockgpu.control.kubelet.sandbox import (
    BWRAP,
    BWRAP_USERNS,
    INSTALL_HINT,
    LANDLOCK,
    NAMESPACE_REFUSED,
    UID,
    WORKLOAD_UID,
    Sandbox,
    SandboxUnavailable,
)
from mockgpu.errors import MockgpuError

__all__ = ["NAMESPACE_REFUSED", "PodsCannotStart", "Verdict", "describe", "fix_for", "probe", "refusal"]
# The Docker options that let bubblewrap build the sandbox in a container (measured, issue 23). DOCKER_FIX_USER
# serves root too since the bwrap-userns layer (root drops to uid 65532, bwrap builds a user namespace): measured
# with Docker 20.10.24, as root, no added capability.
DOCKER_FIX_ROOT = "--security-opt seccomp=unconfined --cap-add SYS_ADMIN --cap-add NET_ADMIN"
DOCKER_FIX_USER = "--security-opt seccomp=unconfined --security-opt systempaths=unconfined"
USERNS_FIX = ("allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 23.10+ "
              "sysctl kernel.apparmor_restrict_unprivileged_userns=0), or start the cluster as root")
LANDLOCK_FIX = ("or let the fallback run: a kernel with Landlock (Linux 5.13+, `lsm=` including landlock) and a "
                "seccomp profile that allows its three system calls (Docker's default lists them since 2022; "
                "Debian 12's docker.io 20.10.24 does), or start the cluster as root (pods then run as uid 65532)")


class PodsCannotStart(MockgpuError):
    """No pod can start on this machine: the workload sandbox cannot be built. The message is the one line naming
    the cause and the fix; a notebook (IPython) shows only that line, not a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"mockgpu: {self}"]


@dataclass(frozen=True)
class Verdict:
    """The probe's result: ``ok`` (pods can start) and ``line``, the one line ``up``/``doctor``/the labs show."""

    ok: bool
    line: str

    def check(self) -> Verdict:
        """This verdict, if pods can start; else raise ``PodsCannotStart`` with its line."""
        if not self.ok:
            raise PodsCannotStart(self.line)
        return self


def in_container() -> bool:
    """Whether this process runs in a container: Docker's ``/.dockerenv``, Podman's ``/run/.containerenv``, a
    Kubernetes pod's service environment, or PID 1's cgroup naming a container runtime (cgroup v1)."""
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv") or "KUBERNETES_SERVICE_HOST" in os.environ:
        return True
    try:
        with open("/proc/1/cgroup", encoding="utf-8", errors="replace") as f:
            cgroups = f.read()
    except OSError:
        return False
    return any(word in cgroups for word in ("docker", "containerd", "kubepods", "libpod", "lxc"))


def bwrap_version(bwrap: str) -> str:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return "bubblewrap"
    return " ".join(out[:2]) if out else "bubblewrap"


def _who(uid: int) -> str:
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = f"uid {uid}"
    return f"{name} (uid {uid})"


def _why_no_namespaces(sandbox: Sandbox) -> str:
    if in_container():
        return "this container refuses them"
    cause = sandbox.namespaces_refused.removeprefix("bwrap: ")
    return f"refused here: {cause}" if cause else "not tried"


def describe(sandbox: Sandbox) -> str:
    """Which sandbox layer pods run under and what it does not promise, in one line."""
    version = bwrap_version(sandbox.bwrap) if sandbox.bwrap else "bubblewrap"
    namespaces = "in their own PID, IPC, network and UTS namespaces, seeing only the allowlisted programs"
    if sandbox.layer == BWRAP_USERNS:
        return (f"sandbox: {version} in a user namespace -- pods run as uid {WORKLOAD_UID} with no capabilities "
                f"(dropped before bwrap: root may not create namespaces here: {_why_no_namespaces(sandbox)}), "
                f"{namespaces}")
    if sandbox.layer in (UID, LANDLOCK):
        head = f"uid {WORKLOAD_UID}" if sandbox.layer == UID else _who(os.getuid())
        who = f"uid {WORKLOAD_UID} with no capabilities" if sandbox.layer == UID else f"{head}, the cluster's own user"
        why = _why_no_namespaces(sandbox)
        abi = sandbox.landlock_abi
        if abi is None:
            return (f"sandbox: {head} + no_new_privs + rlimits, WITHOUT Landlock (no namespaces: {why}; no Landlock "
                    f"in this kernel) -- pods run as {who} and share it; they can read what that uid can on the host "
                    f"and run any program it may: the allowlist does not hold")
        net = "TCP refused" if abi >= 4 else "TCP open (Landlock ABI < 4)"
        scope = "signals and abstract sockets scoped" if abi >= 6 else "signals not scoped (Landlock ABI < 6)"
        return (f"sandbox: {head} + Landlock ABI {abi} + no_new_privs + rlimits (no namespaces: {why}) -- pods run "
                f"as {who}; they run only the allowlisted programs, read and write only their own directories, "
                f"{net}, {scope}; they see the host's processes, file names, UDP and unix sockets")
    if sandbox.as_root:
        who = f"uid {WORKLOAD_UID} with no capabilities"
    else:
        who = f"{_who(sandbox.uid)} in a user namespace"
    assert sandbox.layer in (BWRAP, None)
    return f"sandbox: {version} -- pods run as {who}, {namespaces}"


def fix_for(cause: str, *, as_root: bool, container: bool) -> str:
    """What to change, for the cause ``SandboxUnavailable`` gave."""
    if "bwrap not found" in cause:
        return INSTALL_HINT
    if "setpriv not found" in cause:
        return "install util-linux, which has setpriv (Debian/Ubuntu: apt-get install util-linux)"
    if NAMESPACE_REFUSED.search(cause):
        # Root is refused namespaces only by a seccomp filter or security module: in practice a container's.
        where = "this container may not create namespaces" if container else \
            "namespaces are refused here (a container's seccomp profile?)"
        fallback = f", {LANDLOCK_FIX}" if "no fallback" in cause and not as_root else ""
        if as_root:
            return (f"{where}: run it with `docker run {DOCKER_FIX_USER}` (bubblewrap then runs as uid "
                    f"{WORKLOAD_UID} in a user namespace), or with `{DOCKER_FIX_ROOT}` (or --privileged)")
        if container:
            return f"{where}: run it with `docker run {DOCKER_FIX_USER}` (or --privileged){fallback}"
        return f"{USERNS_FIX}; in a container, run it with `docker run {DOCKER_FIX_USER}`{fallback}"
    return "see the README's section 'The workload sandbox'"


def refusal(cause: str, *, as_root: bool, container: bool) -> str:
    """The one line ``up`` fails with: no pod can start, why, and what to change."""
    cause = cause.removeprefix("workload sandbox unavailable: ").split("; install bubblewrap")[0]
    fix = fix_for(cause, as_root=as_root, container=container)
    exe = os.path.realpath(sys.executable)
    if as_root and (f"{exe}: Permission denied" in cause or f"'{exe}'" in cause):
        # the fallback layers run this interpreter as WORKLOAD_UID (e.g. pyenv's under a 0700 /root)
        fix += (f"; or let the fallback run: uid {WORKLOAD_UID} cannot reach {exe}, install Python where every "
                f"user can run it (as the python images do)")
    return f"no pod can start here: the workload sandbox is unavailable ({cause}); {fix}"


def probe(bwrap: str | None = "auto", layers: tuple[str, ...] | None = None) -> Verdict:
    """Build the workload sandbox once around a trivial command; the verdict (never raises for the sandbox).
    ``bwrap``: as ``ProcessRuntime`` takes it ("auto": the one on PATH); ``layers``: the layers to try (all)."""
    with tempfile.TemporaryDirectory(prefix="mockgpu-sandbox-probe-") as tmp:
        runtime = ProcessRuntime(Path(tmp) / "runtime", bwrap=bwrap, layers=layers)
        sandbox = runtime.sandbox
        try:
            sandbox.check()
        except SandboxUnavailable as exc:
            return Verdict(False, refusal(str(exc), as_root=sandbox.as_root, container=in_container()))
        finally:
            if sandbox.relocated is not None:  # the probe's own tree, made by root and used only by the probe
                shutil.rmtree(sandbox.relocated, ignore_errors=True)
        return Verdict(True, describe(sandbox))
