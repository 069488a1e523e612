"""The workload sandbox: every container runs in the strongest layer this place allows, as an unprivileged user.

The layers, strongest first, chosen once per process by a probe (``check``) and named by ``sandboxprobe``:
``bwrap`` (below); ``bwrap-userns`` (a root kubelet whose namespaces are refused: ``setpriv`` drops to
``WORKLOAD_UID`` first, then bwrap builds the same sandbox in a user namespace); ``uid`` (a root kubelet, no
namespaces at all: ``WORKLOAD_UID`` with every capability set empty, ``no_new_privs``, rlimits and Landlock rules,
``confine.py``, on the host's file system); ``landlock`` (an ordinary user's kubelet, no namespaces: its own uid
with the same confinement, the kubelet made non-dumpable). Only a namespace refusal falls back; a missing or
broken bwrap is refused. The README's "The workload sandbox" has the table of what each layer promises.

What a container sees and is in the ``bwrap`` layers:
* a fresh root file system (a tmpfs) holding only, read-only: the allowlisted executables (at their
  host paths, so ``/bin/sh`` is still ``/bin/sh``), the shared libraries they load (found with
  ``ldd``), the Python interpreter the kit's console scripts name and its standard library, the
  kit's own package and the ``.pth`` files of its site-packages, the wrapper ``bin`` directory on
  ``PATH``, ``/etc/ld.so.cache`` and a two-line ``/etc/passwd``/``/etc/group``; read-write: its own
  working directory (``HOME``), a private ``/tmp`` (tmpfs) and the mounts the device plugin returned
  (the node's fake driver directory). Anything else -- ``/usr/bin/id``, ``/etc/shadow``, the cluster's
  token, another pod's directory, the kubelet's logs -- does not exist inside it.
* new PID, IPC, network, UTS (hostname = pod name) and, where the kernel has it, cgroup namespaces:
  no other process is visible, there is no network, not even loopback to the API server.
* when the cluster runs as root, the dedicated uid/gid ``WORKLOAD_UID`` (65532, no supplementary
  groups, every capability dropped, ``no_new_privs``); otherwise the cluster's own user inside a
  user namespace (bwrap's unprivileged mode, also ``no_new_privs``). Never root.
* the environment the runtime built (pod spec + device plugin + minimal PATH/HOME/HOSTNAME), and only
  the workload sees it: bwrap and setpriv, which run with privilege, get the fixed ``LAUNCHER_ENV``; the
  container's environment travels in an anonymous file whose descriptor the last step (``execenv.py``,
  already the workload user) reads before it execs the workload (see the README's threat model).

In the fallback layers (no mount namespace) the same files are reachable by Landlock rules instead of binds
(``landlock_paths``): read+execute for the allowlisted programs, their interpreters and the loader, read for
the rest, read+write for the home, a private ``TMPDIR`` and the writable mounts (at their host paths).

Where no layer can run, ``SandboxUnavailable`` (one line) is raised and the runtime refuses to start the
container; nothing ever runs unsandboxed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path

import mockgpu
from mockgpu.control.kubelet import confine, execenv
from mockgpu.errors import MockgpuError
from mockgpu.gpu.safedir import Dir

WORKLOAD_UID = 65532  # like distroless's "nonroot": not root, not nobody, not a login user
WORKLOAD_GID = 65532
TMP_SIZE = 64 << 20  # bytes of the private /tmp
SETPRIV_DIR = "/.mockgpu-setpriv"  # mode 0700, root's: unreachable once the workload is uid 65532
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")  # merged-/usr symlinks to mirror
EXECENV = os.path.realpath(execenv.__file__)  # inside the kit's package, which every sandbox binds read-only
CONFINE = os.path.realpath(confine.__file__)  # the fallback layers' rlimits + no_new_privs + Landlock step
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
log = logging.getLogger(__name__)

# The layers, strongest first (README, "The workload sandbox"):
BWRAP = "bwrap"  # bubblewrap's namespaces, built as root (root kubelet) or in a user namespace (ordinary user)
BWRAP_USERNS = "bwrap-userns"  # root kubelet: drop to WORKLOAD_UID first, then bubblewrap in a user namespace
UID = "uid"  # root kubelet, no namespaces: WORKLOAD_UID, no capabilities, no_new_privs, Landlock, rlimits
LANDLOCK = "landlock"  # ordinary user, no namespaces: the same uid, no_new_privs, Landlock, rlimits
LAYERS = (BWRAP, BWRAP_USERNS, UID, LANDLOCK)
FRESH_ROOT_LAYERS = frozenset({BWRAP, BWRAP_USERNS})  # a fresh root file system: mounts at their container paths
DROPPED_LAYERS = frozenset({BWRAP_USERNS, UID})  # the launcher runs as WORKLOAD_UID: its files must be reachable
# What bwrap says when the kernel (or a seccomp filter in front of it) refuses the namespaces it needs:
# "Creating new namespace failed: Operation not permitted" (root under Docker's default seccomp), "No permissions
# to creating new namespace, likely because the kernel does not allow non-privileged user namespaces" (non-root),
# "setting up uid map: Permission denied", "loopback: Failed RTM_NEWADDR" (no CAP_NET_ADMIN), "Failed to make /
# slave" / "Can't mount proc" (no CAP_SYS_ADMIN or masked /proc). Only these fall back to a weaker layer; a
# missing or broken bwrap is refused (install it), so bubblewrap runs wherever it can.
NAMESPACE_REFUSED = re.compile(
    r"new namespace|namespace failed|uid map|RTM_NEWADDR|make / slave|mount proc|Operation not permitted|"
    r"Permission denied", re.IGNORECASE)
# Resource limits of the fallback layers (no cgroups there, and no private /tmp to cap): soft = hard.
RLIMITS = {"CORE": 0, "NOFILE": 4096, "FSIZE": 1 << 30, "AS": 8 << 30}
NPROC = {UID: 4096, LANDLOCK: 8192}  # per real uid: all pods of a root cluster share WORKLOAD_UID
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# Where the workload-visible tree of a root kubelet goes in the layers whose launcher runs as WORKLOAD_UID (its
# state under ~/.mockgpu sits in 0700 directories, often below a 0700 /root): root-owned, mode 0711.
RELOCATION_BASES = ("/run/mockgpu-workloads", "/var/lib/mockgpu-workloads")


class SandboxUnavailable(MockgpuError):
    """The workload sandbox cannot be built on this machine; containers are refused, never run bare."""


@dataclass(frozen=True)
class Bind:
    source: str  # host path
    dest: str  # path inside the sandbox
    writable: bool = False


def visible_path(path: str) -> str:
    """Where a host file appears in the sandbox: its directory resolved, its own name kept, so a
    library named by its soname link (``libz.so.1``) is found under that name."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def file_bind(path: str, dest: str | None = None) -> Bind:
    return Bind(os.path.realpath(path), visible_path(dest or path))


