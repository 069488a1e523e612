"""The workload sandbox: escape attempts, one row each, against the real process runtime, in each layer.

Every row runs a container that tries to reach past the allowlist or out of its directory and
asserts that the attempt failed with a clear message in its log (or a StartError in its status),
and that nothing outside its directory was read (no canary, no line of the host's real files in
the log) or written (no file appeared outside). Needs bubblewrap, as the runtime does; without it
every container is refused (see test_refused_without_bwrap) and these rows fail rather than skip.

The table runs in every sandbox layer that can run here (``layered_rt``): ``bwrap`` (namespaces, the default),
``bwrap-userns`` and ``uid`` (a root kubelet's fallbacks: they need an interpreter uid 65532 can run), ``landlock``
(the fallback of an ordinary user's kubelet; run as root it is Landlock alone, without the uid drop a root cluster
always adds) and ``namespaces-refused`` (the real bwrap under a seccomp filter that refuses namespaces as Docker's
default profile does: the probe falls back by itself). In the layers without a fresh root file system the same
attempts fail with other messages (Landlock answers "Permission denied" where bwrap's root has "No such file"):
``FALLBACK_EXPECT`` gives them; a row a layer cannot promise on this kernel is a strict xfail with its reason.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from mockgpu.config.clusterspec import parse_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.control.kubelet import confine
from mockgpu.control.kubelet.allowlist import DEFAULT_ALLOWLIST, CommandAllowlist
from mockgpu.control.kubelet.publisher import GpuStatePublisher
from mockgpu.control.kubelet.runtime import ContainerSpec, Mount, ProcessRuntime
from mockgpu.control.kubelet.sandbox import BWRAP, BWRAP_USERNS, LANDLOCK, LAYERS, UID, WORKLOAD_UID
from mockgpu.deviceplugin.command import _health_source
from mockgpu.gpu.driver import CONTAINER_DRIVER_DIR, Driver, write_node_driver
from mockgpu.gpu.faults import CONTAINER_FAULTS_DIR, XIDS, FaultsUnreadable, faults_dir_for

CANARY = "CANARY-7f3a9c"  # what the host's secret files hold
PY = str(Path(sys.executable).parent / "python")  # the interpreter mockgpu-workload's shebang names
AS_ROOT = os.geteuid() == 0
ETC_FILE = f"/etc/mockgpu-sandbox-test-{uuid.uuid4().hex}"  # must never appear on the host


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Path]:
    """Host-side things a workload must not reach: a secret file, a directory to write into, a
    cluster token next to the runtime's root (as in $MOCKGPU_HOME/<cluster>/)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text(CANARY + "\n")
    (tmp_path / "cluster").mkdir(exist_ok=True)
    (tmp_path / "cluster" / "token").write_text(CANARY + "-token\n")
    return {"outside": outside, "secret": outside / "secret", "token": tmp_path / "cluster" / "token"}


@pytest.fixture
def rt(tmp_path: Path):
    runtime = ProcessRuntime(tmp_path / "cluster" / "runtime")
    yield runtime
    runtime.stop_all(grace=0)


SECCOMP_EXEC = Path(__file__).parent / "seccomp_exec.py"
NAMESPACES_REFUSED = "namespaces-refused"


def barrier(path: str) -> str | None:
    """The first directory on the way to ``path`` that users other than its owner cannot pass, if any."""
    real = Path(os.path.realpath(path))
    for d in reversed(real.parents):
        if not d.stat().st_mode & stat.S_IXOTH:
            return str(d)
    return None


def landlock_abi() -> int | None:
    try:
        return confine.abi_version()
    except confine.LandlockUnavailable:
        return None


def layer_absent(layer: str) -> str | None:
    """Why ``layer`` cannot run here (a skip reason), or None. Never for bwrap: without it the rows fail."""
    if layer in (BWRAP_USERNS, UID):
        if not AS_ROOT:
            return f"layer {layer} is a root kubelet's fallback; this test runs as uid {os.getuid()}"
        wall = barrier(sys.executable)
        if wall:
            return (f"layer {layer} runs the interpreter as uid {WORKLOAD_UID}, which cannot pass {wall} (mode "
                    f"{stat.S_IMODE(os.stat(wall).st_mode):04o}) on the way to {os.path.realpath(sys.executable)}: "
                    f"run the tests with an interpreter every user can run (as the python images have)")
    if layer in (LANDLOCK, NAMESPACES_REFUSED) and landlock_abi() is None:
        return "this kernel offers no Landlock"
    if layer == NAMESPACES_REFUSED and platform.machine() != "x86_64":
        return "seccomp_exec.py's filter names x86_64 syscall numbers"
    return None


def seccomp_bwrap(tmp: Path) -> str:
    """A bwrap that runs the real one under a filter refusing namespaces (as Docker's default seccomp profile)."""
    real = shutil.which("bwrap")
    assert real, "bubblewrap is not installed (scripts/bootstrap installs it as root)"
    wrapper = tmp / "bwrap"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {SECCOMP_EXEC} {real} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


@pytest.fixture(params=[*LAYERS, NAMESPACES_REFUSED])
def layer(request: pytest.FixtureRequest) -> str:
    """A sandbox layer forced on the runtime, or NAMESPACES_REFUSED (every layer, namespaces refused)."""
    if (reason := layer_absent(request.param)) is not None:
        pytest.skip(reason)
    return request.param


def layered_runtime(layer: str, tmp_path: Path, **kwargs) -> ProcessRuntime:
    """A runtime in ``layer``; for NAMESPACES_REFUSED, with bwrap under the seccomp filter and the probe choosing."""
    root = tmp_path / "cluster" / "runtime"
    if layer != NAMESPACES_REFUSED:
        runtime = ProcessRuntime(root, layers=(layer,), **kwargs)
        runtime.sandbox.check()
        return runtime
    # a root kubelet falls back to uid 65532 (bwrap-userns is refused by the same filter); where uid 65532 cannot
    # run this interpreter, to Landlock alone, which only tests choose for root
    everything = not AS_ROOT or barrier(sys.executable) is None
    wrapper_dir = tmp_path / "seccomp"
    wrapper_dir.mkdir()
    wrapper_dir.chmod(0o755)
    runtime = ProcessRuntime(root, bwrap=seccomp_bwrap(wrapper_dir), layers=LAYERS if everything else (BWRAP, LANDLOCK),
                             **kwargs)
    runtime.sandbox.check()
    assert runtime.sandbox.layer == (UID if AS_ROOT and everything else LANDLOCK), runtime.sandbox.layer
    assert "namespace" in runtime.sandbox.namespaces_refused, runtime.sandbox.namespaces_refused
    return runtime


def discard(runtime: ProcessRuntime) -> None:
    runtime.stop_all(grace=0)
    if runtime.sandbox.relocated is not None:
        shutil.rmtree(runtime.sandbox.relocated, ignore_errors=True)


@pytest.fixture
def layered_rt(layer: str, tmp_path: Path):
    runtime = layered_runtime(layer, tmp_path)
    yield runtime
    discard(runtime)


