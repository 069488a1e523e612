"""Checks before creating a kind cluster, each answering in one line what is wrong and the fix.

Blocking: Docker daemon reachable (``docker info``), ``kind`` and ``kubectl`` on PATH (and ``helm`` for
fake-gpu-operator), and a kind at least as new as the release that published the node image (an older kind
may not boot a newer node image: kind's release notes tie each image to a release). Warnings only: a kind
version that cannot be read, inotify limits (kind's known-issues page: "too many open files";
raise ``fs.inotify.max_user_watches`` to 524288 and ``max_user_instances`` to 512) and free memory
(a heuristic of about 1 GiB per kind node plus 1 GiB for building the image; not measured here).
"""

from __future__ import annotations

import re
from pathlib import Path

from mockgpu.backends.common.run import Check, Runner, kubectl_check, tool_check
from mockgpu.backends.kind.images import NodeImage

INOTIFY_WATCHES = 524288
INOTIFY_INSTANCES = 512
GIB = 1024**3


def docker_check(r: Runner) -> Check:
    if r.which("docker") is None:
        return Check("docker", False, "Docker is not installed: install Docker Engine or Docker Desktop "
                     "(https://docs.docker.com/engine/install/), then re-run")
    res = r.run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30)
    if res.returncode != 0:
        return Check("docker", False, "Docker daemon is not reachable (`docker info` failed): start Docker "
                     "(e.g. `sudo systemctl start docker`) and check you may use it (`docker` group or DOCKER_HOST)")
    return Check("docker", True, f"Docker Engine {res.stdout.strip()}")


KIND_INSTALL = "https://kind.sigs.k8s.io/docs/user/quick-start/"
_KIND_VERSION = re.compile(r"kind (v(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+\S*)?)")


def parse_kind_version(text: str) -> tuple[str, tuple[int, int, int, bool]] | None:
    """``kind v0.31.0-alpha+abc go1.25 linux/amd64`` -> ("v0.31.0-alpha+abc", (0, 31, 0, False)).

    The last key is False for a pre-release, so v0.31.0-alpha sorts before v0.31.0 (semver): a build
    from before the v0.31.0 release may not know that release's node images.
    """
    m = _KIND_VERSION.search(text)
    if not m:
        return None
    return m.group(1), (int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5) is None)


def kind_check(r: Runner, image: NodeImage | None = None) -> Check:
    """kind on PATH, and (given the node image) no older than the kind release that image needs."""
    if r.which("kind") is None:
        return Check("kind", False, f"`kind` is not on PATH: install it ({KIND_INSTALL})")
    res = r.run(["kind", "version"], timeout=30)
    found = parse_kind_version(res.stdout + res.stderr)
    if found is None:
        out = (res.stdout + res.stderr).strip().splitlines()
        need = f"; the node image needs kind {image.kind_release} or newer" if image else ""
        return Check("kind", False, f"cannot read the kind version from `kind version` "
                     f"({out[0] if out else 'no output'}){need}", blocking=False)
    version, key = found
    if image is not None:
        need = parse_kind_version(f"kind {image.kind_release}")
        if need is not None and key < need[1]:
            why = (f"which published the pinned node image {image.name}" if not image.local
                   else f"which the local node image {image.name} is assumed to need")
            return Check("kind", False, f"kind {version} is older than {image.kind_release}, {why}: install kind "
                         f"{image.kind_release} or newer ({KIND_INSTALL})")
    return Check("kind", True, f"kind {version}")


def helm_check(r: Runner) -> Check:
    return tool_check(r, "helm", ["version", "--short"], r"(v[\d.]+\S*)", "https://helm.sh/docs/intro/install/")


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def inotify_check(proc: Path = Path("/proc")) -> Check:
    watches = _read_int(proc / "sys/fs/inotify/max_user_watches")
    instances = _read_int(proc / "sys/fs/inotify/max_user_instances")
    if watches is None or instances is None:
        return Check("inotify", True, "inotify limits unknown (not Linux?)", blocking=False)
    if watches < INOTIFY_WATCHES or instances < INOTIFY_INSTANCES:
        return Check("inotify", False, f"inotify limits are low (max_user_watches={watches}, "
                     f"max_user_instances={instances}): run `sudo sysctl fs.inotify.max_user_watches="
                     f"{INOTIFY_WATCHES} fs.inotify.max_user_instances={INOTIFY_INSTANCES}`", blocking=False)
    return Check("inotify", True, f"inotify max_user_watches={watches} max_user_instances={instances}", blocking=False)


