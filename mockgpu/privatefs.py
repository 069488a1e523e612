"""Files only their owner can read: cluster state, keys, tokens, kubeconfigs and logs are created mode 0600
in directories of mode 0700, by construction (the mode is given to ``open``/``mkdir`` when the file is made,
and set again on files and directories that already exist), as the kubelet keeps ``/var/log/pods`` and
kube-apiserver its keys and etcd its data dir (etcd refuses a data dir that is not 0700).

``private_dir(path)``   mkdir -p with mode 0700 for every directory it creates; ``path`` itself is chmod 0700
(existing parents are left as they are).
``open_private(path)``  ``os.open`` with mode 0600 (``O_NOFOLLOW``: never through a symlink), fchmod 0600.
``write_private(path, data)``  replace a file atomically with a 0600 one.
``secure_sqlite(path)`` create a SQLite database file 0600 before SQLite opens it: SQLite gives its ``-wal``
and ``-shm`` files the database file's mode (unix VFS ``findCreateFileMode``), so they are 0600 too.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: str | Path) -> Path:
    """Create ``path`` (and missing parents) with mode 0700; an existing ``path`` is made 0700."""
    p = Path(path)
    missing = [d for d in (p, *p.parents) if not d.exists()]
    for d in reversed(missing):  # Path.mkdir(parents=True) would give the parents the default mode
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
    os.chmod(p, DIR_MODE)
    return p


def open_private(path: str | Path, flags: int = os.O_WRONLY | os.O_TRUNC) -> int:
    """A file descriptor for ``path``, created 0600 if missing (existing files are made 0600)."""
    fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private(path: str | Path, data: bytes | str) -> Path:
    """Write ``path`` atomically (temp file + rename) as a 0600 file."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp")
    with os.fdopen(open_private(tmp), "wb") as fh:
        fh.write(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, p)
    return p


def secure_sqlite(path: str | Path) -> Path:
    """Create the database file 0600 (and its dir 0700) before SQLite does; existing ones are made 0600,
    with their ``-wal``/``-shm`` files."""
    p = Path(path)
    private_dir(p.parent)
    os.close(open_private(p, os.O_RDWR))
    for suffix in ("-wal", "-shm", "-journal"):
        side = p.with_name(p.name + suffix)
        if side.exists():
            os.chmod(side, FILE_MODE)
    return p
