"""Container logs as the kubelet keeps them: rotation bounds the disk a chatty container uses (containerLogMaxSize
10Mi × containerLogMaxFiles 5), and tails are read from the end of the file, not the whole file."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mockgpu.control.kubelet.container import ContainerSpec
from mockgpu.control.kubelet.containerlogs import (
    MAX_FILES,
    MAX_SIZE,
    LogReader,
    LogRotation,
    LogWriter,
    cri_line,
    render_logs,
    tail_start,
)
from mockgpu.control.kubelet.runtime import ProcessRuntime

MiB = 1024 * 1024
ROTATED = re.compile(r"^0\.log\.\d{8}-\d{6}(\.\d+)?$")


def test_rotation_bounds_the_disk_of_a_container_writing_250_mb(tmp_path: Path) -> None:
    rt = ProcessRuntime(tmp_path / "rt")
    line = "x" * 999  # 1000 bytes a line with its newline; 250,000 lines = 250 MB
    script = f'l={line}; i=0; while [ $i -lt 250000 ]; do echo "$l"; i=$((i+1)); done; echo last-line'
    rt.start(ContainerSpec(pod_uid="u", pod_name="p", namespace="ns", name="c", command=("bash", "-c", script)))
    st = rt.wait("u", "c", timeout=300)
    assert st.exit_code == 0
    files = {p.name: p.stat().st_size for p in st.log_path.parent.iterdir()}
    print("log files after 250 MB:", files, "total", sum(files.values()))
    assert "0.log" in files and all(ROTATED.match(n) for n in files if n != "0.log")
    assert len(files) == MAX_FILES and all(size <= MAX_SIZE for size in files.values())
    assert sum(files.values()) <= MAX_FILES * MAX_SIZE  # 50 MiB, of 250 MB plus CRI prefixes written
    assert render_logs(st.log_path, tail=1) == "last-line\n"
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in st.log_path.parent.iterdir())


def test_writer_rotates_before_the_limit_and_keeps_max_files(tmp_path: Path) -> None:
    path = tmp_path / "c" / "0.log"
    w = LogWriter(path, LogRotation(max_size=1000, max_files=3))
    for i in range(100):
        w._write(cri_line("stdout", f"line {i:03d}"))  # 52 bytes each: 19 a file
    w.close()
    files = sorted(path.parent.iterdir(), key=lambda p: p.stat().st_mtime_ns)
    assert len(files) == 3 and files[-1] == path and all(p.stat().st_size <= 1000 for p in files)
    text = "".join(render_logs(p) for p in files)
    assert text.splitlines() == [f"line {i:03d}" for i in range(100 - len(text.splitlines()), 100)]
    with pytest.raises(ValueError, match="containerLogMaxFiles must be greater than 1"):
        LogRotation(max_files=1)


def _lines(n: int, start: datetime) -> bytes:
    return b"".join(cri_line("stdout" if i % 3 else "stderr", f"line {i}", when=start + timedelta(seconds=i))
                    for i in range(n))


@pytest.mark.parametrize("block", [1, 7, 64, 4096])
@pytest.mark.parametrize("text", [b"", b"a\n", b"a\nb\n", b"a\nbb\nccc\n", b"a\nb", b"\n\n\n", b"one line no newline"])
def test_tail_start_matches_splitlines(text: bytes, block: int) -> None:
    for n in range(6):
        want = len(b"".join(text.splitlines(keepends=True)[-n:])) if n else 0
        offset, _ = tail_start(io.BytesIO(text), n, block)
        assert len(text) - offset == want, (text, n, block)


T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(("kw", "want"), [
    ({}, "line 0\nline 1\nline 2\nline 3\nline 4\n"),
    ({"tail": 2}, "line 3\nline 4\n"),
    ({"tail": 0}, ""),
    ({"tail": 99}, "line 0\nline 1\nline 2\nline 3\nline 4\n"),
    ({"limit": 9}, "line 0\nli"),
    ({"tail": 2, "limit": 3}, "lin"),
    ({"since": T0 + timedelta(seconds=3)}, "line 3\nline 4\n"),
    ({"tail": 3, "since": T0 + timedelta(seconds=3)}, "line 3\nline 4\n"),  # tail first, then since (upstream)
    ({"tail": 1, "timestamps": True}, "2026-01-01T00:00:04.000000000Z line 4\n"),
])
def test_reader_options(tmp_path: Path, kw: dict, want: str) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(b"garbage line\n" + _lines(5, T0))  # malformed lines are skipped (but count for tail)
    assert render_logs(path, **kw) == want


def test_partial_lines_and_malformed_ones(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(cri_line("stdout", "par", full=False, when=T0) + b"not a cri line\n"
                     + cri_line("stdout", "tial", when=T0) + cri_line("stderr", "err", when=T0))
    assert render_logs(path) == "partial\nerr\n"
    assert render_logs(path, tail=1) == "err\n"


def test_tail_1_of_a_100_mb_log_reads_a_few_kib(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    block = _lines(1000, T0)  # ~50 kB
    with path.open("wb") as fh:
        while fh.tell() < 100 * 1000 * 1000:
            fh.write(block)
        fh.write(cri_line("stdout", "the end", when=T0))
    with LogReader(path, tail=1) as r:
        assert b"".join(r.read_all()) == b"the end\n"
        assert r.bytes_read <= 128 * 1024  # one or two 64 KiB blocks of 100 MB
    with LogReader(path, tail=1000, limit=20) as r:
        assert b"".join(r.read_all()) == b"line 1\nline 2\nline 3"  # 1000 lines back, then 20 bytes
        assert r.bytes_read < MiB
