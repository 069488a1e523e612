"""The process runtime: allowlist, argv/env/mount handling, exit codes, stop, logs, cleanup."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from mockgpu.control.kubelet.allowlist import CommandAllowlist, CommandRefused
from mockgpu.control.kubelet.containerlogs import parse_log
from mockgpu.control.kubelet.runtime import (
    ContainerSpec,
    Mount,
    ProcessRuntime,
    combine_argv,
    rewrite_path,
)


@pytest.fixture
def rt(tmp_path: Path):
    runtime = ProcessRuntime(tmp_path / "rt")
    yield runtime
    runtime.stop_all(grace=0)
    assert runtime.running() == []


def spec(name: str = "c", *command: str, **kw) -> ContainerSpec:
    return ContainerSpec(pod_uid="uid-1", pod_name="p", namespace="ns", name=name, command=tuple(command), **kw)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose, and so is one reaped since the kill.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(
    "argv",
    [["rm", "-rf", "/"], ["/usr/bin/curl", "x"], ["python", "-c", "print(1)"], ["python3", "evil.py"], []],
    ids=["rm", "abs-curl", "python-c", "python-script", "empty"],
)
def test_allowlist_refuses(rt: ProcessRuntime, argv: list[str]) -> None:
    st = rt.start(spec("c", *argv))
    assert (st.state, st.reason, st.exit_code) == ("terminated", "StartError", 128)
    assert "failed to start container process" in st.message
    if argv and argv[0] != "python" and argv[0] != "python3":
        assert "allowlist" in st.message and "mockgpu-workload" in st.message


@pytest.mark.parametrize(
    "argv", [["echo", "hi"], ["/bin/sh", "-c", "true"], ["python", "-m", "mockgpu.cli", "--help"]], ids=str
)
def test_allowlist_accepts(argv: list[str]) -> None:
    CommandAllowlist().check(argv)


def test_allowlist_is_configurable() -> None:
    al = CommandAllowlist(names=("echo",))
    al.check(["echo"])
    with pytest.raises(CommandRefused, match="allowlist"):
        al.check(["sleep", "1"])


def test_shell_path_holds_only_allowlisted_commands(rt: ProcessRuntime) -> None:
    st = rt.start(spec("c", "sh", "-c", "echo before; ls /; echo rc=$?"))
    st = rt.wait("uid-1", "c", timeout=10)
    out = rt.logs("uid-1", "c")
    assert "before" in out and "rc=127" in out, out
    assert st.exit_code == 0


@pytest.mark.parametrize(
    "script, code, reason",
    [("exit 0", 0, "Completed"), ("exit 3", 3, "Error"), ("kill -9 $$", 137, "Error"), ("kill -15 $$", 143, "Error")],
    ids=["zero", "three", "sigkill", "sigterm"],
)
def test_exit_codes(rt: ProcessRuntime, script: str, code: int, reason: str) -> None:
    rt.start(spec("c", "sh", "-c", script))
    st = rt.wait("uid-1", "c", timeout=10)
    assert (st.state, st.exit_code, st.reason) == ("terminated", code, reason)
    assert st.k8s_state()["terminated"]["exitCode"] == code
    if code > 128:
        assert st.signal == code - 128


def test_argv_env_and_mounts(rt: ProcessRuntime, tmp_path: Path) -> None:
    host = tmp_path / "driver"
    host.mkdir()
    (host / "state").write_text("ledger\n")
    s = spec(
        "c",
        "sh",
        "-c",
        'echo "$A $B $MOCKGPU_DRIVER_DIR $HOSTNAME"; cat "$MOCKGPU_DRIVER_DIR/state"; pwd',
        env={"A": "pod", "B": "pod-b", "MOCKGPU_DRIVER_DIR": "/run/mockgpu/driver"},
        device_envs={"A": "device", "NVIDIA_VISIBLE_DEVICES": "GPU-1"},
        mounts=(Mount("/run/mockgpu/driver", str(host)),),
        working_dir="/run/mockgpu/driver",
    )
    rt.start(s)
    st = rt.wait("uid-1", "c", timeout=10)
    out = rt.logs("uid-1", "c").splitlines()
    # The mount is a real bind mount: the container sees its container path, inside `sh -c` too.
    assert out == ["pod pod-b /run/mockgpu/driver p", "ledger", "/run/mockgpu/driver"], out
    assert st.env["NVIDIA_VISIBLE_DEVICES"] == "GPU-1"
    rt.start(spec("d", "cat", "/run/mockgpu/driver/state", mounts=(Mount("/run/mockgpu/driver", str(host)),)))
    assert rt.wait("uid-1", "d", timeout=10).exit_code == 0
    assert rt.logs("uid-1", "d") == "ledger\n"


@pytest.mark.parametrize(
    "command, args, entry, cmd, want",
    [
        ((), (), ("ep",), ("c1",), ["ep", "c1"]),
        ((), ("a",), ("ep",), ("c1",), ["ep", "a"]),
        (("x",), (), ("ep",), ("c1",), ["x"]),
        (("x",), ("a",), ("ep",), ("c1",), ["x", "a"]),
    ],
    ids=["image-defaults", "args-replace-cmd", "command-drops-cmd", "command-and-args"],
)
def test_combine_argv(command, args, entry, cmd, want) -> None:
    assert combine_argv(command, args, entry, cmd) == want


def test_rewrite_path_longest_prefix_and_lists() -> None:
    mounts = (Mount("/run/a", "/h/a"), Mount("/run/a/b", "/h/b"))
    assert rewrite_path("/run/a/b/c:/run/a/x:/usr/lib", mounts) == "/h/b/c:/h/a/x:/usr/lib"
    assert rewrite_path("/run/ab", mounts) == "/run/ab"
    assert rewrite_path("plain", mounts) == "plain"


def test_sigterm_then_sigkill_after_grace(rt: ProcessRuntime) -> None:
    # The shell ignores SIGTERM, and so does its child; only SIGKILL ends them.
    rt.start(spec("c", "sh", "-c", "trap '' TERM; sleep 30 & echo started; wait"))
    deadline = time.monotonic() + 10
    while "started" not in rt.logs("uid-1", "c") and time.monotonic() < deadline:
        time.sleep(0.05)
    children = _group_members(rt.status("uid-1", "c").pid)
    assert len(children) >= 2
    t0 = time.monotonic()
    st = rt.stop("uid-1", "c", grace=0.5)
    elapsed = time.monotonic() - t0
    assert st.exit_code == 137 and st.signal == signal.SIGKILL
    assert elapsed >= 0.5
    assert not any(alive(p) for p in children)


def test_sigterm_is_enough_for_a_cooperative_process(rt: ProcessRuntime) -> None:
    rt.start(spec("c", "sleep", "30"))
    st = rt.stop("uid-1", "c", grace=10)
    assert st.exit_code == 143 and st.signal == signal.SIGTERM


def test_orphans_die_with_the_main_process(rt: ProcessRuntime) -> None:
    # The background child dies with the main process (the runtime kills its group; its PID namespace ends).
    st = rt.start(spec("c", "sh", "-c", "sleep 30 & echo started; sleep 1; exit 0"))
    deadline = time.monotonic() + 10
    while "started" not in rt.logs("uid-1", "c") and time.monotonic() < deadline:
        time.sleep(0.05)
    sleepers = [p for p in _descendants(st.pid) if _cmdline(p) == ["sleep", "30"]]
    assert len(sleepers) == 1, sleepers
    rt.wait("uid-1", "c", timeout=10)
    deadline = time.monotonic() + 5
    while any(alive(p) for p in sleepers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in sleepers)


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode().split("\0")[:-1]
    except OSError:
        return []


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parents[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out += kids
        todo += kids
    return out


def test_logs_are_cri_lines_with_both_streams(rt: ProcessRuntime) -> None:
    rt.start(spec("c", "sh", "-c", "echo out; echo err >&2; printf partial"))
    st = rt.wait("uid-1", "c", timeout=10)
    lines = list(parse_log(st.log_path))
    assert {(ln.stream, ln.content, ln.full) for ln in lines} == {
        ("stdout", "out", True),
        ("stderr", "err", True),
        ("stdout", "partial", False),
    }
    raw = st.log_path.read_text().splitlines()[0]
    assert raw.split(" ")[0].endswith("Z") and raw.split(" ")[1] in ("stdout", "stderr")
    with_ts = rt.logs("uid-1", "c", timestamps=True).splitlines()
    assert all(line.split(" ", 1)[0].endswith("Z") for line in with_ts)
    assert rt.logs("uid-1", "c", tail=1) in ("out\n", "err\n", "partial")
    assert st.log_path.name == "0.log" and st.log_path.parent.name == "c"


def test_stop_all_leaves_nothing(tmp_path: Path) -> None:
    runtime = ProcessRuntime(tmp_path / "rt")
    pids = []
    for i in range(3):
        st = runtime.start(ContainerSpec("u", "p", "ns", f"c{i}", command=("sleep", "30")))
        pids.append(st.pid)
    assert len(runtime.running()) == 3
    runtime.stop_all(grace=1)
    assert runtime.running() == []
    assert not any(alive(p) for p in pids)


def test_second_start_of_a_running_container_is_refused(rt: ProcessRuntime) -> None:
    rt.start(spec("c", "sleep", "30"))
    with pytest.raises(RuntimeError, match="already running"):
        rt.start(spec("c", "sleep", "30"))


def _group_members(pgid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().split(")")[-1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                out.append(int(d))
    return out


def test_allowlisted_but_missing_executable(tmp_path: Path) -> None:
    runtime = ProcessRuntime(tmp_path / "rt", allowlist=CommandAllowlist(names=("no-such-tool-here",)))
    st = runtime.start(spec("c", "no-such-tool-here"))
    assert (st.reason, st.exit_code) == ("StartError", 128)
    assert (
        st.message == 'failed to start container process: exec: "no-such-tool-here": executable file not found in $PATH'
    )
    assert not (runtime.bin_dir / "no-such-tool-here").exists()


def test_missing_working_dir_is_a_start_error(rt: ProcessRuntime) -> None:
    st = rt.start(spec("c", "true", working_dir="/no/such/dir"))
    assert (st.state, st.reason) == ("terminated", "StartError")
    assert "/no/such/dir" in st.message


def test_previous_logs_after_a_restart(rt: ProcessRuntime) -> None:
    rt.start(spec("c", "echo", "first"))
    rt.wait("uid-1", "c", timeout=10)
    with pytest.raises(LookupError, match="previous terminated container"):
        rt.logs("uid-1", "c", previous=True)
    rt.start(spec("c", "echo", "second", restart_count=1))
    st = rt.wait("uid-1", "c", timeout=10)
    assert st.restart_count == 1 and st.log_path.name == "1.log"
    assert rt.logs("uid-1", "c") == "second\n"
    assert rt.logs("uid-1", "c", previous=True) == "first\n"


def test_container_env_identity_and_minimal_path(rt: ProcessRuntime) -> None:
    rt.start(spec("c", "env"))
    rt.wait("uid-1", "c", timeout=10)
    env = dict(line.split("=", 1) for line in rt.logs("uid-1", "c").splitlines())
    assert env["PATH"] == str(rt.bin_dir)
    assert (env["MOCKGPU_POD_NAMESPACE"], env["MOCKGPU_POD_NAME"], env["MOCKGPU_CONTAINER_NAME"]) == ("ns", "p", "c")
    assert "HOME" in env and env["HOSTNAME"] == "p"


def test_a_log_per_run_in_the_log_dir_and_only_the_previous_run_kept(tmp_path: Path) -> None:
    logs = tmp_path / "logs" / "ns_p_uid-1" / "c"
    runtime = ProcessRuntime(
        tmp_path / "rt", log_dir=lambda s: tmp_path / "logs" / f"{s.namespace}_{s.pod_name}_{s.pod_uid}" / s.name,
    )
    for run, word in enumerate(("one", "two", "three")):
        runtime.start(spec("c", "echo", word, restart_count=run))
        runtime.wait("uid-1", "c", timeout=10)
    assert sorted(p.name for p in logs.iterdir()) == ["1.log", "2.log"]  # the kubelet keeps one dead container
    assert runtime.logs("uid-1", "c") == "three\n" and runtime.logs("uid-1", "c", previous=True) == "two\n"
    assert (logs.stat().st_mode & 0o777, (logs / "2.log").stat().st_mode & 0o777) == (0o700, 0o600)
