"""Container log files in the CRI format, rotated as the kubelet rotates them, and read back from the end.

Each line is ``<RFC3339Nano UTC timestamp> <stdout|stderr> <F|P> <content>``, as containerd writes
``/var/log/pods/<ns>_<pod>_<uid>/<container>/<restart>.log``. ``F`` marks a full line, ``P`` a partial one (a
line longer than the buffer, or text cut off by the process exiting).

Writing (``LogWriter``): files are created 0600 in 0700 dirs (``privatefs``). Rotation follows the kubelet's
container log manager (``pkg/kubelet/logs/container_log_manager.go``, ``containerLogMaxSize`` 10Mi and
``containerLogMaxFiles`` 5): the current file is renamed ``<restart>.log.<YYYYmmdd-HHMMSS>`` and a new one is
started, and the oldest rotated files are removed so that at most ``max_files`` files (the current one
included) remain. Differences: the writer rotates before the write that would take the file past
``max_size`` (upstream checks every 10 s, so its files can grow past the limit in between); rotated files
are not gzip-compressed (upstream compresses all but the newest), so the disk bound is
``max_size × max_files`` uncompressed; two rotations within one second get ``.<n>`` after the timestamp.

Reading (``LogReader``) as ``pkg/kubelet/kuberuntime/logs/logs.go``: only the current file (rotated ones are
not served, as upstream); ``tail`` finds the start of the last N lines by reading backwards from the end in
blocks (``tail_start``), so the cost is the lines returned, not the file; ``since`` skips older lines;
``timestamps`` prefixes each line with its timestamp; ``limit`` caps the bytes returned; ``follow`` goes on
after a rotation by draining the renamed file and opening the new one. Partial lines are written without a
newline, each with its own timestamp (as upstream); malformed lines are skipped.
Simplification: the timestamp is taken when the runtime reads the line, microseconds padded to nanoseconds.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from mockgpu.apimachinery.timefmt import parse_rfc3339_nano, rfc3339_nano
from mockgpu.privatefs import open_private, private_dir

MAX_LINE = 16 * 1024  # containerd's default max line size before splitting into partial lines
MAX_SIZE = 10 * 1024 * 1024  # kubelet containerLogMaxSize default 10Mi
MAX_FILES = 5  # kubelet containerLogMaxFiles default
ROTATED_TIME_FORMAT = "%Y%m%d-%H%M%S"  # upstream's "20060102-150405"
BLOCK = 64 * 1024  # read size, backwards for tail and forwards for the rest
MAX_PENDING = 4 * MAX_LINE  # a longer unterminated line is not one this writer wrote: dropped








def cri_line(stream: str, content: bytes | str, *, full: bool = True, when: datetime | None = None) -> bytes:
    """One CRI log line (with its newline)."""
    body = content.encode() if isinstance(content, str) else content
    stamp = rfc3339_nano(when).encode()
    return b"%s %s %s %s\n" % (stamp, stream.encode(), b"F" if full else b"P", body)


@dataclass(frozen=True)
class LogRotation:
    """The kubelet's ``containerLogMaxSize`` (bytes) and ``containerLogMaxFiles`` (at least 2, as upstream)."""

    max_size: int = MAX_SIZE
    max_files: int = MAX_FILES

    def __post_init__(self) -> None:
        if self.max_files < 2:
            raise ValueError("containerLogMaxFiles must be greater than 1")
        if self.max_size <= 0:
            raise ValueError("containerLogMaxSize must be positive")


def rotated_logs(path: Path) -> list[Path]:
    """The rotated files of ``path`` (``<name>.<timestamp>[.<n>]``), oldest first."""
    try:
        found = [p for p in path.parent.iterdir() if p.name.startswith(path.name + ".")]
    except FileNotFoundError:
        return []
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))


