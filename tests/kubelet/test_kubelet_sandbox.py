"""The workload sandbox: escape attempts, one row each, against the real process runtime (bwrap).

Every row runs a container that tries to reach past the allowlist or out of its directory and
asserts that the attempt failed with a clear message in its log (or a StartError in its status),
and that nothing outside its directory was read (no canary, no line of the host's real files in
the log) or written (no file appeared outside). Needs bubblewrap, as the runtime does; without it
every container is refused (see test_refused_without_bwrap) and these rows fail rather than skip.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from mockgpu.control.kubelet.allowlist import DEFAULT_ALLOWLIST, CommandAllowlist
from mockgpu.control.kubelet.runtime import ContainerSpec, Mount, ProcessRuntime
from mockgpu.control.kubelet.sandbox import WORKLOAD_UID
from mockgpu.gpu.driver import CONTAINER_DRIVER_DIR

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
]


@pytest.mark.parametrize("argv, code, pattern", [row[1:] for row in ESCAPES], ids=[row[0] for row in ESCAPES])
def test_escape_fails(rt: ProcessRuntime, host: dict[str, Path], argv: list[str], code: int | None, pattern: str):
    # Another pod on the node, with a secret in its home and a log.
    other = spec("uid-other", "sh", "-c", f"echo {CANARY}-other > $HOME/secret; echo {CANARY}-other-log")
    rt.start(other)
    assert rt.wait("uid-other", "c", timeout=30).exit_code == 0, rt.logs("uid-other", "c")
    assert (rt.scratch_dir(other) / "secret").read_text() == f"{CANARY}-other\n"
    listener = socket.create_server(("127.0.0.1", 0))
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


def test_host_passwd_is_not_the_one_inside(rt: ProcessRuntime) -> None:
    rt.start(spec("u", "sh", "-c", "cat < /etc/passwd"))
    st = rt.wait("u", "c", timeout=30)
    log = rt.logs("u", "c")
    assert st.exit_code == 0, log
    assert log.splitlines()[1].startswith(f"mockgpu:x:{WORKLOAD_UID if AS_ROOT else os.getuid()}:"), log
    inside = {"root:x:0:0:root:/root:/sbin/nologin"}
    leaked = [ln for ln in host_lines("/etc/passwd") if ln in log and ln not in inside]
    assert leaked == [] and len(log.splitlines()) == 2, log


def test_id_is_not_root_and_holds_no_privilege(tmp_path: Path) -> None:
    runtime = ProcessRuntime(tmp_path / "rt", allowlist=CommandAllowlist(names=(*DEFAULT_ALLOWLIST, "id")))
    try:
        script = "id; while read -r k v; do case $k in Uid:|Gid:|CapEff:|CapBnd:|NoNewPrivs:) echo $k $v;; esac; " \
                 "done < /proc/self/status"
        runtime.start(spec("u", "sh", "-c", script))
        st = runtime.wait("u", "c", timeout=30)
        log = runtime.logs("u", "c")
    finally:
        runtime.stop_all(grace=0)
    assert st.exit_code == 0, log
    uid = WORKLOAD_UID if AS_ROOT else os.getuid()
    assert uid != 0
    assert log.splitlines()[0] == f"uid={uid}(mockgpu) gid={uid}(mockgpu) groups={uid}(mockgpu)", log
    status = dict(ln.split(" ", 1) for ln in log.splitlines()[1:])
    assert status["Uid:"].split() == [str(uid)] * 4, log
    assert status["CapEff:"] == "0000000000000000" and status["NoNewPrivs:"] == "1", log
    if AS_ROOT:
        assert status["CapBnd:"] == "0000000000000000", log


def test_workload_sees_only_the_allowlisted_programs(rt: ProcessRuntime) -> None:
    # Globbing is a shell builtin: it lists what exists without running anything.
    venv_bin = Path(sys.executable).parent
    rt.start(spec("u", "sh", "-c", f"echo /bin/* /sbin/* /usr/sbin/* /usr/local/bin/* {venv_bin}/*"))
    st = rt.wait("u", "c", timeout=30)
    log = rt.logs("u", "c")
    assert st.exit_code == 0, log
    names = {os.path.basename(w) for w in log.split() if "*" not in w}
    assert names <= set(DEFAULT_ALLOWLIST) | {"mockgpu-workload", "nvidia-smi"}, names
    assert {"sh", "sleep", "env", "mockgpu-workload", "nvidia-smi"} <= names, names


def test_private_tmp_and_home_only(rt: ProcessRuntime) -> None:
    tmp_file = f"/tmp/mockgpu-sandbox-test-{uuid.uuid4().hex}"
    s = spec("u", "sh", "-c", f"echo a > {tmp_file} && echo b > $HOME/g && cat {tmp_file} $HOME/g && pwd")
    rt.start(s)
    st = rt.wait("u", "c", timeout=30)
    log = rt.logs("u", "c")
    assert st.exit_code == 0, log
    assert log.splitlines() == ["a", "b", str(rt.scratch_dir(s))]
    assert (rt.scratch_dir(s) / "g").read_text() == "b\n"
    assert not Path(tmp_file).exists()  # the container's /tmp is its own


def test_environment_is_only_the_pods(rt: ProcessRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCKGPU_HOST_SECRET", CANARY)
    monkeypatch.setenv("PYTHONPATH", "/host/only")
    s = spec("u", "env", env={"A": "1"}, device_envs={"NVIDIA_VISIBLE_DEVICES": "GPU-1"})
    rt.start(s)
    rt.wait("u", "c", timeout=30)
    env = dict(line.split("=", 1) for line in rt.logs("u", "c").splitlines())
    assert env == {
        "PATH": str(rt.bin_dir),
        "HOME": str(rt.scratch_dir(s)),
        "HOSTNAME": "esc",
        "PWD": str(rt.scratch_dir(s)),
        "MOCKGPU_POD_NAMESPACE": "default",
        "MOCKGPU_POD_NAME": "esc",
        "MOCKGPU_CONTAINER_NAME": "c",
        "NVIDIA_VISIBLE_DEVICES": "GPU-1",
        "A": "1",
    }


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
