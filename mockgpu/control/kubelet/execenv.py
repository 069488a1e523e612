"""The last step of a container's start: give the workload the pod's environment, after the privilege drop.

A pod's ``env`` is untrusted input (``LD_PRELOAD``, ``LD_AUDIT``, ``GCONV_PATH``, ``PYTHONPATH``,
``BASH_ENV``, ...). The processes that build the sandbox run with more privilege than the workload:
``bwrap`` as root (or, in the non-root mode, as the kubelet's own user outside the sandbox) and, in the
root mode, ``setpriv`` as root inside it. So none of them may see it: the runtime starts ``bwrap`` with
the fixed ``LAUNCHER_ENV``, writes the container's environment to an anonymous file (a memfd, never on a
command line, where ``ps`` would show it to every local user) and passes only its descriptor down. This
script runs as the sandbox's last step, already as the workload user (uid 65532, no capabilities,
``no_new_privs``; or the user namespace's unprivileged user), reads that environment, closes the
descriptor and execs the workload with exactly it -- as upstream's runtime hands the container's env
to the container's process only (runc's ``execve`` of the init process), not to the shim that builds it.

Run as ``python -I -S execenv.py FD -- ARGV...``: ``-I -S`` make the interpreter ignore every
``PYTHON*`` variable and site-packages (it needs only ``os``, ``_signal`` and ``sys``). ``PWD``, which
bwrap sets after ``--chdir``, is kept (the workload saw it before too). Signals Python ignores at start
(SIGPIPE, SIGXFSZ) are reset to their defaults so the workload inherits what it would from bwrap.
"""

from __future__ import annotations

import _signal  # the C module behind ``signal``: the same calls without importing enum (~10 ms per container start)
import os
import sys

LAUNCHER_ENV: dict[str, str] = {}  # the whole environment of bwrap and setpriv: nothing from the pod or host
MAX_ENV_BYTES = 8 << 20  # more than Linux's ARG_MAX for argv + envp together: execve would refuse it anyway


class BadEnvironment(ValueError):
    """A name or value execve cannot carry (NUL, ``=`` in a name, an empty name)."""


def pack(env: dict[str, str]) -> bytes:
    """``env`` as NUL-separated ``NAME=VALUE`` pairs (what ``/proc/<pid>/environ`` holds)."""
    out = []
    for k, v in env.items():
        if not k or "=" in k or "\0" in k or "\0" in v:
            raise BadEnvironment(f"invalid environment variable {k!r}: names need no '=' or NUL, values no NUL")
        out.append(f"{k}={v}".encode("utf-8", "surrogateescape"))
    return b"\0".join(out)


def env_fd(env: dict[str, str]) -> int:
    """An anonymous file holding ``pack(env)``, positioned at its start (close-on-exec: pass it explicitly)."""
    fd = os.memfd_create("mockgpu-container-env", os.MFD_CLOEXEC)
    try:
        data = pack(env)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def unpack(data: bytes) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in data.split(b"\0"):
        if item:
            k, _, v = item.partition(b"=")
            env[k.decode("utf-8", "surrogateescape")] = v.decode("utf-8", "surrogateescape")
    return env


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("execenv: usage: execenv.py FD -- ARGV...", file=sys.stderr)
        return 1
    fd, cmd = int(argv[0]), argv[2:]
    chunks, size = [], 0
    while chunk := os.read(fd, 1 << 16):
        size += len(chunk)
        if size > MAX_ENV_BYTES:
            print("execenv: container environment too large", file=sys.stderr)
            return 1
        chunks.append(chunk)
    os.close(fd)
    env = unpack(b"".join(chunks))
    if "PWD" in os.environ:
        env["PWD"] = os.environ["PWD"]
    # a container starts with every signal at its default and none blocked, whatever the kubelet inherited
    # (Python ignores SIGPIPE and SIGXFSZ; a kubelet started under nohup ignores SIGHUP)
    for sig in range(1, _signal.NSIG):
        if sig not in (_signal.SIGKILL, _signal.SIGSTOP):
            try:
                _signal.signal(sig, _signal.SIG_DFL)
            except (OSError, ValueError):  # the real-time signals glibc keeps for itself
                pass
    _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
    try:
        os.execve(cmd[0], cmd, env)
    except OSError as exc:
        print(f"execenv: execve {cmd[0]}: {exc.strerror}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
