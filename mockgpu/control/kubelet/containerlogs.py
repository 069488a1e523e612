"""Container log files in the CRI format the kubelet reads for ``kubectl logs``.

Each line is ``<RFC3339Nano UTC timestamp> <stdout|stderr> <F|P> <content>``, as containerd
writes ``/var/log/pods/<ns>_<pod>_<uid>/<container>/<restart>.log``. ``F`` marks a full line,
``P`` a partial one (a line longer than the buffer, or text cut off by the process exiting).
``LogWriter`` can also append the raw output to a plain-text file (one per container, across
restarts), the layout the embedded API server's ``pods/log`` reads.
Simplification: the timestamp is taken when the runtime reads the line, with microsecond
precision padded to nanoseconds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

MAX_LINE = 16 * 1024  # containerd's default max line size before splitting into partial lines


def rfc3339nano(t: datetime) -> str:
    """Kubernetes' RFC3339Nano rendering (always nine fractional digits here)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def parse_rfc3339nano(text: str) -> datetime:
    date, _, frac = text.rstrip("Z").partition(".")
    base = datetime.strptime(date, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return base.replace(microsecond=int((frac + "000000")[:6])) if frac else base


class LogWriter:
    """Copies a process's stdout and stderr pipes into one CRI log file, a thread per stream."""

    def __init__(self, path: Path, plain_path: Path | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = path.open("ab")
        self._plain = None
        if plain_path is not None:  # the same output as plain text, appended across restarts
            plain_path.parent.mkdir(parents=True, exist_ok=True)
            self._plain = plain_path.open("ab")
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

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
                body = chunk[:-1] if full else chunk
                self._write(name, b"F" if full else b"P", body)
        finally:
            stream.close()

    def _write(self, name: str, tag: bytes, body: bytes) -> None:
        stamp = rfc3339nano(datetime.now(UTC)).encode()
        with self._lock:
            self._file.write(b"%s %s %s %s\n" % (stamp, name.encode(), tag, body))
            self._file.flush()
            if self._plain is not None:
                self._plain.write(body + (b"\n" if tag == b"F" else b""))
                self._plain.flush()

    def close(self, timeout: float = 5.0) -> None:
        """Wait for both streams to reach EOF, then close the file."""
        for t in self._threads:
            t.join(timeout)
        with self._lock:
            self._file.close()
            if self._plain is not None:
                self._plain.close()


@dataclass(frozen=True)
class LogLine:
    time: datetime
    stream: str  # "stdout" or "stderr"
    full: bool
    content: str


def parse_log(path: Path) -> Iterator[LogLine]:
    """The lines of a CRI log file (skipping malformed ones, as the kubelet does)."""
    if not path.exists():
        return
    with path.open("rb") as f:
        for raw in f:
            parts = raw.rstrip(b"\n").split(b" ", 3)
            if len(parts) < 3 or parts[1] not in (b"stdout", b"stderr") or parts[2] not in (b"F", b"P"):
                continue
            try:
                when = parse_rfc3339nano(parts[0].decode())
            except ValueError:
                continue
            content = parts[3].decode("utf-8", "replace") if len(parts) == 4 else ""
            yield LogLine(when, parts[1].decode(), parts[2] == b"F", content)


def render_logs(path: Path, *, timestamps: bool = False, tail: int | None = None, since: datetime | None = None) -> str:
    """What ``kubectl logs`` prints: partial lines joined (per stream), ``--timestamps`` prefixing each line."""
    out: list[str] = []
    pending: dict[str, tuple[datetime, str]] = {}  # stream -> (time of first piece, text so far)
    for line in parse_log(path):
        if since is not None and line.time < since:
            continue
        first, text = pending.pop(line.stream, (line.time, ""))
        text += line.content
        if line.full:
            out.append((rfc3339nano(first) + " " if timestamps else "") + text + "\n")
        else:
            pending[line.stream] = (first, text)
    for first, text in pending.values():
        out.append((rfc3339nano(first) + " " if timestamps else "") + text)
    if tail is not None:
        out = out[-tail:] if tail > 0 else []
    return "".join(out)
