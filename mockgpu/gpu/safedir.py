"""Files in a directory that a less trusted process can write, touched without following anything in it.

A node's driver directory is mounted read-write into every container given one of its GPUs: anything in it
(``ledgers/``, ``ledgers/procs/``, every ledger, lock, lease, ``oom.log``,
``inventory.json``) may have been replaced by a pod -- by a symlink to a host file, a FIFO, a huge file, a
forged name. The same code also runs as root (the kubelet, its GPU-state publisher, the device plugin and
the DRA driver), so it follows these rules, the ones the kernel gives for exactly this (``openat(2)``):

* the top directory's path comes from the caller (trusted configuration); below it, one name at a time,
  relative to an open directory descriptor, never a path with ``/``, never ``.`` or ``..``
  (``check_name``), and never through a symlink (``O_NOFOLLOW``; directories ``O_DIRECTORY|O_NOFOLLOW``);
* only regular files are read or locked (a FIFO or device is refused, opened ``O_NONBLOCK`` so a FIFO
  cannot stall the opener), and reads are bounded;
* new content lands in a fresh file created ``O_EXCL`` under a random name and renamed into place
  (``renameat`` replaces a planted symlink rather than writing through it); removal is ``unlinkat``,
  which removes a symlink itself.

A pod can still rename, delete or forge the contents of what it can write: readers validate what they parse.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from mockgpu.errors import MockgpuError

MAX_NAME = 255
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeEntry(MockgpuError, OSError):
    """An entry of a shared directory is not what it must be (a symlink, not a regular file, too large, a bad
    name). An OSError too: code that treats an unreadable file as absent treats this one the same way."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.strerror = message