def spec(uid: str, *command: str, **kw) -> ContainerSpec:
    return ContainerSpec(pod_uid=uid, pod_name="esc", namespace="default", name="c", command=command, **kw)


def host_lines(path: str) -> list[str]:
    """Non-empty lines of a real host file, at least 8 characters long (too long to appear by chance)."""
    try:
        return [ln for ln in Path(path).read_text().splitlines() if len(ln) >= 8]
    except OSError:
        return []


# id, argv ({py}, {secret}, {outside}, {token}, {other_home}, {other_log} are filled in), exit code
# (None: any non-zero), a regex the log must match ("StartError: ..." : the status message instead).
ESCAPES = [
    ("abs-usr-bin-id", ["sh", "-c", "/usr/bin/id"], 127, r"/usr/bin/id: not found"),
    ("abs-bin-cat-shadow", ["sh", "-c", "/bin/cat /etc/shadow"], 1, r"cat: /etc/shadow: No such file or directory"),
    ("argv-abs-cat-shadow", ["/bin/cat", "/etc/shadow"], 1, r"cat: /etc/shadow: No such file or directory"),
    ("exec", ["sh", "-c", "exec /usr/bin/id"], 127, r"exec: /usr/bin/id: not found"),
    ("env-abs", ["env", "/usr/bin/id"], 127, r"env: '/usr/bin/id': No such file or directory"),
    ("env-in-shell", ["sh", "-c", "env -i /bin/ls /"], 127, r"env: '/bin/ls': No such file or directory"),
    ("command-p", ["sh", "-c", "command -p id"], 127, r"id: not found"),
    ("bash-exec-a", ["bash", "-c", "exec -a sh /usr/bin/id"], 127, r"/usr/bin/id: No such file or directory"),
    ("issue-13", ["sh", "-c", "read l < /etc/shadow; /usr/bin/id"], None, r"cannot open /etc/shadow: No such file"),
    ("redirect-shadow", ["sh", "-c", "read l < /etc/shadow"], 2, r"cannot open /etc/shadow: No such file"),
    ("redirect-secret", ["sh", "-c", "cat < {secret}"], 2, r"cannot open {secret}: No such file"),
    ("dollar0", ["sh", "-c", '"$0"', "/usr/bin/id"], 127, r"/usr/bin/id: not found"),
    ("dollar0-exec", ["sh", "-c", 'exec "$0" -c id', "/bin/dash"], 127, r"/bin/dash: not found"),
    ("symlink-in-workdir", ["sh", "-c", "cat escape; cat etc/shadow"], 1, r"cat: etc/shadow: No such file"),
    ("python-c-argv", ["python3", "-c", "print(open('/etc/shadow').read())"], 128, r"StartError: .*-m mockgpu"),
    ("python-c-path", ["sh", "-c", "python3 -c 'print(1)'"], 126, r"only 'python -m mockgpu\.\.\.' may run"),
    (
        "python-c-abs-interpreter",
        ["sh", "-c", "{py} -c \"print(open('/etc/shadow').read())\""],
        1,
        r"FileNotFoundError: .*'/etc/shadow'",
    ),
    (
        "python-subprocess",
        ["sh", "-c", "{py} -c \"import subprocess; subprocess.run(['/usr/bin/id'])\""],
        1,
        r"FileNotFoundError: .*'/usr/bin/id'",
    ),
    ("cluster-token", ["sh", "-c", "cat {token}"], 1, r"cat: {token}: No such file"),
    ("other-pod-home", ["sh", "-c", "cat {other_home}/secret"], 1, r"cat: {other_home}/secret: No such file"),
    ("other-pod-log", ["sh", "-c", "cat {other_log}"], 1, r"cat: {other_log}: No such file"),
    ("proc-1-root", ["sh", "-c", "cat /proc/1/root/etc/shadow"], 1, r"cat: /proc/1/root/etc/shadow: "),
    ("write-outside", ["sh", "-c", "echo x > {outside}/pwned"], 2, r"cannot create {outside}/pwned: Directory"),
    ("write-etc", ["sh", "-c", "echo x > {etc_file}"], 2, r"cannot create {etc_file}: (Permission denied|Read-only)"),
    (
        "network-to-host",
        ["sh", "-c", "{py} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""],
        1,
        r"ConnectionRefusedError",  # 127.0.0.1 inside is the sandbox's own loopback
    ),
    # the kubelet's own process (this test's): its environment, and signals
    ("kubelet-environ", ["cat", "/proc/{kubelet}/environ"], 1, r"cat: /proc/{kubelet}/environ: No such file"),
    ("signal-kubelet", ["sh", "-c", "kill -0 {kubelet}"], 1, r"kill: No such process"),
    (
        "abstract-unix-socket",
        ["sh", "-c", "{py} -c \"import socket; socket.socket(socket.AF_UNIX).connect(b'\\0{abstract}')\""],
        1,
        r"ConnectionRefusedError",  # abstract sockets belong to the network namespace
    ),
    # a unix socket of the kubelet's (kubelet.sock, a device plugin's): in its state dir, by its path
    (
        "kubelet-unix-socket",
        ["sh", "-c", "{py} -c \"import socket; socket.socket(socket.AF_UNIX).connect('{kubelet_sock}')\""],
        1,
        r"FileNotFoundError",
    ),
]
# In the layers without a fresh root (uid, landlock): the host's files exist, Landlock refuses them.
DENIED = "Permission denied"
FALLBACK_EXPECT: dict[str, tuple[int | None, str]] = {
    "abs-usr-bin-id": (126, rf"/usr/bin/id: {DENIED}"),
    "abs-bin-cat-shadow": (1, rf"cat: /etc/shadow: {DENIED}"),
    "argv-abs-cat-shadow": (1, rf"cat: /etc/shadow: {DENIED}"),
    "exec": (126, rf"exec: /usr/bin/id: {DENIED}"),
    "env-abs": (126, rf"env: '/usr/bin/id': {DENIED}"),
    "env-in-shell": (126, rf"env: '/bin/ls': {DENIED}"),
    "command-p": (126, rf"id: {DENIED}"),
    "bash-exec-a": (126, rf"/usr/bin/id: {DENIED}"),
    "issue-13": (None, rf"cannot open /etc/shadow: {DENIED}"),
    "redirect-shadow": (2, rf"cannot open /etc/shadow: {DENIED}"),
    "redirect-secret": (2, rf"cannot open {{secret}}: {DENIED}"),
    "dollar0": (126, rf"/usr/bin/id: {DENIED}"),
    "dollar0-exec": (127, r"id: not found"),  # /bin/dash is the allowlisted sh itself; id is not on PATH
    "symlink-in-workdir": (1, rf"cat: etc/shadow: {DENIED}"),
    "python-c-abs-interpreter": (1, r"PermissionError: .*'/etc/shadow'"),
    "python-subprocess": (1, r"PermissionError: .*'/usr/bin/id'"),
    "cluster-token": (1, rf"cat: {{token}}: {DENIED}"),
    "other-pod-home": (1, rf"cat: {{other_home}}/secret: {DENIED}"),
    "other-pod-log": (1, rf"cat: {{other_log}}: {DENIED}"),
    "proc-1-root": (1, rf"cat: /proc/1/root/etc/shadow: {DENIED}"),
    "write-outside": (2, rf"cannot create {{outside}}/pwned: {DENIED}"),
    "write-etc": (2, rf"cannot create {{etc_file}}: {DENIED}"),
    "network-to-host": (1, r"PermissionError"),  # Landlock ABI >= 4: no TCP connect at all
    "kubelet-environ": (1, rf"cat: /proc/{{kubelet}}/environ: {DENIED}"),
    "signal-kubelet": (1, r"kill: Operation not permitted"),  # Landlock ABI >= 6 scopes signals (and another uid)
    "abstract-unix-socket": (1, r"PermissionError"),  # Landlock ABI >= 6 scopes abstract unix sockets
    "kubelet-unix-socket": (1, r"PermissionError"),  # uid 65532: the kubelet's 0700 directories (not Landlock)
}
# Rows a fallback layer cannot promise below a Landlock ABI (the row, the ABI it needs, the reason).
NEEDS_ABI = {
    "network-to-host": (4, "Landlock refuses TCP connect only from ABI 4 (Linux 6.7)"),
    "abstract-unix-socket": (6, "Landlock scopes abstract unix sockets only from ABI 6 (Linux 6.12)"),
    "signal-kubelet": (6, "Landlock scopes signals only from ABI 6 (Linux 6.12); the same uid may signal"),
}
# In bubblewrap's user-namespace mode the directories of the fresh root belong to the namespace's user.
USERNS_EXPECT: dict[str, tuple[int | None, str]] = {
    "write-etc": (0, r"^$"),  # lands in the sandbox's own tmpfs /etc; the host's is untouched (checked below)
}
# Rows the landlock layer cannot promise when a test forces it on a root kubelet (a root cluster never runs it: it
# drops to uid 65532 first): the workload is root with every capability, and Landlock lets CAP_SYS_PTRACE through.
# Rows the landlock layer cannot promise on any Landlock ABI up to 7 (this kernel's): same uid as the kubelet.
LANDLOCK_GAPS = {
    "kubelet-unix-socket": "Landlock (ABI <= 7) does not mediate connect() to an existing pathname unix socket, and "
                           "the workload has the kubelet's uid: it reaches kubelet.sock and the plugins' sockets by "
                           "their paths",
}
ROOT_LANDLOCK_GAPS = {
    "kubelet-environ": "Landlock's ptrace rule yields to CAP_SYS_PTRACE, which this test-only root workload holds",
}


@pytest.mark.parametrize("row, argv, code, pattern", ESCAPES, ids=[row[0] for row in ESCAPES])
def test_escape_fails(layered_rt: ProcessRuntime, host: dict[str, Path], request: pytest.FixtureRequest, row: str,
                      argv: list[str], code: int | None, pattern: str):
    rt = layered_rt
    if row in USERNS_EXPECT and (rt.sandbox.layer == BWRAP_USERNS or (rt.sandbox.layer == BWRAP and not AS_ROOT)):
        code, pattern = USERNS_EXPECT[row]
    if not rt.sandbox.fresh_root:
        code, pattern = FALLBACK_EXPECT.get(row, (code, pattern))
        abi = rt.sandbox.landlock_abi or 0
        if row in NEEDS_ABI and abi < NEEDS_ABI[row][0]:
            request.applymarker(pytest.mark.xfail(strict=True, reason=f"layer {rt.sandbox.layer}, Landlock ABI "
                                                  f"{abi}: {NEEDS_ABI[row][1]}"))
        if rt.sandbox.layer == LANDLOCK and AS_ROOT and row in ROOT_LANDLOCK_GAPS:
            request.applymarker(pytest.mark.xfail(strict=True, reason=ROOT_LANDLOCK_GAPS[row]))
        if rt.sandbox.layer == LANDLOCK and row in LANDLOCK_GAPS:
            request.applymarker(pytest.mark.xfail(strict=True, reason=LANDLOCK_GAPS[row]))
    # Another pod on the node, with a secret in its home and a log.
    other = spec("uid-other", "sh", "-c", f"echo {CANARY}-other > $HOME/secret; echo {CANARY}-other-log")
    rt.start(other)
    assert rt.wait("uid-other", "c", timeout=30).exit_code == 0, rt.logs("uid-other", "c")
    assert (rt.scratch_dir(other) / "secret").read_text() == f"{CANARY}-other\n"
    listener = socket.create_server(("127.0.0.1", 0))
    abstract = f"mockgpu-test-{uuid.uuid4().hex}"
    unix_listener = socket.socket(socket.AF_UNIX)
    unix_listener.bind(b"\0" + abstract.encode())
    unix_listener.listen()
    kubelet_sock = rt.root.parent / "kubelet.sock"  # beside the runtime, as the node's device-plugin dir is
    sock_listener = socket.socket(socket.AF_UNIX)
    sock_listener.bind(str(kubelet_sock))
    sock_listener.listen()
    me = spec("uid-me", "x")
    home = rt.scratch_dir(me)
    # Symlinks left in the working dir (by a previous run, or planted) point at host files.
    home.mkdir(parents=True)
    (home / "escape").symlink_to(host["secret"])
    (home / "etc").symlink_to("/etc")
    fill = {
        "py": PY,
        "secret": str(host["secret"]),
        "outside": str(host["outside"]),
        "token": str(host["token"]),
        "other_home": str(rt.scratch_dir(other)),
        "other_log": str(rt.status("uid-other", "c").log_path),
        "port": str(listener.getsockname()[1]),
        "etc_file": ETC_FILE,
        "kubelet": str(os.getpid()),
        "abstract": abstract,
        "kubelet_sock": str(kubelet_sock),
    }
    argv = [a.format(**fill) for a in argv]
    pattern = pattern.format(**{k: re.escape(v) for k, v in fill.items()})
    before = {p: p.lstat() for p in host["outside"].parent.rglob("*") if not p.is_relative_to(rt.root)}
    try:
        st = rt.start(spec("uid-me", *argv))
        if st.state == "running":
            st = rt.wait("uid-me", "c", timeout=30)
    finally:
        listener.close()
        unix_listener.close()
        sock_listener.close()
    log = rt.logs("uid-me", "c")
    if pattern.startswith("StartError: "):
        assert st.reason == "StartError", (st, log)
        assert re.search(pattern.removeprefix("StartError: "), st.message), st.message
    else:
        assert re.search(pattern, log), log
    assert st.exit_code == code if code is not None else st.exit_code != 0, (st.exit_code, log)
    # Nothing read from outside: no canary, no line of the host's real secret files.
    assert CANARY not in log
    for line in host_lines("/etc/shadow") + host_lines("/etc/gshadow"):
        assert line not in log
    # Nothing written outside: the test's tree (but the runtime's root) is as it was, /etc untouched.
    after = {p: p.lstat() for p in host["outside"].parent.rglob("*") if not p.is_relative_to(rt.root)}
    assert after.keys() == before.keys()
    assert all((a.st_mtime_ns, a.st_uid, a.st_mode) == (b.st_mtime_ns, b.st_uid, b.st_mode) for a, b in
               ((after[p], before[p]) for p in after))
    assert not Path(ETC_FILE).exists()
    # The planted symlinks were not followed by the runtime (no chown of their targets).
    assert host["secret"].stat().st_uid == os.getuid()


def test_host_passwd_is_not_the_one_inside(layered_rt: ProcessRuntime) -> None:
    rt = layered_rt
    rt.start(spec("u", "sh", "-c", "cat < /etc/passwd"))
    st = rt.wait("u", "c", timeout=30)
    log = rt.logs("u", "c")
    if not rt.sandbox.fresh_root:  # the host's /etc/passwd exists, Landlock refuses it
        assert st.exit_code == 2 and re.search(r"cannot open /etc/passwd: Permission denied", log), log
        assert not [ln for ln in host_lines("/etc/passwd") if ln in log], log
        return
    assert st.exit_code == 0, log
    assert log.splitlines()[1].startswith(f"mockgpu:x:{WORKLOAD_UID if AS_ROOT else os.getuid()}:"), log
    inside = {"root:x:0:0:root:/root:/sbin/nologin"}
    leaked = [ln for ln in host_lines("/etc/passwd") if ln in log and ln not in inside]
    assert leaked == [] and len(log.splitlines()) == 2, log


def test_id_is_not_root_and_holds_no_privilege(layer: str, tmp_path: Path) -> None:
    script = "id; while read -r k v; do case $k in Uid:|Gid:|Groups:|CapEff:|CapPrm:|CapInh:|CapBnd:|CapAmb:|" \
             "NoNewPrivs:) echo $k $v;; esac; done < /proc/self/status"
    rt = layered_runtime(layer, tmp_path, allowlist=CommandAllowlist(names=(*DEFAULT_ALLOWLIST, "id")))
    try:
        rt.start(spec("u", "sh", "-c", script))
        st = rt.wait("u", "c", timeout=30)
        log = rt.logs("u", "c")
    finally:
        discard(rt)
    assert st.exit_code == 0, log
    status = dict((ln.split(" ", 1) + [""])[:2] for ln in log.splitlines()[1:])
    if rt.sandbox.layer == LANDLOCK and AS_ROOT:
        # The landlock layer keeps the kubelet's uid; forced on a root kubelet (tests only: a root cluster always
        # drops to uid 65532) the workload is root, capabilities and all, under no_new_privs and Landlock.
        assert log.splitlines()[0] == "uid=0 gid=0 groups=0", log
        assert status["NoNewPrivs:"] == "1", log
        return
    uid = WORKLOAD_UID if AS_ROOT else os.getuid()
    assert uid != 0
    names = rt.sandbox.fresh_root  # only bwrap's root has the two-line /etc/passwd; Landlock hides the host's
    want = f"uid={uid}(mockgpu) gid={uid}(mockgpu) groups={uid}(mockgpu)" if names else \
        f"uid={uid} gid={uid} groups={uid}"
    assert log.splitlines()[0] == want, log
    assert status["Uid:"].split() == [str(uid)] * 4, log
    assert status["CapEff:"] == status["CapPrm:"] == status["CapInh:"] == "0000000000000000", log
    assert status["NoNewPrivs:"] == "1", log
    if AS_ROOT:
        assert status["CapBnd:"] == status["CapAmb:"] == "0000000000000000", log
        assert status["Groups:"].split() in ([], [str(uid)]), log


def test_workload_sees_only_the_allowlisted_programs(layered_rt: ProcessRuntime) -> None:
    rt = layered_rt
    # Globbing is a shell builtin: it lists what exists without running anything.
    venv_bin = Path(sys.executable).parent
    rt.start(spec("u", "sh", "-c", f"echo /bin/* /sbin/* /usr/sbin/* /usr/local/bin/* {venv_bin}/*; "
                                   f"echo $(cd $(dirname $(command -v sh)) && echo *)"))
    st = rt.wait("u", "c", timeout=30)
    log = rt.logs("u", "c")
    assert st.exit_code == 0, log
    listed, path_entries = log.splitlines()[0], log.splitlines()[-1]
    names = {os.path.basename(w) for w in listed.split() if "*" not in w}
    if not rt.sandbox.fresh_root:
        # the host's directories are there but Landlock refuses to list them (what runs is the escape table's);
        # the names below the kit's package's parent directory stay listable (importlib lists sys.path entries),
        # which may hold the venv's bin (an editable install)
        system = {os.path.basename(w) for w in listed.split() if "*" not in w and not w.startswith(str(venv_bin))}
        assert system == set(), system
        assert set(path_entries.split()) == {"*"} or set(path_entries.split()) <= set(DEFAULT_ALLOWLIST) | {
            "mockgpu-workload", "nvidia-smi"}, path_entries
        return
    assert names <= set(DEFAULT_ALLOWLIST) | {"mockgpu-workload", "nvidia-smi"}, names
    assert {"sh", "sleep", "env", "mockgpu-workload", "nvidia-smi"} <= names, names


def test_private_tmp_and_home_only(layered_rt: ProcessRuntime) -> None:
    rt = layered_rt
    tmp_file = f"/tmp/mockgpu-sandbox-test-{uuid.uuid4().hex}"
    if not rt.sandbox.fresh_root:
        # no private /tmp without a mount namespace: the host's is refused, TMPDIR is the container's own
        s = spec("u", "sh", "-c", f"echo a > {tmp_file}; echo a > $TMPDIR/f && echo b > $HOME/g && "
                                  "cat $TMPDIR/f $HOME/g && pwd && echo $TMPDIR")
        rt.start(s)
        st = rt.wait("u", "c", timeout=30)
        log = rt.logs("u", "c")
        assert st.exit_code == 0, log
        lines = log.splitlines()
        assert re.search(rf"cannot create {re.escape(tmp_file)}: Permission denied", lines[0]), log
        assert lines[1:] == ["a", "b", str(rt.scratch_dir(s)), str(rt.tmp_dir(s))], log
        assert stat.S_IMODE(rt.tmp_dir(s).stat().st_mode) == 0o700
        assert not Path(tmp_file).exists()
        return
    s = spec("u", "sh", "-c", f"echo a > {tmp_file} && echo b > $HOME/g && cat {tmp_file} $HOME/g && pwd")
    rt.start(s)
    st = rt.wait("u", "c", timeout=30)
    log = rt.logs("u", "c")
    assert st.exit_code == 0, log
    assert log.splitlines() == ["a", "b", str(rt.scratch_dir(s))]
    assert (rt.scratch_dir(s) / "g").read_text() == "b\n"
    assert not Path(tmp_file).exists()  # the container's /tmp is its own


def test_environment_is_only_the_pods(layered_rt: ProcessRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = layered_rt
    monkeypatch.setenv("MOCKGPU_HOST_SECRET", CANARY)
    monkeypatch.setenv("PYTHONPATH", "/host/only")
    driver = rt.sandbox.workload_dir(rt.root) / "driver-mount"  # where the kubelet would keep its driver dir
    driver.mkdir()
    s = spec("u", "env", env={"A": "1", "WHERE": f"{CONTAINER_DRIVER_DIR}/x"},
             device_envs={"NVIDIA_VISIBLE_DEVICES": "GPU-1", "MOCKGPU_DRIVER_DIR": CONTAINER_DRIVER_DIR},
             mounts=(Mount(CONTAINER_DRIVER_DIR, str(driver)),))
    rt.start(s)
    rt.wait("u", "c", timeout=30)
    env = dict(line.split("=", 1) for line in rt.logs("u", "c").splitlines())
    want = {
        "PATH": str(rt.bin_dir),
        "HOME": str(rt.scratch_dir(s)),
        "HOSTNAME": "esc",
        "PWD": str(rt.scratch_dir(s)),
        "MOCKGPU_POD_NAMESPACE": "default",
        "MOCKGPU_POD_NAME": "esc",
        "MOCKGPU_CONTAINER_NAME": "c",
        "NVIDIA_VISIBLE_DEVICES": "GPU-1",
        "MOCKGPU_DRIVER_DIR": CONTAINER_DRIVER_DIR,
        "A": "1",
        "WHERE": f"{CONTAINER_DRIVER_DIR}/x",
    }
    if not rt.sandbox.fresh_root:  # the mount is at its host path: values naming it follow; TMPDIR is private
        want |= {"MOCKGPU_DRIVER_DIR": str(driver), "WHERE": f"{driver}/x", "TMPDIR": str(rt.tmp_dir(s))}
    assert env == want


@pytest.mark.parametrize("bwrap", [None, "/bin/false"], ids=["missing", "broken"])
def test_refused_without_a_working_sandbox(tmp_path: Path, bwrap: str | None) -> None:
    runtime = ProcessRuntime(tmp_path / "rt", bwrap=bwrap)
    s = spec("u", "sh", "-c", "echo ran > $HOME/ran")
    st = runtime.start(s)
    assert (st.state, st.reason, st.exit_code) == ("terminated", "StartError", 128)
    assert st.message.startswith("failed to start container process: workload sandbox unavailable: ")
    assert "\n" not in st.message
    if bwrap is None:
        assert "bwrap not found" in st.message and "apt-get install bubblewrap" in st.message
    assert not (runtime.scratch_dir(s) / "ran").exists()


# -- the pod's environment never reaches a process with privilege ------------------------------------
# bwrap runs as root (or, non-root, as the kubelet's user outside the sandbox) and setpriv as root inside
# it: a pod's env given to them runs the pod's code with their privilege (LD_PRELOAD, LD_AUDIT, GCONV_PATH
# for glibc; PYTHON* for a Python launcher; BASH_ENV/ENV for a shell one). Each row: one hostile name.
MARK = "HOSTILE-5e1d"
HOSTILE_ENV = [
    ("LD_PRELOAD", f"/run/mockgpu/driver/{MARK}.so"),
    ("LD_LIBRARY_PATH", f"/run/mockgpu/driver/{MARK}"),
    ("LD_AUDIT", f"/run/mockgpu/driver/{MARK}-audit.so"),
    ("LD_DEBUG", f"{MARK}"),
    ("GCONV_PATH", f"/run/mockgpu/driver/{MARK}"),
    ("GLIBC_TUNABLES", f"glibc.{MARK}=1"),
    ("LOCPATH", f"/run/mockgpu/driver/{MARK}"),
    ("NLSPATH", f"/run/mockgpu/driver/{MARK}/%N"),
    ("HOSTALIASES", f"/run/mockgpu/driver/{MARK}"),
    ("TMPDIR", f"/run/mockgpu/driver/{MARK}"),
    ("PYTHONPATH", f"/run/mockgpu/driver/{MARK}"),
    ("PYTHONSTARTUP", f"/run/mockgpu/driver/{MARK}.py"),
    ("PYTHONHOME", f"/run/mockgpu/driver/{MARK}"),
    ("PYTHONINSPECT", f"{MARK}"),
    ("BASH_ENV", f"/run/mockgpu/driver/{MARK}.sh"),
    ("ENV", f"/run/mockgpu/driver/{MARK}.sh"),
    ("PATH", f"/run/mockgpu/driver/{MARK}"),
]
# Wrappers that record the environment and argv each launcher process was given, then exec the real one.
# (cat by its absolute path: PATH is one of the hostile names; a wrapper that cannot record fails the start.)
BWRAP_WRAPPER = """#!/bin/sh
{cat} /proc/$$/environ > {rec}/bwrap-env.$$ || exit 99
printf '%s\\n' "$@" > {rec}/bwrap-argv.$$
exec {bwrap} "$@"
"""
SETPRIV_WRAPPER = """#!/bin/sh
{cat} /proc/$$/environ > ./.setpriv-env || exit 99
exec {setpriv} "$@"
"""


def environ(path: Path) -> dict[str, str]:
    return dict(item.split("=", 1) for item in path.read_text().split("\0") if item)


@pytest.fixture(scope="module")
def launcher_rt(tmp_path_factory: pytest.TempPathFactory):
    """A runtime whose bwrap (and, as root, setpriv) is a wrapper recording what it was started with."""
    tmp = tmp_path_factory.mktemp("launcher")
    rec = tmp / "rec"
    rec.mkdir()
    bwrap = tmp / "bwrap"
    bwrap.write_text(BWRAP_WRAPPER.format(rec=rec, bwrap=shutil.which("bwrap"), cat=shutil.which("cat")))
    bwrap.chmod(0o755)
    runtime = ProcessRuntime(tmp / "rt", bwrap=str(bwrap))
    if AS_ROOT:
        real = runtime.sandbox.setpriv
        wrapper = tmp / "setpriv"
        wrapper.write_text(SETPRIV_WRAPPER.format(setpriv=real, cat=shutil.which("cat")))
        wrapper.chmod(0o755)
        runtime.sandbox.setpriv = str(wrapper)
        runtime.sandbox.executables = {**runtime.sandbox.executables, "real-setpriv": real}  # visible to the wrapper
    yield runtime, rec
    runtime.stop_all(grace=0)


@pytest.mark.parametrize("name, value", HOSTILE_ENV, ids=[row[0] for row in HOSTILE_ENV])
def test_pod_env_never_reaches_the_launcher(launcher_rt, name: str, value: str) -> None:
    rt, rec = launcher_rt
    uid = f"env-{name.lower()}"
    s = ContainerSpec(pod_uid=uid, pod_name="esc", namespace="default", name="c", command=("env",),
                      env={"A": "1", name: value})
    st = rt.start(s)
    assert st.state == "running", st
    st = rt.wait(uid, "c", timeout=30)
    log = rt.logs(uid, "c")
    assert st.exit_code == 0, log
    # The workload gets its env as before: the pod's value, later than the defaults.
    assert f"{name}={value}" in log.splitlines() and "A=1" in log.splitlines(), log
    # bwrap: neither in its environment nor on its command line.
    bwrap_env = environ(rec / f"bwrap-env.{st.pid}")
    assert name not in bwrap_env and "A" not in bwrap_env, bwrap_env
    assert MARK not in (rec / f"bwrap-env.{st.pid}").read_text()
    assert MARK not in (rec / f"bwrap-argv.{st.pid}").read_text()
    if AS_ROOT:  # setpriv, root inside the sandbox until it drops to the workload user
        setpriv_env = environ(rt.scratch_dir(s) / ".setpriv-env")
        assert name not in setpriv_env and "A" not in setpriv_env, setpriv_env
        assert MARK not in (rt.scratch_dir(s) / ".setpriv-env").read_text()


@pytest.mark.parametrize("name, value", HOSTILE_ENV, ids=[row[0] for row in HOSTILE_ENV])
def test_pod_env_never_reaches_setpriv_in_the_uid_layer(tmp_path: Path, name: str, value: str) -> None:
    """The uid layer's one privileged step is setpriv (root, until it drops to 65532): it too gets the fixed
    environment; the pod's reaches only the workload (through confine.py and execenv.py, already uid 65532)."""
    if (reason := layer_absent(UID)) is not None:
        pytest.skip(reason)
    rt = layered_runtime(UID, tmp_path)
    try:
        rec = rt.sandbox.relocated / "rec"  # reachable by root; the workload cannot write it (root's, 0755)
        rec.mkdir()
        wrapper = rec / "setpriv"
        wrapper.write_text(f"#!/bin/sh\n{shutil.which('cat')} /proc/$$/environ > {rec}/setpriv-env.$$ || exit 99\n"
                           f"exec {rt.sandbox.setpriv} \"$@\"\n")
        wrapper.chmod(0o755)
        rt.sandbox.setpriv = str(wrapper)
        s = ContainerSpec(pod_uid="u", pod_name="esc", namespace="default", name="c", command=("env",),
                          env={"A": "1", name: value})
        st = rt.start(s)
        st = rt.wait("u", "c", timeout=30)
        log = rt.logs("u", "c")
        assert st.exit_code == 0, log
        assert f"{name}={value}" in log.splitlines() and "A=1" in log.splitlines(), log
        recorded = rec / f"setpriv-env.{st.pid}"
        assert recorded.read_bytes() == b"", recorded.read_bytes()  # an empty environment
    finally:
        discard(rt)


def test_the_last_step_leaves_no_trace(rt: ProcessRuntime) -> None:
    """The step that hands the env over closes its descriptor and restores the signals Python ignores
    (a guard, not a repro: the workload's process state is what bwrap gave it before)."""
    script = 'echo /proc/$$/fd/*; while read -r k v; do case $k in SigIgn:|SigBlk:) echo $k $v;; esac; done ' \
             '< /proc/self/status'
    rt.start(spec("u", "sh", "-c", script))
    st = rt.wait("u", "c", timeout=30)
    lines = rt.logs("u", "c").splitlines()
    assert st.exit_code == 0, lines
    # 0-2, and the directory the glob itself reads: no environment file left open
    assert [p.rsplit("/", 1)[1] for p in lines[0].split()] == ["0", "1", "2", "3"], lines
    assert lines[1:] == ["SigBlk: 0000000000000000", "SigIgn: 0000000000000000"], lines


PRELOAD_SO = r"""
#include <stdio.h>
#include <unistd.h>
#include <fcntl.h>
__attribute__((constructor)) static void preloaded(void) {
    char exe[256] = {0};
    readlink("/proc/self/exe", exe, sizeof exe - 1);
    dprintf(2, "PRELOADED uid=%d exe=%s\n", (int)geteuid(), exe);
    if (geteuid() == 0) { int fd = open(MARKER, O_WRONLY | O_CREAT, 0644); if (fd >= 0) close(fd); }
}
"""


def test_ld_preload_written_by_the_pod_never_runs_with_privilege(rt: ProcessRuntime, tmp_path: Path) -> None:
    """The issue's repro: the pod writes a library into its node's driver dir, names it in LD_PRELOAD and
    exits; on the restart the launcher must not load it (as root it would own the host)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed: cannot build the LD_PRELOAD library of this repro")
    marker = tmp_path / "ran-as-root"
    src, so = tmp_path / "p.c", tmp_path / "p.so"
    src.write_text(PRELOAD_SO)
    subprocess.run([gcc, "-shared", "-fPIC", "-Os", "-s", f'-DMARKER="{marker}"', "-Wl,-z,max-page-size=4096",
                    "-Wl,-z,noseparate-code", "-o", str(so), str(src)], check=True, capture_output=True)
    driver = tmp_path / "driver"  # the node's driver dir: the device plugin mounts it read-write
    driver.mkdir()
    escaped = "".join(f"\\{b:03o}" for b in so.read_bytes())
    lib = "/run/mockgpu/driver/p.so"
    script = f"if [ -e {lib} ]; then echo restarted; exit 0; fi; printf '{escaped}' > {lib}; exit 1"
    # Named at the host path (bwrap runs on the host) and at the container path (setpriv runs inside).
    preload = f"{driver}/p.so {lib}"
    s = ContainerSpec(pod_uid="uid-pre", pod_name="esc", namespace="default", name="c", command=("sh", "-c", script),
                      env={"LD_PRELOAD": preload}, mounts=(Mount(CONTAINER_DRIVER_DIR, str(driver)),))
    rt.start(s)
    first = rt.wait("uid-pre", "c", timeout=30)
    assert first.exit_code == 1, rt.logs("uid-pre", "c")
    assert (driver / "p.so").read_bytes() == so.read_bytes()  # the pod wrote it
    rt.remove("uid-pre", "c")
    rt.start(replace(s, restart_count=1))  # restartPolicy OnFailure
    second = rt.wait("uid-pre", "c", timeout=30)
    log = rt.logs("uid-pre", "c")
    assert second.exit_code == 0 and "restarted" in log, log
    assert "PRELOADED uid=0 " not in log, log
    assert not marker.exists(), "the pod's library ran as root on the host"
    # ...but the workload itself still gets it (the env reaches the workload, as the pod asked).
    uid = WORKLOAD_UID if AS_ROOT else os.getuid()
    assert f"PRELOADED uid={uid} exe=" in log, log


# -- root-side code and the pod-writable driver dir -------------------------------------------------------
# A container given a GPU has its node's driver dir read-write (at /run/mockgpu/driver); with code of its own
# (a library it preloads into its own shell, as above) it can leave anything there: symlinks, FIFOs, forged
# names inside the files. Root reads and writes the same dir: the kubelet's GPU-state publisher, the device
# plugin's health check, the kubelet / device plugin / DRA driver rewriting the layout, an operator's
# `mockgpu` command. Each row: what the pod left (planted here directly, as it could), the root step that
# runs next, and the checks: the step finishes (no stall, no crash) and nothing outside the driver dir was
# created, removed, written or chowned.
DRIVER_SPEC = {
    "apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "esc"},
    "spec": {"nodePools": [{"name": "n", "gpu": {"model": "H100-SXM5-80GB", "count": 1}}]},
}
LEASE = "pid_4026531836_-4242.lock"  # a well-formed lease name, as the ledger writes them


def _ledger_path(driver: Path, uuid: str) -> Path:
    return driver / "ledgers" / f"{uuid}.json"


def _add_entry(driver: Path, uuid: str, lease: str) -> None:
    """A ledger entry of another container (another PID namespace) holding memory under ``lease``."""
    path = _ledger_path(driver, uuid)
    data = json.loads(path.read_text())
    data["processes"]["pid:[1]/4242"] = {
        "pid": 4242, "pidns": "pid:[1]", "lease": lease, "start_ticks": None, "namespace": "default",
        "pod": "esc", "container": "c", "name": "sh", "allocations": {"1": 1 << 20}, "used_bytes": 1 << 20,
        "utilization": 0, "since": 0.0}
    path.write_text(json.dumps(data))


def _procs(driver: Path) -> Path:
    (driver / "ledgers" / "procs").mkdir(exist_ok=True)
    return driver / "ledgers" / "procs"


def _swap_for_symlink(path: Path, target: Path) -> None:
    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink(missing_ok=True)
    path.symlink_to(target)


def plant_forged_lease(driver: Path, outside: Path, uuid: str) -> None:
    _procs(driver)
    _add_entry(driver, uuid, os.path.relpath(outside / "victim", driver / "ledgers" / "procs"))


def plant_ledgers_symlink(driver: Path, outside: Path, uuid: str) -> None:
    _swap_for_symlink(driver / "ledgers", outside)


def plant_procs_symlink(driver: Path, outside: Path, uuid: str) -> None:
    _add_entry(driver, uuid, LEASE)
    (outside / LEASE).write_text(CANARY)  # a host file that happens to bear the lease's name
    _swap_for_symlink(_procs(driver), outside)


def plant_lease_symlink(driver: Path, outside: Path, uuid: str) -> None:
    _add_entry(driver, uuid, LEASE)
    (_procs(driver) / LEASE).symlink_to(outside)


def plant_ledger_symlink(driver: Path, outside: Path, uuid: str) -> None:
    _swap_for_symlink(_ledger_path(driver, uuid), outside / "victim")


def plant_lock_symlink(driver: Path, outside: Path, uuid: str) -> None:
    _swap_for_symlink(_ledger_path(driver, uuid).with_suffix(".lock"), outside / "made-by-root")


def plant_ledger_tmp_symlink(driver: Path, outside: Path, uuid: str) -> None:
    # The temporary file a root writer used to put next to the ledger: its name was predictable.
    (driver / "ledgers" / f".{uuid}.json.{os.getpid()}.tmp").symlink_to(outside / "victim")
    _add_entry(driver, uuid, LEASE)  # a dead entry: the reader rewrites the ledger


def plant_inventory_symlink_to_fifo(driver: Path, outside: Path, uuid: str) -> None:
    os.mkfifo(outside / "fifo")
    _swap_for_symlink(driver / "inventory.json", outside / "fifo")


def plant_inventory_tmp_symlink(driver: Path, outside: Path, uuid: str) -> None:
    (driver / "inventory.json").write_text("{}")  # differs from the node's: the writer rewrites it
    (driver / f".inventory.json.{os.getpid()}.tmp").symlink_to(outside / "victim")


def plant_oom_log_fifo_symlink(driver: Path, outside: Path, uuid: str) -> None:
    os.mkfifo(outside / "fifo")
    (driver / "oom.log").symlink_to(outside / "fifo")


def plant_forged_inventory_uuid(driver: Path, outside: Path, uuid: str) -> None:
    inv = driver / "inventory.json"
    forged = os.path.relpath(outside / "pwn", driver / "ledgers")
    inv.write_text(inv.read_text().replace(uuid, forged))


def step_publisher(driver: Path, inv) -> None:
    """The kubelet's GPU-state publisher, one round (as root, in the kubelet)."""
    GpuStatePublisher(None, inv.node, driver).build()


def step_relayout(driver: Path, inv) -> None:
    """The kubelet, device plugin or DRA driver (re)writing the driver dir's layout."""
    write_node_driver(driver, inv)


def step_device_plugin_health(driver: Path, inv) -> None:
    _health_source(driver)()


DRIVER_DIR_ESCAPES = [
    ("forged-lease-path", plant_forged_lease, step_publisher),
    ("ledgers-symlink-publisher", plant_ledgers_symlink, step_publisher),
    ("ledgers-symlink-relayout", plant_ledgers_symlink, step_relayout),
    ("procs-symlink", plant_procs_symlink, step_publisher),
    ("lease-symlink", plant_lease_symlink, step_publisher),
    ("ledger-symlink", plant_ledger_symlink, step_publisher),
    ("ledger-lock-symlink", plant_lock_symlink, step_publisher),
    ("ledger-tmp-symlink", plant_ledger_tmp_symlink, step_publisher),
    ("inventory-symlink-to-fifo", plant_inventory_symlink_to_fifo, step_publisher),
    ("inventory-tmp-symlink", plant_inventory_tmp_symlink, step_relayout),
    ("oom-log-symlink-to-fifo", plant_oom_log_fifo_symlink, step_publisher),
    ("forged-inventory-uuid", plant_forged_inventory_uuid, step_publisher),
]


def tree(top: Path) -> dict[str, tuple]:
    """Every entry under ``top``: kind, owner, mode, size, mtime and (files) content."""
    out = {}
    for root, dirs, files in os.walk(top):
        for name in ["", *dirs, *files]:
            p = Path(root, name)
            st = p.lstat()
            body = p.read_bytes() if stat.S_ISREG(st.st_mode) else b""
            out[str(p)] = (stat.S_IFMT(st.st_mode), st.st_uid, st.st_gid, st.st_mode, st.st_size, st.st_mtime_ns, body)
    return out


@pytest.mark.parametrize("plant, step", [row[1:] for row in DRIVER_DIR_ESCAPES],
                         ids=[row[0] for row in DRIVER_DIR_ESCAPES])
def test_root_never_follows_the_driver_dir(tmp_path: Path, plant, step) -> None:
    inv = node_inventory(parse_spec(DRIVER_SPEC), "n-0")
    driver = tmp_path / "node" / "driver"
    write_node_driver(driver, inv)
    outside = tmp_path / "outside"  # host files next to it (the kubelet's root, /etc, ...)
    outside.mkdir()
    (outside / "victim").write_text(CANARY + "\n")
    plant(driver, outside, inv.gpus[0].uuid)
    before = tree(outside)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            step(driver, inv)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10)
    stalled = t.is_alive()
    if stalled:  # release a reader blocked on a FIFO, so the thread ends
        for fifo in [p for p in outside.iterdir() if p.is_fifo()] + [p for p in driver.iterdir() if p.is_fifo()]:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(10)
    assert not stalled, "the root step blocked on something the pod left"
    assert tree(outside) == before
    assert errors == [], errors


# The pod swaps a directory of its driver dir for a symlink to a host directory and back while the kubelet
# prepares its next container (a restart): whatever the kubelet chowns for the workload user, nothing outside
# may change owner. Two pods at once: one swaps between every step of any directory walk the kubelet makes
# (deterministic), one swaps as fast as it can from another process.
SWAPPER = """
import os, sys
os.chdir(sys.argv[1])
while not os.path.exists("stop"):
    for a, b in (("d", "d.tmp"), ("d.link", "d"), ("d.tmp", "d.link")):
        try:
            os.rename(a, b)
        except OSError:
            pass
"""


def test_prepare_never_chowns_through_a_swapped_symlink(rt: ProcessRuntime, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if not AS_ROOT:
        pytest.skip("the runtime gives mounts to the workload user only when it runs as root")
    driver = tmp_path / "driver"  # a read-write mount of the container (the node's driver dir)
    (driver / "d").mkdir(parents=True)
    outside = tmp_path / "outside"  # a root-owned host directory
    outside.mkdir()
    for d in (driver / "d", outside):
        for name in ("victim", "other"):
            (d / name).write_text(CANARY + "\n")
    (driver / "d.link").symlink_to(outside)

    def exchange() -> None:  # d <-> d.link: the real directory and the symlink trade names
        for a, b in (("d", "d.tmp"), ("d.link", "d"), ("d.tmp", "d.link")):
            os.rename(driver / a, driver / b)

    def between_steps(walk):
        def hooked(*args, **kwargs):
            for step in walk(*args, **kwargs):
                exchange()
                yield step
        return hooked

    def after_listing(scandir):
        def hooked(*args, **kwargs):
            it = scandir(*args, **kwargs)
            exchange()
            return it
        return hooked

    home = rt.scratch_dir(spec("uid-race", "x"))
    home.mkdir(parents=True)
    before = tree(outside)
    for name, hook in (("walk", between_steps), ("fwalk", between_steps), ("scandir", after_listing)):
        with monkeypatch.context() as m:  # one walk primitive at a time (hooking scandir also hooks walk's)
            m.setattr(os, name, hook(getattr(os, name)))
            rt.sandbox.prepare(home, [driver])
        assert tree(outside) == before, name
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(driver)])
    try:
        for _ in range(2000):
            rt.sandbox.prepare(home, [driver])
            if any(p.lstat().st_uid != 0 for p in outside.iterdir()):
                break
    finally:
        (driver / "stop").touch()
        swapper.wait(10)
    assert tree(outside) == before


