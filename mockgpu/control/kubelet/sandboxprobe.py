"""One probe of the workload sandbox, for ``mockgpu up``, ``mockgpu doctor`` and the labs' ``LabCluster``.

``probe()`` builds the sandbox a kubelet builds -- the same allowlist, binds, bwrap options and workload uid,
through ``ProcessRuntime`` itself -- around a trivial command (the sandboxed interpreter imports the fake CUDA
module), once, and returns a ``Verdict``: one line saying which sandbox pods will run under, or, when no pod can
start, one line naming the cause and the fix (install bubblewrap; the Docker options that let a container build
namespaces; the kernel setting for unprivileged user namespaces). Nothing ever falls back to running pods
unsandboxed: a failed probe means ``up`` refuses to report a cluster that cannot run a single pod.
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mockgpu.control.kubelet.runtime import ProcessRuntime
from mockgpu.control.kubelet.sandbox import INSTALL_HINT, WORKLOAD_UID, Sandbox, SandboxUnavailable
from mockgpu.errors import MockgpuError

# What bwrap says when the kernel (or a seccomp filter in front of it) refuses the namespaces it needs:
# "Creating new namespace failed: Operation not permitted" (root under Docker's default seccomp), "No permissions
# to creating new namespace, likely because the kernel does not allow non-privileged user namespaces" (non-root),
# "setting up uid map: Permission denied", "loopback: Failed RTM_NEWADDR" (no CAP_NET_ADMIN), "Failed to make /
# slave" / "Can't mount proc" (no CAP_SYS_ADMIN or masked /proc).
NAMESPACE_REFUSED = re.compile(
    r"new namespace|namespace failed|uid map|RTM_NEWADDR|make / slave|mount proc|Operation not permitted|"
    r"Permission denied", re.IGNORECASE)
# The Docker options that let bubblewrap build the sandbox in a container (measured, issue 23).
DOCKER_FIX_ROOT = "--security-opt seccomp=unconfined --cap-add SYS_ADMIN --cap-add NET_ADMIN"
DOCKER_FIX_USER = "--security-opt seccomp=unconfined --security-opt systempaths=unconfined"
USERNS_FIX = ("allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 23.10+ "
              "sysctl kernel.apparmor_restrict_unprivileged_userns=0), or start the cluster as root")


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


def describe(sandbox: Sandbox) -> str:
    """Which sandbox pods run under, in one line."""
    if sandbox.as_root:
        who = f"uid {WORKLOAD_UID} with no capabilities"
    else:
        try:
            name = pwd.getpwuid(sandbox.uid).pw_name
        except KeyError:
            name = f"uid {sandbox.uid}"
        who = f"{name} (uid {sandbox.uid}) in a user namespace"
    version = bwrap_version(sandbox.bwrap) if sandbox.bwrap else "bubblewrap"
    return (f"sandbox: {version} -- pods run as {who}, in their own PID, IPC, network and UTS namespaces, "
            f"seeing only the allowlisted programs")


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
        if as_root:
            return (f"{where}: run it with `docker run {DOCKER_FIX_ROOT}` (or --privileged), or as a non-root user "
                    f"with `{DOCKER_FIX_USER}`")
        if container:
            return f"{where}: run it with `docker run {DOCKER_FIX_USER}` (or --privileged)"
        return f"{USERNS_FIX}; in a container, run it with `docker run {DOCKER_FIX_USER}`"
    return "see the README's section 'The workload sandbox'"


def refusal(cause: str, *, as_root: bool, container: bool) -> str:
    """The one line ``up`` fails with: no pod can start, why, and what to change."""
    cause = cause.removeprefix("workload sandbox unavailable: ").split("; install bubblewrap")[0]
    return f"no pod can start here: the workload sandbox is unavailable ({cause}); " \
           f"{fix_for(cause, as_root=as_root, container=container)}"


def probe(bwrap: str | None = "auto") -> Verdict:
    """Build the workload sandbox once around a trivial command; the verdict (never raises for the sandbox).
    ``bwrap``: as ``ProcessRuntime`` takes it ("auto": the one on PATH)."""
    with tempfile.TemporaryDirectory(prefix="mockgpu-sandbox-probe-") as tmp:
        runtime = ProcessRuntime(Path(tmp) / "runtime", bwrap=bwrap)
        sandbox = runtime.sandbox
        try:
            sandbox.check()
        except SandboxUnavailable as exc:
            return Verdict(False, refusal(str(exc), as_root=sandbox.as_root, container=in_container()))
        return Verdict(True, describe(sandbox))