def _open(name: str, flags: int, dir_fd: int, label: str, mode: int = 0o666) -> int:
    try:
        return os.open(check_name(name), flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # O_NOFOLLOW met a symlink; O_DIRECTORY a non-directory
            raise UnsafeEntry(f"{label}/{name}: a symlink or not a {'directory' if flags & os.O_DIRECTORY else 'file'}"
                              ) from None
        raise


def check_name(name: object) -> str:
    """``name`` if it is one plain path component; UnsafeEntry otherwise."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\0" in name
            or len(name.encode("utf-8", "surrogateescape")) > MAX_NAME):
        raise UnsafeEntry(f"not a plain file name: {name!r}")
    return name


def _regular(fd: int, name: str) -> os.stat_result:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafeEntry(f"{name}: not a regular file")
    return st


class Dir:
    """An open directory; every method takes a single name inside it. Use as a context manager."""

    def __init__(self, fd: int, label: str) -> None:
        self.fd = fd
        self.label = label  # for messages only

    @classmethod
    def open(cls, path: str | Path, *, create: bool = False, mode: int = 0o755) -> Dir:
        """The top directory, by a trusted path (its own components may be symlinks the operator made)."""
        if create:
            os.makedirs(path, mode=mode, exist_ok=True)
        return cls(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), str(path))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Dir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sub(self, name: str, *, create: bool = False, mode: int = 0o755, replace: bool = False) -> Dir:
        """A subdirectory. ``create``: make it if absent. ``replace``: an entry that is not a directory (a
        planted symlink or file) is removed first -- for the code that lays the directory out."""
        check_name(name)
        if create:
            try:
                os.mkdir(name, mode, dir_fd=self.fd)
            except FileExistsError:
                if replace and not stat.S_ISDIR(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode):
                    os.unlink(name, dir_fd=self.fd)
                    os.mkdir(name, mode, dir_fd=self.fd)
        return Dir(_open(name, _DIR_FLAGS, self.fd, self.label), f"{self.label}/{name}")

    def read(self, name: str, limit: int) -> bytes:
        """The whole regular file (FileNotFoundError if absent); UnsafeEntry if larger than ``limit`` bytes."""
        fd = _open(name, os.O_RDONLY | _FILE_FLAGS, self.fd, self.label)
        st = _regular(fd, f"{self.label}/{name}")
        try:
            if st.st_size > limit:
                raise UnsafeEntry(f"{self.label}/{name}: {st.st_size} bytes, more than {limit}")
            chunks, size = [], 0
            while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    raise UnsafeEntry(f"{self.label}/{name}: more than {limit} bytes")
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read_tail(self, name: str, limit: int) -> bytes:
        """The last ``limit`` bytes of a regular file (FileNotFoundError if absent)."""
        fd = _open(name, os.O_RDONLY | _FILE_FLAGS, self.fd, self.label)
        st = _regular(fd, f"{self.label}/{name}")
        try:
            os.lseek(fd, max(0, st.st_size - limit), os.SEEK_SET)
            chunks, size = [], 0
            while size < limit and (chunk := os.read(fd, limit - size)):
                chunks.append(chunk)
                size += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def open_lock(self, name: str, *, create: bool = True) -> int:
        """A descriptor of a regular file to ``flock`` (read-only: a lock needs no write access, so a file
        another user created serves as well)."""
        flags = os.O_RDONLY | _FILE_FLAGS | (os.O_CREAT if create else 0)
        fd = _open(name, flags, self.fd, self.label)
        _regular(fd, f"{self.label}/{name}")
        return fd

    def write_atomic(self, name: str, data: bytes) -> None:
        """Replace ``name`` with a new file holding ``data`` (readers see the old or the new, never half)."""
        check_name(name)
        tmp = check_name(f".{name[:200]}.{secrets.token_hex(8)}.tmp")
        fd = _open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, self.fd, self.label)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            self.unlink(tmp)
            raise

    def append(self, name: str, data: bytes) -> None:
        """One ``O_APPEND`` write to a regular file (created if absent)."""
        fd = _open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _FILE_FLAGS, self.fd, self.label)
        _regular(fd, f"{self.label}/{name}")
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def exists(self, name: str) -> bool:
        """Whether an entry of that name exists (whatever it is; a symlink is not followed)."""
        try:
            os.stat(check_name(name), dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def mtime(self, name: str) -> float:
        return os.stat(check_name(name), dir_fd=self.fd, follow_symlinks=False).st_mtime

    def unlink(self, name: str) -> None:
        """Remove an entry (a symlink itself, never its target); absent is fine."""
        try:
            os.unlink(check_name(name), dir_fd=self.fd)
        except (FileNotFoundError, IsADirectoryError):
            pass

    def chown(self, uid: int, gid: int) -> None:
        """Give this directory itself to ``uid:gid`` (through its descriptor: no path is resolved)."""
        st = os.fstat(self.fd)
        if (st.st_uid, st.st_gid) != (uid, gid):
            os.fchown(self.fd, uid, gid)

    def chown_dirs(self, uid: int, gid: int, *, depth: int = 2, budget: int = 10_000) -> int:
        """Give this directory and the directories below it, ``depth`` levels deep, to ``uid:gid``; files
        stay whose they are. Each is opened ``O_DIRECTORY|O_NOFOLLOW`` from its parent's descriptor and
        chowned through its own, so a directory swapped for a symlink mid-walk is skipped, never followed
        (a path-based walk chowned the symlink's target). At most ``budget`` entries are looked at (a pod
        can make millions); returns what is left of it."""
        self.chown(uid, gid)
        if depth <= 0:
            return budget
        names = []
        with os.scandir(self.fd) as entries:
            for e in entries:
                budget -= 1
                if budget <= 0:
                    break
                if e.is_dir(follow_symlinks=False):
                    names.append(e.name)
        for name in names:
            try:
                sub = self.sub(name)
            except OSError:  # gone, or no longer a directory
                continue
            with sub:
                budget = sub.chown_dirs(uid, gid, depth=depth - 1, budget=budget)
        return budget


__all__ = ["Dir", "UnsafeEntry", "check_name"]
