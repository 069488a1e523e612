"""``kubelet.podlogsgc``: which pod log dirs a sweep removes, and that removal never follows a symlink."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mockgpu.control.apiserver.podlogs import log_dir, logs_root
from mockgpu.control.kubelet import podlogsgc


def _dir(d: Path, outside: Path) -> None:
    (d / "main").mkdir(parents=True)
    (d / "main" / "0.log").write_text("x\n")


def _inner_links(d: Path, outside: Path) -> None:
    _dir(d, outside)
    os.symlink(outside, d / "main" / "dir-link")
    os.symlink(outside / "secret", d / "main" / "1.log")


def _top_link(d: Path, outside: Path) -> None:
    os.symlink(outside, d)


def _dangling(d: Path, outside: Path) -> None:
    os.symlink(outside / "nowhere", d)


# (what the stale entry is, how it is made)
ENTRIES: list[tuple[str, Callable[[Path, Path], None]]] = [
    ("dir", _dir),
    ("dir-with-symlinks-inside", _inner_links),
    ("symlink-to-dir", _top_link),
    ("dangling-symlink", _dangling),
]


@pytest.mark.parametrize(("kind", "make"), ENTRIES, ids=[e[0] for e in ENTRIES])
def test_sweep_removes_deleted_pods_entries_and_nothing_they_point_to(tmp_path: Path, kind: str, make) -> None:
    state, outside = tmp_path / "state", tmp_path / "outside"
    (outside / "main").mkdir(parents=True)
    (outside / "secret").write_text("host file\n")
    (outside / "main" / "0.log").write_text("host log\n")
    gone = log_dir(state, "default", "gone", "uid-gone")
    live = log_dir(state, "default", "live", "uid-live")
    logs_root(state).mkdir(parents=True)
    make(gone, outside)
    _dir(live, outside)

    names = podlogsgc.log_dir_names(state)
    late = log_dir(state, "default", "late", "uid-late")  # a pod created after the dirs were listed
    _dir(late, outside)
    removed = podlogsgc.sweep(state, names, {"uid-live"})

    assert removed == [gone.name]
    assert not os.path.lexists(gone)
    assert (live / "main" / "0.log").exists() and (late / "main" / "0.log").exists()
    assert (outside / "secret").read_text() == "host file\n"
    assert (outside / "main" / "0.log").read_text() == "host log\n"


def test_remove_pod_log_dir(tmp_path: Path) -> None:
    d = log_dir(tmp_path, "ns", "p", "u1")
    _dir(d, tmp_path)
    assert podlogsgc.remove_pod_log_dir(tmp_path, "ns", "p", "u1") is True
    assert not d.exists()
    assert podlogsgc.remove_pod_log_dir(tmp_path, "ns", "p", "u1") is False  # already gone (another remover)
    assert podlogsgc.remove_pod_log_dir(tmp_path / "nothing", "ns", "p", "u1") is False  # no logs root yet


@pytest.mark.parametrize("name", ["..", "a/../b", ""], ids=["dotdot", "slash", "empty"])
def test_only_single_entries_of_the_logs_root(tmp_path: Path, name: str) -> None:
    logs_root(tmp_path).mkdir()
    (tmp_path / "keep").write_text("x")
    assert podlogsgc.remove_log_dirs(tmp_path, [name]) == []
    assert (tmp_path / "keep").exists()


def test_logs_root_that_is_a_symlink_is_not_entered(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    _dir(elsewhere / "default_p_u1", tmp_path)
    (tmp_path / "state").mkdir()
    os.symlink(elsewhere, logs_root(tmp_path / "state"))
    assert podlogsgc.remove_log_dirs(tmp_path / "state", ["default_p_u1"]) == []
    assert (elsewhere / "default_p_u1" / "main" / "0.log").exists()


def test_pod_uid_of() -> None:
    assert podlogsgc.pod_uid_of("kube-system_coredns-1_0b7d3c2e-1111-2222-3333-444455556666") == \
        "0b7d3c2e-1111-2222-3333-444455556666"