def shebang(path: str) -> str | None:
    """The interpreter a script names on its ``#!`` line, if any."""
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return words[0] if words else None


@functools.cache
def shared_libraries(files: tuple[str, ...]) -> tuple[str, ...]:
    """The shared objects (and the ELF interpreter) ``ldd`` says the given ELF files load."""
    ldd = shutil.which("ldd", path=os.defpath)
    if ldd is None or not files:
        return ()
    out = subprocess.run([ldd, *files], capture_output=True, text=True, env={"LC_ALL": "C"}, check=False).stdout
    libs: set[str] = set()
    for line in out.splitlines():
        words = line.split()
        if "=>" in words:
            i = words.index("=>")
            if i + 1 < len(words) and words[i + 1].startswith("/"):
                libs.add(words[i + 1])
        elif words and words[0].startswith("/") and not line.rstrip().endswith(":"):
            libs.add(words[0])  # the ELF interpreter line, e.g. /lib64/ld-linux-x86-64.so.2 (0x...)
    return tuple(sorted(libs))


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


@functools.cache
def python_binds(executable: str) -> tuple[Bind, ...]:
    """What the kit's console scripts need from this interpreter's environment, read-only: the
    interpreter under its venv names, ``pyvenv.cfg``, the standard library, the ``.pth`` files of
    site-packages and what they import, and the ``mockgpu`` package itself (editable or not).
    Other site-packages (Jupyter, Playwright's bundled node, ...) stay invisible."""
    binds: list[Bind] = []
    exe_dir = os.path.dirname(executable)
    for name in {os.path.basename(executable), "python", "python3"}:
        p = os.path.join(exe_dir, name)
        if os.path.exists(p):
            binds.append(file_bind(p))
    cfg = os.path.join(os.path.dirname(exe_dir), "pyvenv.cfg")
    if os.path.exists(cfg):
        binds.append(file_bind(cfg))
    paths = sysconfig.get_paths()
    for d in (paths.get("stdlib"), _dynload_dir()):  # (in a venv, "platstdlib" is the venv's lib: not that)
        if d and os.path.isdir(d):
            binds.append(Bind(os.path.realpath(d), os.path.realpath(d)))
    site = paths.get("purelib")
    if site and os.path.isdir(site):
        for entry in sorted(os.listdir(site)):
            if entry.endswith(".pth") or entry.startswith(("__editable__", "_distutils_hack", "mockgpu")):
                src = os.path.realpath(os.path.join(site, entry))
                binds.append(Bind(src, os.path.join(os.path.realpath(site), entry)))
    pkg = os.path.realpath(os.path.dirname(mockgpu.__file__))  # what workloads import; an editable install is elsewhere
    binds.append(Bind(pkg, pkg))
    installed = _installed_package(executable)
    if installed and installed != pkg:
        # this kubelet runs a checkout on PYTHONPATH (e.g. a git worktree), not the installed one: the workloads,
        # whose environment is only the pod's, find the package where the install points, so put it there
        binds.append(Bind(pkg, installed))
    return tuple(binds)


