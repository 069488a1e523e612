"""The fallback layers' confinement step: rlimits, ``no_new_privs`` and Landlock, then exec the next step.

Where bubblewrap cannot build namespaces (a container under Docker's default security options), the workload runs
on the host's file system, as the dedicated uid 65532 (a root kubelet; ``setpriv`` drops to it first) or as the
kubelet's own user. This step runs between that drop and the last step (``execenv.py``), already as the workload
user: it sets the resource limits, ``PR_SET_NO_NEW_PRIVS``, and a Landlock domain that allows only the listed paths
(read, read+execute or read+write), refuses every TCP bind/connect (Landlock ABI >= 4) and scopes signals and
abstract unix sockets to the domain (ABI >= 6); then it execs the next argv with the environment it was given.
A Landlock domain is inherited by every child and can never be lifted, only narrowed.

The kernel interface, by its documentation (linux/Documentation/userspace-api/landlock.rst, and the man pages
landlock(7), landlock_create_ruleset(2), landlock_add_rule(2), landlock_restrict_self(2)): three system calls
(444, 445, 446 on every architecture), ``struct landlock_ruleset_attr`` {handled_access_fs, handled_access_net,
scoped} (its size says which fields the caller knows: 8 bytes ABI 1-3, 16 bytes ABI 4-5, 24 bytes ABI 6+),
``struct landlock_path_beneath_attr`` {allowed_access u64, parent_fd s32} (packed, 12 bytes), rights handled but
not allowed by any rule are denied. As the kernel document's "best effort" example does, only the rights of the
running ABI are handled (REFER from ABI 2, TRUNCATE from 3, IOCTL_DEV from 5). No PyPI binding is used: this runs
as ``python -I -S confine.py`` (no site-packages), and the binding this needs is ~60 lines of ctypes; the
``landlock`` package on PyPI (1.0.0.dev5) handles file-system rules only, without the network or scoping rights.

Run as ``python -I -S confine.py POLICY_FD -- NEXT_ARGV...``; the policy (JSON in an anonymous file) is
``{"paths": [[path, "r"|"rx"|"rw"|"l"], ...], "rlimits": {"NOFILE": n, ...}, "net": bool, "scope": bool,
"require_landlock": bool, "cwd": path}`` (``cwd``: where to chdir once confined; ``PWD`` is set to it). Any
failure ends the step with one line on stderr and exit code 126: nothing runs half-confined.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import stat
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # the same number on every architecture
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4

# LANDLOCK_ACCESS_FS_*
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MAKE_SYM, REFER, TRUNCATE, IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
# LANDLOCK_ACCESS_NET_* (ABI 4) and LANDLOCK_SCOPE_* (ABI 6)
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the only rights a rule on a file may hold
WRITE_RIGHTS = (WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_SYM
                | REFER | TRUNCATE)  # never MAKE_CHAR / MAKE_BLOCK (device nodes)
EXIT_REFUSED = 126

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class LandlockUnavailable(OSError):
    """This kernel (or a seccomp filter in front of it) refuses Landlock."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The Landlock ABI this kernel offers; LandlockUnavailable (with the kernel's errno) when it offers none:
    ENOSYS (built without it, or a seccomp filter answering ENOSYS), EOPNOTSUPP (not enabled at boot: ``lsm=``),
    EPERM (a seccomp filter)."""
    v = _libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    if v < 0:
        err = ctypes.get_errno()
        raise LandlockUnavailable(err, f"Landlock unavailable: {os.strerror(err)}")
    return int(v)


def fs_rights(abi: int) -> int:
    """Every file-system right the given ABI knows (all of them are handled: what no rule allows is denied)."""
    rights = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def access_for(mode: str, is_dir: bool, abi: int) -> int:
    """The rights a policy mode ("r", "rx", "rw"; "l": list a directory's names only) grants on a file or beneath
    a directory, for this ABI."""
    if mode == "l":
        return READ_DIR if is_dir else 0
    rights = READ_FILE | (READ_DIR if is_dir else 0)
    if "x" in mode:
        rights |= EXECUTE
    if "w" in mode:
        rights |= WRITE_RIGHTS | (IOCTL_DEV if not is_dir else 0)
    rights &= fs_rights(abi)
    return rights if is_dir else rights & FILE_RIGHTS


def restrict(paths: list[tuple[str, str]], *, net: bool, scope: bool) -> int:
    """Enter a new Landlock domain allowing only ``paths``; every TCP bind/connect refused if ``net`` (ABI >= 4),
    signals and abstract unix sockets scoped to the domain if ``scope`` (ABI >= 6). Needs ``no_new_privs``.
    Paths that do not exist are skipped. Returns the ABI used."""
    abi = abi_version()
    attr = _RulesetAttr(fs_rights(abi), 0, 0)
    size = 8
    if abi >= 4:
        size = 16
        if net:
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # no rule allows a port: all refused
    if abi >= 6:
        size = 24
        if scope:
            attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    ruleset = _libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        err = ctypes.get_errno()
        raise LandlockUnavailable(err, f"landlock_create_ruleset: {os.strerror(err)}")
    try:
        for path, mode in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                rule = _PathBeneathAttr(access_for(mode, stat.S_ISDIR(os.fstat(fd).st_mode), abi), fd)
                if not rule.allowed_access:
                    continue
                if _libc.syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH),
                                 ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"landlock_add_rule {path}: {os.strerror(err)}")
            finally:
                os.close(fd)
        if _libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"landlock_restrict_self: {os.strerror(err)}")
    finally:
        os.close(ruleset)
    return abi


def no_new_privs() -> None:
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")


def make_nondumpable() -> None:
    """``PR_SET_DUMPABLE 0`` for this process: another process of the same uid can no longer ptrace it nor read
    its ``/proc/<pid>/environ``, ``mem``, ``fd``... (they become root's); reset by execve, so each process of the
    kit that a same-uid workload could reach calls it itself."""
    if _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_DUMPABLE): {os.strerror(err)}")


def set_rlimits(limits: dict[str, int]) -> None:
    """Soft and hard limit of each ``RLIMIT_<name>`` to the value (never above the hard limit already set)."""
    for name, value in limits.items():
        which = getattr(resource, f"RLIMIT_{name}")
        _, hard = resource.getrlimit(which)
        v = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (v, v))


def read_policy(fd: int) -> dict:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks))


def apply(policy: dict) -> None:
    set_rlimits(policy.get("rlimits", {}))
    no_new_privs()
    try:
        restrict([(p, m) for p, m in policy.get("paths", [])], net=bool(policy.get("net")),
                 scope=bool(policy.get("scope")))
    except LandlockUnavailable:
        if policy.get("require_landlock", True):
            raise


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("confine: usage: confine.py POLICY_FD -- ARGV...", file=sys.stderr)
        return EXIT_REFUSED
    try:
        policy = read_policy(int(argv[0]))
        apply(policy)
        if policy.get("cwd"):  # the container's working directory, as bwrap's --chdir (which also sets PWD)
            os.chdir(policy["cwd"])
            os.environ["PWD"] = policy["cwd"]
    except (OSError, ValueError) as exc:
        print(f"confine: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    try:
        os.execv(argv[2], argv[2:])
    except OSError as exc:
        print(f"confine: execv {argv[2]}: {exc.strerror}", file=sys.stderr)
    return EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