class LogWriter:
    """Copies a process's stdout and stderr pipes into one CRI log file, a thread per stream, rotating it."""

    def __init__(self, path: Path, rotation: LogRotation | None = None) -> None:
        private_dir(path.parent)
        self.path = path
        self.rotation = rotation or LogRotation()
        self._file = self._open()
        self._size = os.fstat(self._file.fileno()).st_size
        self._rotated: deque[Path] = deque(rotated_logs(path))
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def _open(self) -> BinaryIO:
        return os.fdopen(open_private(self.path, os.O_WRONLY | os.O_APPEND), "ab")

    def attach(self, stream: BinaryIO, name: str) -> None:
        t = threading.Thread(target=self._copy, args=(stream, name), name=f"log-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    def _copy(self, stream: BinaryIO, name: str) -> None:
        try:
            while True:
                chunk = stream.readline(MAX_LINE)
                if not chunk:
                    break
                full = chunk.endswith(b"\n")
                self._write(cri_line(name, chunk[:-1] if full else chunk, full=full))
        finally:
            stream.close()

    def _write(self, line: bytes) -> None:
        with self._lock:
            if self._size and self._size + len(line) > self.rotation.max_size:
                self._rotate()
            self._file.write(line)
            self._file.flush()
            self._size += len(line)

    def _rotate(self) -> None:
        """Rename the current file ``<name>.<timestamp>``, start a new one, remove the oldest rotated ones."""
        self._file.close()
        stamp = datetime.now(UTC).strftime(ROTATED_TIME_FORMAT)
        target, n = self.path.with_name(f"{self.path.name}.{stamp}"), 0
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.{stamp}.{n}")
        os.rename(self.path, target)
        self._rotated.append(target)
        self._file, self._size = self._open(), 0
        while len(self._rotated) > self.rotation.max_files - 1:
            self._rotated.popleft().unlink(missing_ok=True)

    def close(self, timeout: float = 5.0) -> None:
        """Wait for both streams to reach EOF, then close the file."""
        for t in self._threads:
            t.join(timeout)
        with self._lock:
            self._file.close()


@dataclass(frozen=True)
class LogLine:
    time: datetime
    stream: str  # "stdout" or "stderr"
    full: bool
    content: str


def split_line(raw: bytes) -> tuple[bytes, bytes, bool, bytes] | None:
    """(timestamp, stream, full, content) of one CRI line without its newline; None when malformed."""
    parts = raw.split(b" ", 3)
    if len(parts) < 3 or parts[1] not in (b"stdout", b"stderr") or parts[2] not in (b"F", b"P"):
        return None
    return parts[0], parts[1], parts[2] == b"F", parts[3] if len(parts) == 4 else b""


def parse_log(path: Path) -> Iterator[LogLine]:
    """The lines of a CRI log file (skipping malformed ones, as the kubelet does)."""
    if not path.exists():
        return
    with path.open("rb") as f:
        for raw in f:
            parts = split_line(raw.rstrip(b"\n"))
            if parts is None:
                continue
            try:
                when = parse_rfc3339_nano(parts[0].decode())
            except ValueError:
                continue
            yield LogLine(when, parts[1].decode(), parts[2], parts[3].decode("utf-8", "replace"))


def tail_start(fh: BinaryIO, lines: int, block: int = BLOCK) -> tuple[int, int]:
    """(offset where the last ``lines`` lines start, bytes read to find it), reading backwards from the end."""
    end = fh.seek(0, os.SEEK_END)
    if lines <= 0:
        return end, 0
    pos, seen, read = end, 0, 0
    skip_last = True  # the newline ending the file ends the last line; it does not start one
    while pos > 0:
        size = min(block, pos)
        pos -= size
        fh.seek(pos)
        data = fh.read(size)
        read += len(data)
        i = len(data)
        if skip_last:
            skip_last = False
            if data.endswith(b"\n"):
                i -= 1
        while True:
            i = data.rfind(b"\n", 0, i)
            if i < 0:
                break
            seen += 1
            if seen == lines:
                return pos + i + 1, read
    return 0, read


class LogReader:
    """``kubectl logs`` output of one CRI log file: ``read()`` returns what is there now (b"" at the end)."""

    def __init__(self, path: Path, *, timestamps: bool = False, since: datetime | None = None,
                 tail: int | None = None, limit: int | None = None) -> None:
        self.path = path
        self.timestamps, self.since, self.limit = timestamps, since, limit
        self.bytes_read = 0  # from the file, for tests and measurements
        self.sent = 0
        self._pending = b""
        self.fh: BinaryIO = path.open("rb")
        if tail is not None:
            offset, read = tail_start(self.fh, tail)
            self.bytes_read += read
            self.fh.seek(offset)

    def close(self) -> None:
        self.fh.close()

    def __enter__(self) -> LogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def done(self) -> bool:
        """The byte limit is reached."""
        return self.limit is not None and self.sent >= self.limit

    def read(self, size: int = BLOCK) -> bytes:
        """The rendered complete lines of the next ``size`` bytes of the file (b"" when there are none yet)."""
        while not self.done():
            data = self.fh.read(size)
            if not data:
                return b""
            self.bytes_read += len(data)
            buf = self._pending + data
            body, nl, rest = buf.rpartition(b"\n")
            self._pending = rest if len(rest) <= MAX_PENDING else b""
            if not nl:
                continue
            out = self._render(body.split(b"\n"))
            if out:
                return out
        return b""

    def _render(self, raws: list[bytes]) -> bytes:
        out = bytearray()
        for raw in raws:
            parts = split_line(raw)
            if parts is None:
                continue
            stamp, _, full, content = parts
            if self.since is not None:
                try:
                    if parse_rfc3339_nano(stamp.decode()) < self.since:
                        continue
                except ValueError:
                    continue
            if self.timestamps:
                out += stamp + b" "
            out += content
            if full:
                out += b"\n"
        if self.limit is not None:
            del out[max(self.limit - self.sent, 0):]
        self.sent += len(out)
        return bytes(out)

    def rotated(self) -> bool:
        """The file was renamed away and a new one started at ``path`` (follow reads on there)."""
        try:
            return os.stat(self.path).st_ino != os.fstat(self.fh.fileno()).st_ino
        except FileNotFoundError:
            return False

    def reopen(self) -> None:
        """Go on with the new file at ``path``, from its start (after draining the old one)."""
        self.fh.close()
        self.fh, self._pending = self.path.open("rb"), b""

    def read_all(self) -> Iterator[bytes]:
        while chunk := self.read():
            yield chunk


def render_logs(path: Path, *, timestamps: bool = False, tail: int | None = None, since: datetime | None = None,
                limit: int | None = None) -> str:
    """What ``kubectl logs`` prints for one CRI log file."""
    if not path.exists():
        return ""
    with LogReader(path, timestamps=timestamps, tail=tail, since=since, limit=limit) as r:
        return b"".join(r.read_all()).decode("utf-8", "replace")
