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

The directory is shared with every container that holds one of the node's GPUs, and the same code runs as
root (the GPU-state publisher, the device plugin): every file is reached through ``mockgpu.gpu.safedir``
(one name at a time from an open directory, no symlink followed, bounded reads, atomic replacement), a
lease is one plain file name of the form this module writes and nothing else, and a ledger's contents
are checked before use (an entry of the wrong shape is dropped like a dead process's).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mockgpu.errors import MockgpuError
from mockgpu.gpu.safedir import Dir, UnsafeEntry, check_name

LEDGERS = "ledgers"  # under the driver dir
PROCS = "procs"  # under LEDGERS: the process leases
MAX_LEDGER_BYTES = 8 << 20  # a ledger of thousands of processes is far smaller; more is not one we wrote
LEASE_NAME = re.compile(r"[A-Za-z0-9_]{1,200}-[0-9]{1,10}\.lock")  # what _entry writes: <pidns>-<pid>.lock

T = TypeVar("T")


class CorruptLedger(MockgpuError):
    """A ledger file that is not one this module wrote (wrong shape, too large, not a regular file)."""


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


_LEASES: dict[str, int] = {}  # lease -> fd holding LOCK_SH, for this process's lifetime
_LEASE_GUARD = threading.Lock()


def _take_lease(root: Path, name: str) -> None:
    """Hold a shared flock on lease ``name`` until this process exits (idempotent)."""
    key = f"{root}/{LEDGERS}/{PROCS}/{name}"
    with _LEASE_GUARD:
        if key in _LEASES:
            return
        with Dir.open(root) as top, top.sub(LEDGERS) as led, led.sub(PROCS, create=True) as procs:
            fd = procs.open_lock(name)
        fcntl.flock(fd, fcntl.LOCK_SH)
        _LEASES[key] = fd


def _lease_held(procs: Dir | None, name: object) -> bool:
    """Whether a live process still holds lease ``name``; a dead one's lease file is removed. A name that is
    not one ``_entry`` writes is no lease (its entry is dead); nothing of that name is opened or removed."""
    if procs is None or not isinstance(name, str) or not LEASE_NAME.fullmatch(name):
        return False
    try:
        fd = procs.open_lock(name, create=False)
    except FileNotFoundError:
        return False
    except UnsafeEntry:  # a symlink or a FIFO in its place: not a lease; the entry itself goes
        procs.unlink(name)
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    procs.unlink(name)
    return False


def _alive(entry: dict[str, Any], ns: str, procs: Dir | None) -> bool:
    if entry.get("lease"):
        return _lease_held(procs, entry["lease"])  # a name: the dir is mounted at different paths
    if entry["pidns"] != ns:
        return True  # cannot see it from here
    ticks = _start_ticks(entry["pid"])
    return ticks is not None and (entry.get("start_ticks") in (None, ticks))


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_STR_FIELDS = ("pidns", "namespace", "pod", "container", "name")


def _entry_ok(e: object) -> bool:
    """An entry of the shape ``_entry`` writes (any other is dropped: a pod may have edited the file)."""
    if not isinstance(e, dict) or not _is_int(e.get("pid")) or e["pid"] <= 0:
        return False
    if not all(isinstance(e.get(k), str) for k in _STR_FIELDS):
        return False
    if e.get("lease") is not None and not isinstance(e["lease"], str):
        return False
    if e.get("start_ticks") is not None and not _is_int(e["start_ticks"]):
        return False
    allocs = e.get("allocations")
    if not isinstance(allocs, dict) or not all(_is_int(v) and v >= 0 for v in allocs.values()):
        return False
    util = e.get("utilization")
    return _is_int(e.get("used_bytes")) and e["used_bytes"] >= 0 and isinstance(util, int | float) \
        and not isinstance(util, bool) and 0 <= util <= 100


def _checked(data: object, label: str) -> dict[str, Any]:
    if not (isinstance(data, dict) and isinstance(data.get("uuid"), str) and _is_int(data.get("total_bytes"))
            and _is_int(data.get("next_handle")) and isinstance(data.get("processes"), dict)):
        raise CorruptLedger(f"{label}: not a mockgpu ledger")
    data["processes"] = {k: e for k, e in data["processes"].items() if _entry_ok(e)}
    return data


class Ledger:
    """The memory ledger of one device (a physical GPU, or one MIG instance): ``<root>/ledgers/<uuid>.json``."""

    def __init__(self, root: Path, uuid: str) -> None:
        self.root = Path(root)  # the driver dir (its path is trusted; nothing below it is)
        self.uuid = uuid
        self.name = check_name(f"{uuid}.json")
        self.lock_name = check_name(f"{uuid}.lock")
        self.path = self.root / LEDGERS / self.name

    @staticmethod
    def create(root: Path, uuid: str, total_bytes: int) -> Ledger:
        """Create the ledger file unless a valid one exists (an existing ledger is never clobbered)."""
        led = Ledger(root, uuid)
        with Dir.open(root) as top, top.sub(LEDGERS, create=True, replace=True) as d, led._locked(d):
            try:
                led._read(d)
            except (OSError, ValueError, CorruptLedger):  # absent, or not one we wrote (a symlink, a FIFO, junk)
                led._write(d, {"uuid": uuid, "total_bytes": total_bytes, "next_handle": 1, "processes": {}})
        return led

    @contextmanager
    def _locked(self, d: Dir) -> Iterator[None]:
        fd = d.open_lock(self.lock_name)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _read(self, d: Dir) -> dict[str, Any]:
        return _checked(json.loads(d.read(self.name, MAX_LEDGER_BYTES)), str(self.path))

    def _write(self, d: Dir, data: dict[str, Any]) -> None:
        d.write_atomic(self.name, json.dumps(data).encode())

    def _update(self, fn: Callable[[dict[str, Any]], T]) -> T:
        with Dir.open(self.root) as top, top.sub(LEDGERS) as d, self._locked(d):
            data = self._read(d)
            before = json.dumps(data)
            self._reap(d, data)
            result = fn(data)
            if json.dumps(data) != before:  # a reader that changed nothing writes nothing
                self._write(d, data)
            return result

    def _reap(self, d: Dir, data: dict[str, Any]) -> None:
        ns = pid_namespace()
        try:
            procs: Dir | None = d.sub(PROCS)
        except OSError:  # absent (no lease taken yet) or not a directory: no lease is held
            procs = None
        try:
            for key in [k for k, e in data["processes"].items() if not _alive(e, ns, procs)]:
                del data["processes"][key]
        finally:
            if procs is not None:
                procs.close()

    def _entry(self, data: dict[str, Any], who: ProcessIdentity) -> dict[str, Any]:
        ns = pid_namespace()
        key = f"{ns}/{who.pid}"
        entry: dict[str, Any] | None = data["processes"].get(key)
        if entry is None:
            lease = None
            if who.pid == os.getpid():
                safe_ns = "".join(c if c.isalnum() else "_" for c in ns)
                lease = f"{safe_ns}-{who.pid}.lock"
                _take_lease(self.root, lease)
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
            handle = int(d["next_handle"])
            d["next_handle"] = handle + 1
            e["allocations"][str(handle)] = nbytes
            e["used_bytes"] += nbytes
            return handle

        return self._update(do)

    def free(self, who: ProcessIdentity, handle: int) -> int:
        """Release allocation ``handle`` of ``who``; returns its size (0 if unknown or already freed)."""

        def do(d: dict[str, Any]) -> int:
            e = self._entry(d, who)
            n = int(e["allocations"].pop(str(handle), 0))
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