# What a pod tries against the injected faults (mockgpu.gpu.faults), mounted read-only beside its driver dir as
# the device plugin's Allocate mounts them: create a fault, hide one (rewrite, truncate, remove, rename the file or
# the directory). Each prints WROTE-<name> only if it worked.
FAULT_WRITES = [
    ("create", "echo '[{{\"uuid\": \"{uuid}\", \"xid\": 79}}]' > {faults}/new.json"),
    ("rewrite", "echo '[]' > {faults}/xids.json"),
    ("truncate", ": > {faults}/xids.json"),
    ("python-replace", "{py} -c \"import os; open('{faults}/t', 'w').write('[]'); os.replace('{faults}/t', "
                       "'{faults}/xids.json')\""),
    ("python-unlink", "{py} -c \"import os; os.unlink('{faults}/xids.json')\""),
    ("python-rename-dir", "{py} -c \"import os; os.rename('{faults}', '{faults}.gone')\""),
    ("python-chmod", "{py} -c \"import os; os.chmod('{faults}/xids.json', 0)\""),
]
# The landlock layer's pod has the kubelet's uid, and Landlock (ABI <= 7) does not mediate chmod: it can make the
# file unreadable. Readers then raise FaultsUnreadable (the device plugin keeps the health it had): hidden, never
# healthy.
LANDLOCK_FAULT_GAPS = {"python-chmod"}


