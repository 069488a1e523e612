"""Remove entries of a trusted directory without following a symlink, even one a pod planted below it.

The kubelet runs as root and removes per-pod directories whose insides the workload may have written: a
container's scratch home (``<node root>/runtime/rootfs/<uid>/<container>``, owned by the workload user) and,
as defence in depth, a pod's log dir. What the kernel gives for exactly this (``openat(2)``), used here:
* the root's path comes from the caller (the kubelet's own configuration) and is opened
  ``O_DIRECTORY|O_NOFOLLOW``: a root that is a symlink is not entered;
* below it, one plain name at a time (``check_name``: no ``/``, not ``.``/``..``/empty, no NUL), relative to
  that descriptor (``dir_fd``), never a path;
* an entry that is not a directory (a symlink, a file) is unlinked itself (``unlinkat``), never its target;
* a directory goes through ``shutil.rmtree(name, dir_fd=...)``, which on Linux walks with
  ``openat(O_NOFOLLOW)``/``unlinkat``, checks each directory it enters is the one it ``lstat``-ed, and unlinks
  symlinks inside rather than descending (``shutil.rmtree.avoids_symlink_attacks``), so a pod swapping a
  directory for a symlink mid-walk cannot steer it out of the tree. Python 3.11's ``rmtree`` recurses (and
  holds a descriptor) per level, so a workload's tree thousands of levels deep would make it fail for good;
  such a tree is finished by ``_rmtree_deep``: the same checks, one level at a time, climbing back through
  ``..`` checked against the directory it came down from.
Upstream's kubelet removes such dirs with Go's ``os.RemoveAll``, which on Linux is ``openat``/``unlinkat``
based too (``removeall_at.go``). Failures are logged and reported as "not removed", never raised: the next
sweep tries again.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)
MAX_NAME = 255
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

if not shutil.rmtree.avoids_symlink_attacks:  # pragma: no cover - every Linux CPython has it
    raise ImportError("shutil.rmtree cannot avoid symlink attacks on this platform")


def check_name(name: object) -> str:
    """``name`` if it is one plain path component; ValueError otherwise."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\0" in name
            or len(name.encode("utf-8", "surrogateescape")) > MAX_NAME):
        raise ValueError(f"not a plain directory entry name: {name!r}")
    return name


def entry_names(root: str | Path) -> list[str]:
    """The names in ``root`` (none when it does not exist or is not a directory)."""
    try:
        return os.listdir(root)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _remove(root_fd: int, name: str) -> bool:
    """Remove the entry ``name`` of the dir ``root_fd`` without following a symlink; whether it was there."""
    check_name(name)
    try:
        st = os.lstat(name, dir_fd=root_fd)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=root_fd)  # a symlink (or file) itself, never its target
        return True

    def onerror(func, path, exc_info) -> None:  # noqa: ANN001
        if not isinstance(exc_info[1], FileNotFoundError):  # another remover got there first
            raise exc_info[1]

    try:
        shutil.rmtree(name, dir_fd=root_fd, onerror=onerror)
    except RecursionError:  # deeper than 3.11's recursive rmtree goes (CPython gh-89727): one level at a time
        _rmtree_deep(root_fd, name)
    return True


def _open_dir(name: str, dir_fd: int, want: os.stat_result | None = None) -> int:
    """``name`` opened as a directory relative to ``dir_fd``, never through a symlink; with ``want``, it must be
    that directory (not one swapped in since it was ``lstat``-ed)."""
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    if want is not None and not os.path.samestat(os.fstat(fd), want):
        os.close(fd)
        raise OSError(f"{name}: replaced while being removed")
    return fd


def _unlink_all_but_dirs(fd: int) -> list[str]:
    """Unlink every entry of the directory ``fd`` but its subdirectories (symlinks themselves); their names."""
    subdirs = []
    with os.scandir(fd) as it:
        for entry in it:
            if entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.name)
            else:
                os.unlink(entry.name, dir_fd=fd)
    return subdirs


def _rmtree_deep(root_fd: int, name: str) -> None:
    """``rmtree(name, dir_fd=root_fd)`` for a tree of any depth, with the same guarantees (``openat`` with
    ``O_NOFOLLOW``, each directory checked against its ``lstat``, symlinks unlinked) and two descriptors open
    at a time: it climbs back through ``..`` and checks that it is the directory it came from."""
    fd = _open_dir(name, root_fd, os.lstat(name, dir_fd=root_fd))
    path: list[tuple[str, os.stat_result, list[str]]] = []  # (name, stat, subdirs still to remove) per level
    try:
        st, subdirs = os.fstat(fd), _unlink_all_but_dirs(fd)
        while True:
            if subdirs:  # down into the next one
                child = subdirs.pop()
                new = _open_dir(child, fd, os.lstat(child, dir_fd=fd))
                path.append((name, st, subdirs))
                os.close(fd)
                fd, name, st = new, child, os.fstat(new)
                subdirs = _unlink_all_but_dirs(fd)
                continue
            if not path:  # the top is empty
                break
            parent = _open_dir("..", fd, path[-1][1])  # back up, to the very directory we came down from
            os.close(fd)
            fd = parent
            os.rmdir(name, dir_fd=fd)
            name, st, subdirs = path.pop()
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=root_fd)


def remove_entries(root: str | Path, names: Iterable[str], *, what: str = "directory") -> list[str]:
    """Remove these entries of ``root`` (see the module docstring); the names removed. ``what`` names them in
    the log lines of failures, which are logged, not raised."""
    names = list(names)
    if not names:
        return []
    try:
        root_fd = os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        return []
    except OSError as exc:  # a symlink (ENOTDIR/ELOOP) or no access: not entered
        log.warning("%ss under %s not removed: %s", what, root, exc)
        return []
    removed = []
    try:
        for name in names:
            try:
                if _remove(root_fd, name):
                    removed.append(name)
            except (OSError, ValueError) as exc:
                log.warning("%s %s under %s not removed: %s", what, name, root, exc)
    finally:
        os.close(root_fd)
    return removed
