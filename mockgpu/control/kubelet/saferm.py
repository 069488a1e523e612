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
  directory for a symlink mid-walk cannot steer it out of the tree.
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

    shutil.rmtree(name, dir_fd=root_fd, onerror=onerror)
    return True


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
