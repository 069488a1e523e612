"""One device's memory ledger: a JSON file guarded by an ``fcntl`` lock, safe across processes
(and across containers that mount the same directory).

Every change is read-modify-write under an exclusive ``flock`` on ``<file>.lock`` and lands with an
atomic rename, so readers never see half a file. Processes are keyed by their PID namespace and PID.

Dead processes' memory is reclaimed on the next locked operation, whoever performs it:

* a process that records itself holds a *lease* for its lifetime: a shared ``flock`` on
  ``<ledger dir>/procs/<pidns>-<pid>.lock`` (the entry names the file, not its path). The kernel
  drops it when the process dies, even on SIGKILL, and flock works across containers that mount
  the same directory, so any process can tell a dead neighbour in another PID namespace by taking
  the lock without blocking;
* an entry recorded on behalf of another process (no lease) is checked through ``/proc`` instead,
  only from its own PID namespace (gone, zombie, or PID reused means dead).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mockgpu.errors import MockgpuError


class OutOfMemory(MockgpuError):
    """An allocation larger than the device's free memory."""

    def __init__(self, uuid: str, requested: int, free: int, total: int) -> None:
        super().__init__(f"out of memory on {uuid}: requested {requested} bytes, {free} free of {total}")
        self.uuid, self.requested, self.free, self.total = uuid, requested, free, total


@dataclass(frozen=True)
class ProcessIdentity:
    """Who a process is: what nvidia-smi's process table and the GPU-state publisher show."""

    pid: int
    namespace: str = ""
    pod: str = ""
    container: str = ""
    name: str = ""  # process name, e.g. "python"


def pid_namespace() -> str:
    """This process's PID namespace (``pid:[4026531836]``); the hostname where /proc has no ns link."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        import socket

        return socket.gethostname()


def _start_ticks(pid: int) -> int | None:
    """Process start time in clock ticks (/proc/<pid>/stat field 22); None if gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2:].split()
    if rest[0] in ("Z", "X"):
        return None
    return int(rest[19])


_LEASES: dict[str, int] = {}  # lease path -> fd holding LOCK_SH, for this process's lifetime
_LEASE_GUARD = threading.Lock()


def _take_lease(path: Path) -> None:
    """Hold a shared flock on ``path`` until this process exits (idempotent)."""
    key = str(path)
    with _LEASE_GUARD:
        if key in _LEASES:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(fd, fcntl.LOCK_SH)
        _LEASES[key] = fd


def _lease_held(path: str) -> bool:
    """Whether a live process still holds the lease at ``path``; a dead one's lease file is removed."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    Path(path).unlink(missing_ok=True)
    return False


def _alive(entry: dict[str, Any], ns: str, procs: Path) -> bool:
    if entry.get("lease"):
        return _lease_held(str(procs / entry["lease"]))  # a name: the dir is mounted at different paths
    if entry["pidns"] != ns:
        return True  # cannot see it from here
    ticks = _start_ticks(entry["pid"])
    return ticks is not None and (entry.get("start_ticks") in (None, ticks))


class Ledger:
    """The memory ledger of one device (a physical GPU, or one MIG instance)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_suffix(".lock")
        self.procs = self.path.parent / "procs"  # process leases

    @staticmethod
    def create(path: Path, uuid: str, total_bytes: int) -> Ledger:
        """Create the ledger file unless it exists (an existing ledger is never clobbered)."""
        led = Ledger(path)
        with led._locked():
            if not led.path.exists():
                led._write({"uuid": uuid, "total_bytes": total_bytes, "next_handle": 1, "processes": {}})
        return led

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _read(self) -> dict[str, Any]:
        return json.loads(self.path.read_text())

    def _write(self, data: dict[str, Any]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.path)

    def _update(self, fn: Callable[[dict[str, Any]], Any]) -> Any:
        with self._locked():
            data = self._read()
            self._reap(data)
            result = fn(data)
            self._write(data)
            return result

    def _reap(self, data: dict[str, Any]) -> None:
        ns = pid_namespace()
        for key in [k for k, e in data["processes"].items() if not _alive(e, ns, self.procs)]:
            del data["processes"][key]

    def _entry(self, data: dict[str, Any], who: ProcessIdentity) -> dict[str, Any]:
        ns = pid_namespace()
        key = f"{ns}/{who.pid}"
        entry = data["processes"].get(key)
        if entry is None:
            lease = None
            if who.pid == os.getpid():
                safe_ns = "".join(c if c.isalnum() else "_" for c in ns)
                lease = f"{safe_ns}-{who.pid}.lock"
                _take_lease(self.procs / lease)
            entry = data["processes"][key] = {
                "pid": who.pid, "pidns": ns, "lease": lease, "start_ticks": _start_ticks(who.pid),
                "namespace": who.namespace,
                "pod": who.pod, "container": who.container, "name": who.name, "allocations": {},
                "used_bytes": 0, "utilization": 0, "since": time.time(),
            }
        return entry

    def register(self, who: ProcessIdentity) -> None:
        """Record that ``who`` uses this device (it shows in nvidia-smi with 0 bytes until it allocates)."""
        self._update(lambda d: self._entry(d, who))

    def allocate(self, who: ProcessIdentity, nbytes: int) -> int:
        """Reserve ``nbytes`` for ``who``; returns a handle. OutOfMemory if it does not fit."""
        if nbytes < 0:
            raise ValueError("nbytes must be >= 0")

        def do(d: dict[str, Any]) -> int:
            used = sum(e["used_bytes"] for e in d["processes"].values())
            free = d["total_bytes"] - used
            if nbytes > free:
                raise OutOfMemory(d["uuid"], nbytes, free, d["total_bytes"])
            e = self._entry(d, who)
            handle = d["next_handle"]
            d["next_handle"] = handle + 1
            e["allocations"][str(handle)] = nbytes
            e["used_bytes"] += nbytes
            return handle

        return self._update(do)

    def free(self, who: ProcessIdentity, handle: int) -> int:
        """Release allocation ``handle`` of ``who``; returns its size (0 if unknown or already freed)."""

        def do(d: dict[str, Any]) -> int:
            e = self._entry(d, who)
            n = e["allocations"].pop(str(handle), 0)
            e["used_bytes"] -= n
            return n

        return self._update(do)

    def release(self, who: ProcessIdentity) -> None:
        """Drop ``who`` and all its memory (what the driver does when a process exits)."""
        key = f"{pid_namespace()}/{who.pid}"
        self._update(lambda d: d["processes"].pop(key, None))

    def set_utilization(self, who: ProcessIdentity, pct: float) -> None:
        """Record the utilization (0-100 %) ``who`` reports for its work on this device."""
        pct = max(0.0, min(100.0, float(pct)))

        def do(d: dict[str, Any]) -> None:
            self._entry(d, who)["utilization"] = pct

        self._update(do)

    def state(self) -> dict[str, Any]:
        """The ledger after reaping dead processes: uuid, total_bytes, used_bytes, utilization, processes."""

        def do(d: dict[str, Any]) -> dict[str, Any]:
            procs = list(d["processes"].values())
            return {
                "uuid": d["uuid"], "total_bytes": d["total_bytes"],
                "used_bytes": sum(p["used_bytes"] for p in procs),
                "utilization": min(100.0, sum(p["utilization"] for p in procs)),
                "processes": [{k: p[k] for k in ("pid", "namespace", "pod", "container", "name", "used_bytes",
                                                 "utilization")} for p in procs],
            }

        return self._update(do)