def _installed_package(executable: str) -> str | None:
    """Where ``executable`` finds ``mockgpu`` without this process's PYTHONPATH (the install's own location);
    None without a PYTHONPATH (then it is the package this process imported: no interpreter started)."""
    if not os.environ.get("PYTHONPATH"):
        return None
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        out = subprocess.run([executable, "-c", "import mockgpu, os; print(os.path.dirname(mockgpu.__file__))"],
                             capture_output=True, text=True, env=env, cwd="/", timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return os.path.realpath(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def _dynload_dir() -> str | None:
    """The interpreter's directory of standard extension modules (``lib-dynload``)."""
    return next((p for p in sys.path if os.path.basename(p) == "lib-dynload" and os.path.isdir(p)), None)


def _dynload_objects() -> tuple[str, ...]:
    dyn = _dynload_dir()
    if not dyn:
        return ()
    return tuple(sorted(os.path.join(dyn, f) for f in os.listdir(dyn) if ".so" in f))


@functools.cache
def bwrap_options(bwrap: str) -> str:
    """``bwrap --help``: which options this bubblewrap has (``--disable-userns`` and ``--size`` are
    0.8's and 0.7's; older ones run without them)."""
    try:
        return subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""



@dataclass(frozen=True)
class Probed:
    """What the probe found for one sandbox layout: the layer pods run under, the Landlock ABI it uses (fallback
    layers; None without Landlock) and why namespaces were not used (fallback layers)."""

    layer: str
    landlock_abi: int | None = None
    namespaces_refused: str = ""


_PROBED: dict[tuple, Probed] = {}  # sandbox layouts probed in this process (one probe for all kubelets)


def drop_argv(setpriv: str) -> list[str]:
    """setpriv's options that make the rest of the command WORKLOAD_UID/GID: no supplementary groups, empty
    inheritable, ambient and bounding capability sets (so nothing it runs can regain one), no_new_privs."""
    return [setpriv, f"--reuid={WORKLOAD_UID}", f"--regid={WORKLOAD_GID}", "--clear-groups", "--inh-caps=-all",
            "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


def relocation_path(runtime_root: Path) -> Path:
    """Where ``relocation_dir`` puts a runtime's workload-visible tree (nothing is created)."""
    base = next((b for b in RELOCATION_BASES if os.path.isdir(os.path.dirname(b))), RELOCATION_BASES[-1])
    return Path(base) / hashlib.sha256(os.path.realpath(runtime_root).encode()).hexdigest()[:20]


def relocation_dir(runtime_root: Path) -> Path:
    """The root-owned, mode 0711 directory that holds a runtime's workload-visible tree when the launcher runs as
    WORKLOAD_UID (which cannot pass through the 0700 state directories). Each level is made by root with mkdir
    and checked with lstat (a directory, root's, not writable by others: no symlink or squatter is used)."""
    out = relocation_path(runtime_root)
    for d in (out.parent, out):
        try:
            os.mkdir(d, 0o711)
        except FileExistsError:
            pass
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
            raise SandboxUnavailable(f"workload sandbox unavailable: {d} is not a root-owned directory "
                                     f"that only root can write")
        os.chmod(d, 0o711)
    return out


class Sandbox:
    """Builds the command line that runs one container in the strongest layer this place allows, chosen once
    by a probe: bubblewrap's namespaces where they can be built; else (a root kubelet) bubblewrap in a user
    namespace started as WORKLOAD_UID; else WORKLOAD_UID (root kubelet) or the kubelet's own user, each with
    no_new_privs, Landlock and rlimits (``confine.py``). ``layers`` narrows the layers tried (tests)."""

    def __init__(
        self, executables: dict[str, str], bin_dir: Path, state_dir: Path, *, bwrap: str | None = "auto",
        layers: tuple[str, ...] | None = None,
    ) -> None:
        self.executables = executables  # allowlisted name -> host path
        self.bin_dir = Path(bin_dir)
        self.state_dir = Path(state_dir)
        self.bwrap = shutil.which("bwrap") if bwrap == "auto" else bwrap
        self.as_root = os.geteuid() == 0
        self.uid, self.gid = (WORKLOAD_UID, WORKLOAD_GID) if self.as_root else (os.getuid(), os.getgid())
        self.setpriv = shutil.which("setpriv", path=os.defpath + ":/usr/sbin:/sbin") if self.as_root else None
        self.layers = tuple(layers or LAYERS)
        self.layer: str | None = None  # known once check() passed
        self.landlock_abi: int | None = None
        self.namespaces_refused = ""  # bwrap's message, when a fallback layer runs
        self.relocated: Path | None = None  # the workload-visible tree, when it left the runtime's root
        self._binds: tuple[Bind, ...] | None = None
        self._checked = False
        self._lock = threading.RLock()  # pod workers start containers concurrently

    @property
    def fresh_root(self) -> bool:
        """Whether containers get a fresh root file system (mounts at their container paths, a private /tmp)."""
        return self.layer in FRESH_ROOT_LAYERS or self.layer is None

    # -- what is visible ---------------------------------------------------------------------
    def base_binds(self) -> tuple[Bind, ...]:
        """Every read-only bind shared by all containers of this runtime (computed once)."""
        with self._lock:
            if self._binds is None:
                self._binds = self._compute_binds()
            return self._binds

    def _compute_binds(self) -> tuple[Bind, ...]:
        binds: list[Bind] = []
        elves: set[str] = set()
        for exe in self.executables.values():
            binds.append(file_bind(exe))
            interp = shebang(exe)
            if interp and os.path.exists(interp):
                binds.append(file_bind(interp))
                exe = interp
            if _is_elf(os.path.realpath(exe)):
                elves.add(os.path.realpath(exe))
        binds.extend(python_binds(sys.executable))
        elves.add(os.path.realpath(sys.executable))
        elves.update(_dynload_objects())
        if self.setpriv:
            elves.add(os.path.realpath(self.setpriv))
        binds.extend(file_bind(lib) for lib in shared_libraries(tuple(sorted(elves))))
        if os.path.exists("/etc/ld.so.cache"):
            binds.append(file_bind("/etc/ld.so.cache"))
        etc = self.state_dir / "etc"
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "passwd").write_text(
            f"root:x:0:0:root:/root:/sbin/nologin\nmockgpu:x:{self.uid}:{self.gid}:mockgpu workload:/:/sbin/nologin\n"
        )
        (etc / "group").write_text(f"root:x:0:\nmockgpu:x:{self.gid}:\n")
        etc.chmod(0o755)
        binds += [Bind(str(etc / "passwd"), "/etc/passwd"), Bind(str(etc / "group"), "/etc/group")]
        binds.append(Bind(str(self.bin_dir), str(self.bin_dir)))
        return tuple(binds)

    def landlock_paths(self) -> list[tuple[str, str]]:
        """What every container of a fallback layer may reach, as Landlock rules (path, "r"/"rx"/"rw"): the
        allowlisted executables, their interpreters and the dynamic loader (read+execute: nothing else can be
        executed), the libraries they load, the interpreter's standard library and the kit's package, the wrapper
        ``bin`` directory, ``/etc/ld.so.cache`` and ``/proc`` (read), a few character devices (read+write)."""
        rx: set[str] = {os.path.realpath(sys.executable), str(self.bin_dir)}
        for exe in self.executables.values():
            rx.add(os.path.realpath(exe))
            interp = shebang(exe)
            if interp and os.path.exists(interp):
                rx.add(os.path.realpath(interp))
        r: set[str] = set()
        for b in self.base_binds():
            if b.dest in ("/etc/passwd", "/etc/group") or b.source == str(self.bin_dir):
                continue
            if os.path.basename(b.source).startswith(("ld-linux", "ld64", "ld-musl")):
                rx.add(b.source)  # the ELF interpreter: the kernel opens it for execution
            elif b.source not in rx:
                r.add(b.source)
                if b.dest != b.source and os.path.exists(b.dest):
                    r.add(b.dest)  # a checkout bound at the installed package's place: both are readable
        r.add("/proc")
        site = sysconfig.get_paths().get("purelib")
        listed = [(site, "l")] if site and os.path.isdir(site) else []  # site.py lists it for the .pth files
        # the directories the kit's package is imported from: importlib lists a sys.path entry before it looks in it
        pkg = os.path.dirname(os.path.dirname(os.path.dirname(EXECENV)))
        installed = next((b.dest for b in self.base_binds() if b.source == pkg and b.dest != pkg), None)
        listed += [(os.path.dirname(d), "l") for d in (pkg, installed) if d]
        return sorted((p, "rx") for p in rx) + sorted((p, "r") for p in r - rx) + listed + \
            [(d, "rw") for d in DEVICES]

    # -- the command -------------------------------------------------------------------------
    def command(
        self, argv: list[str], *, cwd: str, home: Path, hostname: str, mounts: tuple[tuple[str, str, bool], ...],
        env_fd: int, extra_fds: list[int] | None = None, tmp: Path | None = None,
    ) -> list[str]:
        """The host argv that runs ``argv`` sandboxed. ``mounts``: (host path, container path, writable);
        ``env_fd``: the descriptor of ``execenv.env_fd(env)``, to be inherited by the launcher (``pass_fds``), which
        must itself be started with ``execenv.LAUNCHER_ENV``. In a fallback layer the Landlock policy travels in
        another anonymous file whose descriptor is appended to ``extra_fds`` (pass it too, then close it); ``tmp``
        is the container's private temporary directory there."""
        self.check()
        return self._command(argv, cwd=cwd, home=home, hostname=hostname, mounts=mounts, env_fd=env_fd,
                             extra_fds=extra_fds, tmp=tmp)

    def _command(
        self, argv: list[str], *, cwd: str, home: Path, hostname: str, mounts: tuple[tuple[str, str, bool], ...],
        env_fd: int, extra_fds: list[int] | None, tmp: Path | None,
    ) -> list[str]:
        if self.fresh_root:
            binds = [*self.base_binds(), Bind(str(home), str(home), True)]
            binds += [Bind(h, c, w) for h, c, w in mounts]
            return self._bwrap_argv(binds, argv, cwd=cwd, hostname=hostname, env_fd=env_fd)
        rules = [*self.landlock_paths(), (str(home), "rw")] + ([(str(tmp), "rw")] if tmp else [])
        rules += [(h, "rw" if w else "r") for h, _, w in mounts]
        policy_fd = self._policy_fd(rules, cwd)
        if extra_fds is None:
            os.close(policy_fd)
            raise SandboxUnavailable("workload sandbox unavailable: no way to hand over the Landlock policy")
        extra_fds.append(policy_fd)
        return self._fallback_argv(argv, env_fd=env_fd, policy_fd=policy_fd)

    def _policy_fd(self, rules: list[tuple[str, str]], cwd: str) -> int:
        required = self.landlock_abi is not None or self.layer == LANDLOCK  # UID without Landlock: said in its line
        policy = {"paths": rules, "rlimits": {**RLIMITS, "NPROC": NPROC.get(self.layer or LANDLOCK, 8192)},
                  "net": True, "scope": True, "require_landlock": required, "cwd": cwd}
        fd = os.memfd_create("mockgpu-confine-policy", os.MFD_CLOEXEC)
        os.write(fd, json.dumps(policy).encode())
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    def _fallback_argv(self, argv: list[str], *, env_fd: int, policy_fd: int) -> list[str]:
        cmd: list[str] = []
        if self.layer in DROPPED_LAYERS and self.as_root:
            assert self.setpriv
            cmd += drop_argv(self.setpriv)
        cmd += [sys.executable, "-I", "-S", CONFINE, str(policy_fd), "--"]
        return cmd + [sys.executable, "-I", "-S", EXECENV, str(env_fd), "--", *argv]

    def _bwrap_argv(self, binds: list[Bind], argv: list[str], *, cwd: str, hostname: str, env_fd: int) -> list[str]:
        assert self.bwrap
        has = bwrap_options(self.bwrap)
        # root_mode: real uid 0 does the mounts, then setpriv (hidden in a root-only directory) drops to
        # WORKLOAD_UID with no capabilities and no_new_privs. BWRAP_USERNS: setpriv drops first, bwrap runs as
        # WORKLOAD_UID in a user namespace, as for an ordinary user.
        root_mode = self.as_root and self.layer != BWRAP_USERNS
        cmd = drop_argv(self.setpriv) if self.as_root and self.layer == BWRAP_USERNS and self.setpriv else []
        cmd += [self.bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        if root_mode:
            cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
        else:
            cmd += ["--unshare-user"] + (["--disable-userns"] if "--disable-userns" in has else [])
        cmd += ["--hostname", hostname, "--proc", "/proc", "--dev", "/dev"]
        for top in _TOP_LEVEL:
            if os.path.islink("/" + top):
                cmd += ["--symlink", os.readlink("/" + top), "/" + top]
        cmd += ["--perms", "1777"] + (["--size", str(TMP_SIZE)] if "--size" in has else []) + ["--tmpfs", "/tmp"]
        made = {"/", "/tmp", "/proc", "/dev"} | {"/" + t for t in _TOP_LEVEL if os.path.islink("/" + t)}
        if root_mode:
            assert self.setpriv
            cmd += ["--perms", "0700", "--dir", SETPRIV_DIR]
            binds = [*binds, Bind(os.path.realpath(self.setpriv), f"{SETPRIV_DIR}/setpriv")]
            made.add(SETPRIV_DIR)
        seen: dict[str, Bind] = {}
        for b in binds:
            seen.setdefault(b.dest, b)
        for dest in sorted(seen, key=lambda d: (d.count("/"), d)):
            b = seen[dest]
            parts = Path(dest).parts[1:-1]
            for i in range(len(parts)):
                d = "/" + "/".join(parts[: i + 1])
                if d not in made:
                    made.add(d)
                    cmd += ["--dir", d]
            cmd += ["--bind" if b.writable else "--ro-bind", b.source, b.dest]
            made.add(dest)
        cmd += ["--chdir", cwd, "--"]
        if root_mode:
            cmd += [f"{SETPRIV_DIR}/setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
            cmd += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        # The last step, as the workload user: the container's environment from env_fd, then exec argv.
        return cmd + [sys.executable, "-I", "-S", EXECENV, str(env_fd), "--", *argv]

    # -- checks and preparation --------------------------------------------------------------
    def check(self) -> None:
        """Raise SandboxUnavailable unless some layer can run a sandboxed interpreter that imports the kit
        (probed once per layout and process); afterwards ``layer`` says which."""
        if self._checked:
            return
        key = (self.bwrap, self.uid, self.setpriv, sys.executable, tuple(sorted(self.executables.items())),
               self.layers)
        with self._lock:
            if self._checked:
                return
            found = _PROBED.get(key)
            if found is None:
                found = self._probe()
                _PROBED[key] = found
            self._adopt(found)
            self._checked = True

    def _adopt(self, found: Probed) -> None:
        self.layer, self.landlock_abi, self.namespaces_refused = found.layer, found.landlock_abi, \
            found.namespaces_refused
        if self.as_root and self.layer in DROPPED_LAYERS:
            self._relocate()
        if self.layer == LANDLOCK:
            # The workload has this process's uid: keep it from ptracing the kubelet or reading its
            # /proc/<pid>/environ and mem (Landlock's own ptrace rule does as much; this holds without it too).
            confine.make_nondumpable()

    def warm(self) -> None:
        """Compute the binds and probe now (a kubelet does it at start, off its first pod's path)."""
        try:
            self.check()
        except SandboxUnavailable as exc:  # said again, as the refusal, when a container starts
            log.warning("%s: every container will be refused (mockgpu up and the labs check this first: "
                        "mockgpu.control.kubelet.sandboxprobe)", exc)

    def workload_dir(self, default: Path) -> Path:
        """Where a kubelet keeps what its workloads see (the node's driver directory): ``default``, unless the
        launcher of this layer runs as WORKLOAD_UID, which cannot pass through the kubelet's 0700 state; then the
        relocated tree. A root kubelet probes for it here (once per process)."""
        if self.as_root:
            self.warm()
        return self.relocated if self.relocated is not None else Path(default)

    def _relocate(self) -> None:
        """Move the wrapper ``bin`` directory and the sandbox's files to ``relocation_dir`` (copies of the links
        and the python gate), where WORKLOAD_UID can reach them."""
        if self.relocated is not None:
            return
        runtime_root = self.bin_dir.parent
        reloc = relocation_dir(runtime_root)
        new_bin = reloc / "bin"
        new_bin.mkdir(mode=0o755, exist_ok=True)
        for entry in os.scandir(self.bin_dir):
            dest = new_bin / entry.name
            dest.unlink(missing_ok=True)
            if entry.is_symlink():
                dest.symlink_to(os.readlink(entry.path))
            else:
                shutil.copyfile(entry.path, dest)
                dest.chmod(0o755)
        new_bin.chmod(0o755)
        self.bin_dir, self.state_dir, self.relocated = new_bin, reloc / "sandbox", reloc
        self._binds = None

    def _candidates(self) -> list[str]:
        out = []
        for layer in self.layers:
            if layer == BWRAP_USERNS and not (self.as_root and self.bwrap and self.setpriv):
                continue
            if layer == UID and not (self.as_root and self.setpriv):
                continue
            if layer == LANDLOCK and self.as_root and self.layers == LAYERS:
                continue  # a root kubelet always drops to WORKLOAD_UID (forced only by tests)
            out.append(layer)
        return out

    def _probe(self) -> Probed:
        refused = ""
        errors: list[str] = []
        for layer in self._candidates():
            if layer == BWRAP:
                try:
                    self._try_bwrap(BWRAP)
                    return Probed(BWRAP)
                except SandboxUnavailable as exc:
                    cause = str(exc).removeprefix("workload sandbox unavailable: ")
                    if not NAMESPACE_REFUSED.search(cause) or len(self._candidates()) == 1:
                        raise
                    refused = cause
                    continue
            try:
                if layer == BWRAP_USERNS:
                    self._try_bwrap(BWRAP_USERNS)
                    return Probed(BWRAP_USERNS, None, refused)
                return Probed(layer, self._try_fallback(layer), refused)
            except SandboxUnavailable as exc:
                errors.append(f"{layer}: {str(exc).removeprefix('workload sandbox unavailable: ')}")
        tried = "; ".join(errors) or f"no layer of {', '.join(self.layers)} can run as uid {os.geteuid()}"
        raise SandboxUnavailable(f"workload sandbox unavailable: {refused}; no fallback ({tried})" if refused else
                                 f"workload sandbox unavailable: {tried}")

    def _run_probe(self, argv: list[str], fds: list[int], cwd: str = "/") -> None:
        try:
            r = subprocess.run(argv, capture_output=True, text=True, env=execenv.LAUNCHER_ENV, pass_fds=tuple(fds),
                               cwd=cwd, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"workload sandbox unavailable: {exc}") from None
        finally:
            for fd in fds:
                os.close(fd)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
            raise SandboxUnavailable(f"workload sandbox unavailable: {last}")

    def _env_fd(self) -> int:
        try:
            return execenv.env_fd({"PATH": str(self.bin_dir)})
        except OSError as exc:
            raise SandboxUnavailable(f"workload sandbox unavailable: {exc}") from None

    def _try_bwrap(self, layer: str) -> None:
        if not self.bwrap:
            raise SandboxUnavailable(f"workload sandbox unavailable: bwrap not found on PATH; {INSTALL_HINT}")
        if self.as_root and not self.setpriv:
            raise SandboxUnavailable("workload sandbox unavailable: setpriv not found (Debian: util-linux)")
        self.layer = layer
        try:
            if layer == BWRAP_USERNS:
                self._relocate()
            binds = self.base_binds()
            fd = self._env_fd()
            argv = [sys.executable, "-c", "import mockgpu.gpu.cuda"]
            self._run_probe(self._bwrap_argv(list(binds), argv, cwd="/", hostname="probe", env_fd=fd), [fd])
        finally:
            self.layer = None

    def _try_fallback(self, layer: str) -> int | None:
        """Run the probe under ``layer``; the Landlock ABI it used (None: none, allowed for UID only)."""
        try:
            abi: int | None = confine.abi_version()
        except confine.LandlockUnavailable as exc:
            if layer == LANDLOCK:
                raise SandboxUnavailable(f"workload sandbox unavailable: {exc.strerror}") from None
            abi = None
        self.layer, self.landlock_abi = layer, abi
        try:
            if self.as_root and layer in DROPPED_LAYERS:
                self._relocate()
            home = self.state_dir / "probe"
            home.mkdir(parents=True, exist_ok=True)
            self.prepare(home, [])
            fd = self._env_fd()
            fds = [fd]
            try:
                argv = self._command([sys.executable, "-c", "import mockgpu.gpu.cuda"], cwd=str(home), home=home,
                                     hostname="probe", mounts=(), env_fd=fd, extra_fds=fds, tmp=home)
            except BaseException:
                for x in fds:
                    os.close(x)
                raise
            self._run_probe(argv, fds, cwd=str(home))
        finally:
            self.layer, self.landlock_abi = None, None
        return abi

    def prepare(self, home: Path, writable: list[Path]) -> None:
        """Give the workload user its home and the device plugin's read-write mounts (as root only).

        A pod can write in a mount, so nothing there is reached by path: each directory (the mount and those
        below it, two levels deep: the driver dir's ``ledgers/procs``) is opened ``O_NOFOLLOW`` from its
        parent's descriptor and chowned through its own; files are not chowned at all (workloads lock them
        read-only and replace them by rename, which needs only the directory). The path-based recursive
        lchown this replaces chowned a host file when a directory was swapped for a symlink mid-walk."""
        home.chmod(0o700)
        if not self.as_root:
            return
        _chown_dirs(home, self.uid, self.gid, depth=0)
        for top in writable:
            _chown_dirs(top, self.uid, self.gid, depth=2)


def _chown_dirs(p: Path, uid: int, gid: int, depth: int) -> None:
    try:
        with Dir.open(p) as d:
            d.chown_dirs(uid, gid, depth=depth)
    except (FileNotFoundError, NotADirectoryError):
        pass