def memory_check(nodes: int, proc: Path = Path("/proc")) -> Check:
    try:
        text = (proc / "meminfo").read_text()
    except OSError:
        return Check("memory", True, "free memory unknown (no /proc/meminfo)", blocking=False)
    m = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.M)
    if not m:
        return Check("memory", True, "free memory unknown", blocking=False)
    avail = int(m.group(1)) * 1024
    want = (nodes + 1) * GIB
    if avail < want:
        return Check("memory", False, f"only {avail / GIB:.1f} GiB memory available, about {want / GIB:.0f} GiB "
                     f"suggested for {nodes} kind node(s): close other programs or use a smaller spec",
                     blocking=False)
    return Check("memory", True, f"{avail / GIB:.1f} GiB memory available", blocking=False)


# linux/capability.h, 0..40: what Docker asks runc for in a --privileged container (every kind node)
CAPABILITIES = (
    "CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE NET_BIND_SERVICE "
    "NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT "
    "SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP "
    "MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE"
).split()
CAPFILTER_RUNTIME = "mockgpu-runc"  # scripts/runc-capfilter, installed by `scripts/docker-engine capfilter`


def missing_capabilities(proc: Path = Path("/proc")) -> list[str]:
    """Capabilities absent from this process's bounding set (a sandboxed machine); [] where unknown."""
    try:
        m = re.search(r"^CapBnd:\s*([0-9a-f]+)$", (proc / "self/status").read_text(), re.M)
    except OSError:
        return []
    if not m:
        return []
    bounding = int(m.group(1), 16)
    return [f"CAP_{name}" for i, name in enumerate(CAPABILITIES) if not (bounding >> i) & 1]


def privileged_check(r: Runner, proc: Path = Path("/proc")) -> Check:
    """kind runs its nodes ``--privileged``: Docker asks runc for every capability, and where the machine's
    bounding set lacks one (a sandbox) runc fails with ``unable to apply caps: operation not permitted``."""
    missing = missing_capabilities(proc)
    if not missing:
        return Check("privileged", True, "capability bounding set complete: privileged containers can start")
    res = r.run(["docker", "info", "--format", "{{.DefaultRuntime}}"], timeout=30)
    if res.returncode == 0 and res.stdout.strip() == CAPFILTER_RUNTIME:
        return Check("privileged", True, f"{', '.join(missing)} missing here; Docker's default runtime "
                     f"{CAPFILTER_RUNTIME} drops it from privileged containers")
    return Check("privileged", False, f"this machine's capability bounding set lacks {', '.join(missing)}, so "
                 "Docker cannot start kind's privileged node containers: run `scripts/docker-engine capfilter` "
                 f"as root (makes {CAPFILTER_RUNTIME}, runc minus those capabilities, Docker's default runtime)")


def preflight(r: Runner, nodes: int, helm: bool = False, proc: Path = Path("/proc"),
              image: NodeImage | None = None) -> list[Check]:
    """All checks in order; Docker first so a machine without it fails fast with one line. ``image`` is the
    node image ``up`` will use (its kind release is checked); None for commands that boot no node."""
    checks = [docker_check(r)]
    if checks[0].ok:
        checks.append(privileged_check(r, proc))
    checks += [kind_check(r, image), kubectl_check(r)]
    if helm:
        checks.append(helm_check(r))
    return [*checks, inotify_check(proc), memory_check(nodes, proc)]


def first_blocking(checks: list[Check]) -> str | None:
    return next((c.message for c in checks if c.blocking and not c.ok), None)