def test_a_pod_cannot_create_or_alter_a_fault(layered_rt: ProcessRuntime) -> None:
    """Every layer: the pod reads the node's injected faults (nvidia-smi and fake CUDA need them) and can write its
    driver dir, but no write to the faults reaches them, and the driver's health stays what the operator made it."""
    rt = layered_rt
    two = {**DRIVER_SPEC, "spec": {"nodePools": [{"name": "n", "gpu": {"model": "H100-SXM5-80GB", "count": 2}}]}}
    inv = node_inventory(parse_spec(two), "n-0")
    driver = rt.sandbox.workload_dir(rt.root) / "driver"
    write_node_driver(driver, inv, owner=(rt.sandbox.uid, rt.sandbox.gid) if rt.sandbox.as_root else None)
    faults = faults_dir_for(driver)
    gpu0, gpu1 = inv.gpus[0].uuid, inv.gpus[1].uuid
    Driver(driver).inject_xid(gpu0, 79)
    before = tree(faults)
    inside = (CONTAINER_FAULTS_DIR, CONTAINER_DRIVER_DIR) if rt.sandbox.fresh_root else (str(faults), str(driver))
    steps = [f"cat {inside[0]}/{XIDS}; echo", f"echo ok > {inside[1]}/probe && echo DRIVER-WRITABLE"]
    steps += [f"( {cmd.format(faults=inside[0], uuid=gpu1, py=PY)} ) 2>/dev/null && echo WROTE-{name}"
              for name, cmd in FAULT_WRITES]
    s = spec("uid-faults", "sh", "-c", "; ".join(steps) + "; true",
             mounts=(Mount(CONTAINER_DRIVER_DIR, str(driver)), Mount(CONTAINER_FAULTS_DIR, str(faults), True)))
    st = rt.start(s)
    if st.state == "running":
        st = rt.wait("uid-faults", "c", timeout=30)
    log = rt.logs("uid-faults", "c")
    assert st.exit_code == 0, (st, log)
    assert f'"uuid": "{gpu0}", "xid": 79' in log, log  # readable inside
    assert "DRIVER-WRITABLE" in log, log  # the pod can write where it may: the refusals below are the mount's
    gaps = LANDLOCK_FAULT_GAPS if rt.sandbox.layer == LANDLOCK else set()
    assert {ln.removeprefix("WROTE-") for ln in log.splitlines() if ln.startswith("WROTE-")} == gaps, log
    if gaps and not AS_ROOT:  # (root, the owner here, reads a mode-0 file anyway)
        with pytest.raises(FaultsUnreadable):
            Driver(driver).health()
    if gaps:
        os.chmod(faults / XIDS, before[str(faults / XIDS)][3] & 0o777)
        assert tree(faults) == before | {str(faults): tree(faults)[str(faults)]}  # only the dir's atime-free stat
    else:
        assert tree(faults) == before
    health = Driver(driver).health()
    assert (health[gpu0].healthy, health[gpu1].healthy) == (False, True)
