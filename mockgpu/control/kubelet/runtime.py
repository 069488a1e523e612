"""The process runtime: each container of the embedded backend is a local process.

What a container gets, and how it differs from a real one:
* argv as Kubernetes combines ``command`` and ``args`` (no images: an image's ENTRYPOINT/CMD
  come from the optional ``entrypoints`` table; without one, ``args`` alone are the argv), checked
  against a command allowlist (``allowlist.py``); refusal ends the container with reason
  ``StartError``, exit code 128, as containerd reports an exec failure (the kubelet shows the
  container waiting with ``RunContainerError`` while it retries).
* a sandbox (``sandbox.py``), in the strongest layer this place allows: bubblewrap -- a root file
  system of only the allowlisted executables and what they load, its working directory, a private
  ``/tmp`` and the device plugin's mounts; its own PID/IPC/network/UTS namespaces; an unprivileged
  uid (65532 when the cluster runs as root) -- or, where namespaces are refused, the host's file
  system under Landlock rules (only those programs run, only its own directories are written), an
  unprivileged uid, ``no_new_privs`` and rlimits (``confine.py``); there the mounts are not mounted:
  env values and ``workingDir`` naming a mount's container path are rewritten to its host path, and
  ``TMPDIR`` is a private directory. Where no layer can run the container is refused (StartError,
  one line); it never runs unsandboxed.
* env: a minimal base (PATH = the allowlist's bin dir, HOME = its working dir, HOSTNAME = pod
  name, the pod identity ``MOCKGPU_POD_NAMESPACE``/``_NAME``/``MOCKGPU_CONTAINER_NAME`` that the
  fake driver records), then the device plugin's envs, then the pod's env (later wins, as the
  kubelet appends container env after device envs). Nothing of the host's environment. Only the
  workload gets it: bwrap (and setpriv) start with a fixed environment and the container's travels in
  an anonymous file to the sandbox's last step (``execenv.py``), which runs as the workload user.
* mounts: the device plugin's mounts are real bind mounts at their container paths (read-only
  where asked); DeviceSpecs are recorded only. ``workingDir`` must exist inside the sandbox (its
  home, ``/tmp`` or under a mount).
* its own session and process group, so stopping kills its children; when the main process
  exits every process left in its PID namespace is killed, like a container's.
* stdout/stderr in a CRI log file per run (``containerlogs.py``: ``<log dir>/<restart>.log``, rotated at
  ``log_rotation``'s size; the logs of runs before the previous one are removed); exit code ``128+N`` for signal N with
  reason ``Error``, ``Completed`` for 0 (``OOMKilled`` does not apply: no cgroups).
* graceful stop: SIGTERM to the container's processes, SIGKILL after the grace period.
* a deleted pod's containers are forgotten (``remove_pod``): their records and their scratch homes
  ``<root>/rootfs/<uid>/<container>`` (written by the workload, so removed fd-relative without following
  anything in them, ``saferm``); ``sweep_scratch`` removes those of pods deleted while no kubelet ran.
Every runtime is registered so ``stop_all`` (also at interpreter exit) leaves no process behind.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from mockgpu.control.kubelet import saferm
from mockgpu.control.kubelet.allowlist import CommandAllowlist, CommandRefused
from mockgpu.control.kubelet.container import ContainerSpec, ContainerStatus, Mount, combine_argv, rewrite_path
from mockgpu.control.kubelet.containerlogs import LogRotation, LogWriter, render_logs
from mockgpu.control.kubelet.execenv import LAUNCHER_ENV, BadEnvironment, env_fd
from mockgpu.control.kubelet.sandbox import Sandbox, SandboxUnavailable

log = logging.getLogger(__name__)
START_ERROR_EXIT_CODE = 128
RUN_CONTAINER_ERROR = "RunContainerError"  # waiting reason the kubelet shows after a StartError


class _Container:
    def __init__(self, status: ContainerStatus, proc: subprocess.Popen | None) -> None:
        self.status = status
        self.proc = proc
        self.done = threading.Event()


_RUNTIMES: weakref.WeakSet[ProcessRuntime] = weakref.WeakSet()


class ProcessRuntime:
    """Starts, watches and stops containers as local processes under ``root``."""

    def __init__(
        self,
        root: Path,
        *,
        allowlist: CommandAllowlist | None = None,
        entrypoints: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] | None = None,
        on_exit: Callable[[ContainerStatus], None] | None = None,
        log_dir: Callable[[ContainerSpec], Path] | None = None,
        log_rotation: LogRotation | None = None,
        bwrap: str | None = "auto",
        warm: bool = False,
        layers: tuple[str, ...] | None = None,
    ) -> None:
        self.root = Path(root)
        self.allowlist = allowlist or CommandAllowlist()
        self.entrypoints = entrypoints or {}  # image -> (ENTRYPOINT, CMD)
        self.on_exit = on_exit
        self.log_dir = log_dir or self.pod_log_dir  # where <restart>.log of each container goes
        self.log_rotation = log_rotation or LogRotation()
        bin_dir = self.allowlist.populate_bin_dir(self.root / "bin")
        self.sandbox = Sandbox(self.allowlist.executables(), bin_dir, self.root / "sandbox", bwrap=bwrap,
                               layers=layers)
        if warm:  # build and probe the sandbox in the background, not on the first container's start
            threading.Thread(target=self.sandbox.warm, name="sandbox-warm", daemon=True).start()
        self._lock = threading.Lock()
        self._containers: dict[tuple[str, str], _Container] = {}
        _RUNTIMES.add(self)

    # -- paths -------------------------------------------------------------------------------
    def pod_log_dir(self, spec: ContainerSpec) -> Path:
        return self.root / "pods" / f"{spec.namespace}_{spec.pod_name}_{spec.pod_uid}" / spec.name

    @property
    def bin_dir(self) -> Path:
        """The containers' PATH: one entry per allowlisted command (the sandbox may have moved it)."""
        return self.sandbox.bin_dir

    @property
    def scratch_root(self) -> Path:
        return (self.sandbox.relocated or self.root) / "rootfs"

    def scratch_dir(self, spec: ContainerSpec) -> Path:
        return self.scratch_root / spec.pod_uid / spec.name

    def tmp_dir(self, spec: ContainerSpec) -> Path:
        """The container's private temporary directory in a fallback layer (``TMPDIR``; a container name is a
        DNS label, without dots, so it never meets another container's home)."""
        return self.scratch_root / spec.pod_uid / f"{spec.name}.tmp"

    def container_env(self, spec: ContainerSpec) -> dict[str, str]:
        env = {"PATH": str(self.bin_dir), "HOME": str(self.scratch_dir(spec)), "HOSTNAME": spec.pod_name}
        env |= {
            "MOCKGPU_POD_NAMESPACE": spec.namespace,
            "MOCKGPU_POD_NAME": spec.pod_name,
            "MOCKGPU_CONTAINER_NAME": spec.name,
        }  # who the fake driver says holds GPU memory
        if self.sandbox.fresh_root:
            env |= spec.device_envs
            env |= spec.env
            return env
        # no mount namespace: the mounts are at their host paths, and there is no private /tmp
        env["TMPDIR"] = str(self.tmp_dir(spec))
        env |= {k: rewrite_path(v, spec.mounts) for k, v in spec.device_envs.items()}
        env |= {k: rewrite_path(v, spec.mounts) for k, v in spec.env.items()}
        return env

    def _working_dir(self, spec: ContainerSpec, home: Path) -> str:
        """The container's cwd; CommandRefused unless it exists inside the sandbox."""
        if not spec.working_dir:
            return str(home)
        wd = os.path.normpath(spec.working_dir)
        tmp = "/tmp" if self.sandbox.fresh_root else str(self.tmp_dir(spec))
        inside = [(str(home), str(home)), (tmp, tmp)]
        inside += [(m.container_path.rstrip("/") or "/", m.host_path) for m in spec.mounts]
        for c, h in inside:
            if (wd == c or wd.startswith(c + "/")) and os.path.isdir(host := rewrite_path(wd, (Mount(c, h),))):
                return wd if self.sandbox.fresh_root else host
        raise CommandRefused(f"chdir to cwd ({spec.working_dir!r}) failed: no such directory")

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, spec: ContainerSpec) -> ContainerStatus:
        """Start the container; a refused or failed exec gives a terminated StartError status."""
        with self._lock:
            old = self._containers.get(spec.key)
            if old is not None and not old.done.is_set():
                raise RuntimeError(f"container {spec.name} of pod {spec.pod_uid} is already running")
        try:
            self.sandbox.check()  # the layer decides the paths and env below
        except SandboxUnavailable:
            pass  # refused below, as a StartError
        log_path = self.log_dir(spec) / f"{spec.restart_count}.log"
        remove_old_logs(log_path.parent, spec.restart_count)
        scratch = self.scratch_dir(spec)
        scratch.mkdir(parents=True, exist_ok=True)
        ep, cmd = self.entrypoints.get(spec.image, ((), ()))
        argv = combine_argv(spec.command, spec.args, ep, cmd)
        env = self.container_env(spec)
        now = datetime.now(UTC)
        base = ContainerStatus(
            spec.pod_uid,
            spec.name,
            "running",
            "",
            log_path,
            tuple(argv),
            env,
            started_at=now,
            restart_count=spec.restart_count,
        )
        fds: list[int] = []
        try:
            host_argv = self.allowlist.host_argv(argv)
            cwd = self._working_dir(spec, scratch)
            mounts = tuple((m.host_path, m.container_path, not m.read_only) for m in spec.mounts)
            self.sandbox.prepare(scratch, [Path(h) for h, _, w in mounts if w])
            tmp = None
            if not self.sandbox.fresh_root:
                tmp = self.tmp_dir(spec)
                tmp.mkdir(exist_ok=True)
                self.sandbox.prepare(tmp, [])
            fds.append(env_fd(env))
            sandboxed = self.sandbox.command(host_argv, cwd=cwd, home=scratch, hostname=spec.pod_name, mounts=mounts,
                                             env_fd=fds[0], extra_fds=fds, tmp=tmp)
            proc = subprocess.Popen(
                sandboxed,
                env=LAUNCHER_ENV,  # never the pod's: bwrap and setpriv run with privilege
                pass_fds=tuple(fds),
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except (CommandRefused, SandboxUnavailable, BadEnvironment, OSError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            status = replace(
                base,
                state="terminated",
                finished_at=now,
                exit_code=START_ERROR_EXIT_CODE,
                reason="StartError",
                message=f"failed to start container process: {detail}",
                container_id=f"mockgpu://{spec.pod_uid}-{spec.name}-{spec.restart_count}",
            )
            LogWriter(log_path, self.log_rotation).close()  # an empty log, as containerd leaves one
            c = _Container(status, None)
            c.done.set()
            with self._lock:
                self._containers[spec.key] = c
            if self.on_exit:
                self.on_exit(status)
            return status
        finally:
            for fd in fds:
                os.close(fd)
        writer = LogWriter(log_path, self.log_rotation)
        writer.attach(proc.stdout, "stdout")
        writer.attach(proc.stderr, "stderr")
        status = replace(base, pid=proc.pid, container_id=f"mockgpu://{proc.pid}-{spec.pod_uid}-{spec.name}")
        c = _Container(status, proc)
        with self._lock:
            self._containers[spec.key] = c
        threading.Thread(target=self._reap, args=(c, writer), name=f"reap-{spec.name}", daemon=True).start()
        return status

    def _reap(self, c: _Container, writer: LogWriter) -> None:
        rc = c.proc.wait()
        _killpg(c.proc.pid, signal.SIGKILL)  # the container's other processes end with it
        deadline = time.monotonic() + 5
        while _group(c.proc.pid) and time.monotonic() < deadline:  # ...before it is reported terminated
            time.sleep(0.01)
        writer.close()
        # bwrap exits 128+N when the workload died of signal N (and -N if bwrap itself was killed).
        sig = -rc if rc < 0 else (rc - 128 if 128 < rc < 128 + signal.NSIG else None)
        code = 128 + sig if sig else rc
        c.status = replace(
            c.status,
            state="terminated",
            finished_at=datetime.now(UTC),
            exit_code=code,
            signal=sig,
            reason="Completed" if code == 0 else "Error",
        )
        c.done.set()
        if self.on_exit:
            self.on_exit(c.status)

    def status(self, pod_uid: str, name: str) -> ContainerStatus | None:
        c = self._containers.get((pod_uid, name))
        return c.status if c else None

    def wait(self, pod_uid: str, name: str, timeout: float | None = None) -> ContainerStatus:
        """Block until the container has terminated (TimeoutError after timeout seconds)."""
        c = self._containers[(pod_uid, name)]
        if not c.done.wait(timeout):
            raise TimeoutError(f"container {name} of pod {pod_uid} still running after {timeout}s")
        return c.status

    def stop(self, pod_uid: str, name: str, grace: float = 30.0) -> ContainerStatus | None:
        """SIGTERM the container's process group, SIGKILL it after grace seconds."""
        c = self._containers.get((pod_uid, name))
        if c is None:
            return None
        if c.proc is not None and not c.done.is_set():
            deadline = time.monotonic() + max(grace, 0)
            if grace > 0 and not self.sandbox.fresh_root:
                _killpg(c.proc.pid, signal.SIGTERM)  # no PID namespace: the group leader is the workload itself
            elif grace > 0:
                # Right after start the workload may not exist yet (bwrap still building the
                # sandbox): retry until it gets the signal, as a real kubelet's stop finds pid 1.
                while not _term_workload(c.proc.pid) and not c.done.wait(0.01) and time.monotonic() < deadline:
                    pass
            else:
                _killpg(c.proc.pid, signal.SIGKILL)
            if not c.done.wait(max(deadline - time.monotonic(), 0)):
                _killpg(c.proc.pid, signal.SIGKILL)
                c.done.wait(10)
        return c.status

    def stop_pod(self, pod_uid: str, grace: float = 30.0) -> None:
        """Stop every container of a pod, all at once, each with the same grace period."""
        keys = [k for k in list(self._containers) if k[0] == pod_uid]
        threads = [threading.Thread(target=self.stop, args=(*k, grace)) for k in keys]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def remove(self, pod_uid: str, name: str) -> None:
        """Forget a terminated container (its log file stays)."""
        with self._lock:
            c = self._containers.get((pod_uid, name))
            if c is not None and c.done.is_set():
                del self._containers[(pod_uid, name)]

    def remove_pod(self, pod_uid: str) -> bool:
        """Forget a deleted pod once its containers are stopped: their records (status, argv, env) and their
        scratch homes ``rootfs/<uid>`` (pod-writable: removed without following anything in them, ``saferm``),
        as the kubelet's container GC removes a deleted pod's containers. Nothing is removed while one of its
        containers still runs; whether a scratch dir was removed."""
        with self._lock:
            keys = [k for k in self._containers if k[0] == pod_uid]
            if any(not self._containers[k].done.is_set() for k in keys):
                log.warning("pod %s: containers still running, its scratch dir is kept", pod_uid)
                return False
            for k in keys:
                del self._containers[k]
        return bool(saferm.remove_entries(self.scratch_root, [pod_uid], what="pod scratch dir"))

    def scratch_pod_uids(self) -> list[str]:
        """The pod uids that have a scratch dir (list them before the pods they are checked against)."""
        return saferm.entry_names(self.scratch_root)

    def sweep_scratch(self, uids: list[str], existing: set[str]) -> list[str]:
        """Remove the scratch dirs among ``uids`` of pods not in ``existing`` and without a container
        here; the uids removed."""
        with self._lock:
            keep = existing | {k[0] for k in self._containers}
        return saferm.remove_entries(self.scratch_root, [u for u in uids if u not in keep], what="pod scratch dir")

    def running(self) -> list[ContainerStatus]:
        return [c.status for c in list(self._containers.values()) if not c.done.is_set()]

    def stop_all(self, grace: float = 2.0) -> None:
        for uid in {k[0] for k in list(self._containers)}:
            self.stop_pod(uid, grace)

    def logs(
        self, pod_uid: str, name: str, *, timestamps: bool = False, tail: int | None = None, previous: bool = False
    ) -> str:
        """What ``kubectl logs`` prints for the container's current (or last) run; ``previous``: the run before."""
        st = self.status(pod_uid, name)
        if st is None:
            return ""
        path = st.log_path
        if previous:
            if st.restart_count == 0:
                raise LookupError(f'previous terminated container "{name}" in pod "{pod_uid}" not found')
            path = path.with_name(f"{st.restart_count - 1}.log")
        return render_logs(path, timestamps=timestamps, tail=tail)


def remove_old_logs(log_dir: Path, restart: int) -> None:
    """Keep the logs of the previous run only (``kubectl logs --previous``), as the kubelet's container
    garbage collection keeps one dead container per container (``MaxPerPodContainer``)."""
    try:
        names = os.listdir(log_dir)
    except FileNotFoundError:
        return
    for name in names:
        run = name.split(".", 1)[0]
        if run.isdigit() and int(run) < restart - 1 and name[len(run):].startswith(".log"):
            try:
                os.unlink(log_dir / name)
            except FileNotFoundError:
                pass


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group(pgid: int) -> list[tuple[int, int]]:
    """(pid, ppid) of every live (not zombie) process in the process group."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                state, ppid, pgrp = f.read().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(pgrp) == pgid and state not in ("Z", "X"):
            out.append((int(d), int(ppid)))
    return out


def _term_workload(pgid: int) -> int:
    """SIGTERM the workload's processes: those of the container's group but bwrap (the group
    leader, which would die of it at once and take the rest down before their grace period) and
    bwrap's PID-namespace init (its child). Returns how many were signalled."""
    sent = 0
    for pid, ppid in _group(pgid):
        if pgid not in (pid, ppid):
            try:
                os.kill(pid, signal.SIGTERM)
                sent += 1
            except (ProcessLookupError, PermissionError):
                pass
    return sent


def stop_all_runtimes(grace: float = 1.0) -> None:
    """Stop every container of every runtime in this process (registered with atexit)."""
    for rt in list(_RUNTIMES):
        rt.stop_all(grace)


atexit.register(stop_all_runtimes)


__all__ = [
    "ContainerSpec",
    "ContainerStatus",
    "Mount",
    "ProcessRuntime",
    "combine_argv",
    "rewrite_path",
    "stop_all_runtimes",
]
