"""``python seccomp_exec.py [--no-landlock] PROGRAM ARGS...``: exec PROGRAM under a seccomp filter that refuses new
namespaces as Docker's default profile does for a container without CAP_SYS_ADMIN: ``unshare``, ``setns`` and
``clone`` with a ``CLONE_NEW*`` flag fail with EPERM, ``clone3`` with ENOSYS (so callers fall back to ``clone``).
``--no-landlock`` also refuses Landlock's three system calls with EPERM, as a profile that does not list them
answers (Docker's default returns EPERM for what it does not allow). x86_64 only. The real bwrap then fails as it
does in such a container (tests/kubelet/test_sandbox_probe.py, test_kubelet_sandbox.py)."""

import ctypes
import os
import platform
import struct
import sys

if platform.machine() != "x86_64":
    sys.exit("seccomp_exec.py: x86_64 only (its syscall numbers)")
libc = ctypes.CDLL(None, use_errno=True)
AUDIT_ARCH_X86_64 = 0xC000003E
NR_UNSHARE, NR_CLONE, NR_CLONE3, NR_SETNS = 272, 56, 435, 308
NR_LANDLOCK = (444, 445, 446)  # landlock_create_ruleset, landlock_add_rule, landlock_restrict_self
no_landlock = sys.argv[1:2] == ["--no-landlock"]
if no_landlock:
    del sys.argv[1]
NS_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
EPERM, ENOSYS = 1, 38


def stmt(code, k):
    return struct.pack("HBBI", code, 0, 0, k)


def jump(code, k, jt, jf):
    return struct.pack("HBBI", code, jt, jf, k)


LD_W_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JSET|K, BPF_RET|K
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
prog = [
    stmt(LD_W_ABS, 4),  # seccomp_data.arch
    jump(JEQ, AUDIT_ARCH_X86_64, 1, 0), stmt(RET, ALLOW),
    stmt(LD_W_ABS, 0),  # seccomp_data.nr
    *[x for nr in (NR_LANDLOCK if no_landlock else ()) for x in (jump(JEQ, nr, 0, 1), stmt(RET, ERRNO | EPERM))],
    jump(JEQ, NR_UNSHARE, 0, 1), stmt(RET, ERRNO | EPERM),
    jump(JEQ, NR_SETNS, 0, 1), stmt(RET, ERRNO | EPERM),
    jump(JEQ, NR_CLONE3, 0, 1), stmt(RET, ERRNO | ENOSYS),
    jump(JEQ, NR_CLONE, 0, 3), stmt(LD_W_ABS, 16),  # args[0], low word: clone's flags
    jump(JSET, NS_FLAGS, 0, 1), stmt(RET, ERRNO | EPERM),
    stmt(RET, ALLOW),
]
buf = ctypes.create_string_buffer(b"".join(prog))


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


fprog = SockFprog(len(prog), ctypes.cast(buf, ctypes.c_void_p))
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
assert libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
    raise OSError(ctypes.get_errno(), "seccomp")
os.execv(sys.argv[1], sys.argv[1:])
