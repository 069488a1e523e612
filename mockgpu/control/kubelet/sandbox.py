"""The workload sandbox: every container runs inside bubblewrap (``bwrap``), as an unprivileged user.

What a sandboxed container sees and is:
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

Where bwrap is missing or cannot build this sandbox, ``SandboxUnavailable`` (one line) is raised and
the runtime refuses to start the container; nothing ever runs unsandboxed.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path

import mockgpu
from mockgpu.control.kubelet import execenv
from mockgpu.errors import MockgpuError
from mockgpu.gpu.safedir import Dir

WORKLOAD_UID = 65532  # like distroless's "nonroot": not root, not nobody, not a login user
WORKLOAD_GID = 65532
TMP_SIZE = 64 << 20  # bytes of the private /tmp
SETPRIV_DIR = "/.mockgpu-setpriv"  # mode 0700, root's: unreachable once the workload is uid 65532
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")  # merged-/usr symlinks to mirror
EXECENV = os.path.realpath(execenv.__file__)  # inside the kit's package, which every sandbox binds read-only
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
log = logging.getLogger(__name__)


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


_PROBED: set[tuple] = set()  # sandbox layouts that worked in this process (one probe for all kubelets)


class Sandbox:
    """Builds the bwrap command line for one container, and checks once that it works here."""

    def __init__(
        self, executables: dict[str, str], bin_dir: Path, state_dir: Path, *, bwrap: str | None = "auto"
    ) -> None:
        self.executables = executables  # allowlisted name -> host path
        self.bin_dir = Path(bin_dir)
        self.state_dir = Path(state_dir)
        self.bwrap = shutil.which("bwrap") if bwrap == "auto" else bwrap
        self.as_root = os.geteuid() == 0
        self.uid, self.gid = (WORKLOAD_UID, WORKLOAD_GID) if self.as_root else (os.getuid(), os.getgid())
        self.setpriv = shutil.which("setpriv", path=os.defpath + ":/usr/sbin:/sbin") if self.as_root else None
        self._binds: tuple[Bind, ...] | None = None
        self._checked = False
        self._lock = threading.Lock()  # pod workers start containers concurrently

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
        binds += [Bind(str(etc / "passwd"), "/etc/passwd"), Bind(str(etc / "group"), "/etc/group")]
        binds.append(Bind(str(self.bin_dir), str(self.bin_dir)))
        return tuple(binds)

    # -- the command -------------------------------------------------------------------------
    def command(
        self, argv: list[str], *, cwd: str, home: Path, hostname: str, mounts: tuple[tuple[str, str, bool], ...],
        env_fd: int,
    ) -> list[str]:
        """The host argv that runs ``argv`` sandboxed. ``mounts``: (host path, container path, writable);
        ``env_fd``: the descriptor of ``execenv.env_fd(env)``, to be inherited by bwrap (``pass_fds``), which
        must itself be started with ``execenv.LAUNCHER_ENV``."""
        self.check()
        binds = [*self.base_binds(), Bind(str(home), str(home), True)]
        binds += [Bind(h, c, w) for h, c, w in mounts]
        return self._bwrap_argv(binds, argv, cwd=cwd, hostname=hostname, env_fd=env_fd)

    def _bwrap_argv(self, binds: list[Bind], argv: list[str], *, cwd: str, hostname: str, env_fd: int) -> list[str]:
        assert self.bwrap
        has = bwrap_options(self.bwrap)
        cmd = [self.bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        if self.as_root:
            # No user namespace: real uid 0 does the mounts, then setpriv (hidden in a root-only
            # directory) drops to WORKLOAD_UID with no capabilities and no_new_privs.
            cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
        else:
            cmd += ["--unshare-user"] + (["--disable-userns"] if "--disable-userns" in has else [])
        cmd += ["--hostname", hostname, "--proc", "/proc", "--dev", "/dev"]
        for top in _TOP_LEVEL:
            if os.path.islink("/" + top):
                cmd += ["--symlink", os.readlink("/" + top), "/" + top]
        cmd += ["--perms", "1777"] + (["--size", str(TMP_SIZE)] if "--size" in has else []) + ["--tmpfs", "/tmp"]
        made = {"/", "/tmp", "/proc", "/dev"} | {"/" + t for t in _TOP_LEVEL if os.path.islink("/" + t)}
        if self.as_root:
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
        if self.as_root:
            cmd += [f"{SETPRIV_DIR}/setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
            cmd += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        # The last step, as the workload user: the container's environment from env_fd, then exec argv.
        return cmd + [sys.executable, "-I", "-S", EXECENV, str(env_fd), "--", *argv]

    # -- checks and preparation --------------------------------------------------------------
    def check(self) -> None:
        """Raise SandboxUnavailable unless a sandboxed interpreter can import the kit (tried once)."""
        if self._checked:
            return
        binds = self.base_binds()
        key = (self.bwrap, self.uid, self.setpriv, sys.executable, tuple(sorted(self.executables.items())))
        with self._lock:
            if not self._checked:
                if key not in _PROBED:
                    self._probe(binds)
                    _PROBED.add(key)
                self._checked = True

    def warm(self) -> None:
        """Compute the binds and probe now (a kubelet does it at start, off its first pod's path)."""
        try:
            self.check()
        except SandboxUnavailable as exc:  # said again, as the refusal, when a container starts
            log.warning("%s: every container will be refused (mockgpu up and the labs check this first: "
                        "mockgpu.control.kubelet.sandboxprobe)", exc)

    def _probe(self, binds: tuple[Bind, ...]) -> None:
        if not self.bwrap:
            raise SandboxUnavailable(f"workload sandbox unavailable: bwrap not found on PATH; {INSTALL_HINT}")
        if self.as_root and not self.setpriv:
            raise SandboxUnavailable("workload sandbox unavailable: setpriv not found (Debian: util-linux)")
        argv = [sys.executable, "-c", "import mockgpu.gpu.cuda"]
        try:
            fd = execenv.env_fd({"PATH": str(self.bin_dir)})
        except OSError as exc:
            raise SandboxUnavailable(f"workload sandbox unavailable: {exc}") from None
        try:
            probe = self._bwrap_argv(list(binds), argv, cwd="/", hostname="probe", env_fd=fd)
            r = subprocess.run(probe, capture_output=True, text=True, env=execenv.LAUNCHER_ENV, pass_fds=(fd,),
                               timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"workload sandbox unavailable: {exc}") from None
        finally:
            os.close(fd)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
            raise SandboxUnavailable(f"workload sandbox unavailable: {last}")

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
