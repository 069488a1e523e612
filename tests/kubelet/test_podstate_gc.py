"""What the kubelet keeps per pod goes with the pod: ``ProcessRuntime.remove_pod`` (scratch homes, removed
without following a symlink the workload planted in them, and container records), the scratch sweep, the
shared fd-relative removal (``saferm``) and the reflector's re-list reporting pods that vanished."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import planted
import polling
import pytest

from mockgpu.control.kubelet import saferm
from mockgpu.control.kubelet.allowlist import DEFAULT_ALLOWLIST, CommandAllowlist
from mockgpu.control.kubelet.apiwatch import Reflector
from mockgpu.control.kubelet.runtime import ContainerSpec, ProcessRuntime

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Path]:
    return planted.make_host(tmp_path)


@pytest.fixture
def rt(tmp_path: Path):
    """A runtime whose workloads may also run ``ln`` and ``mkdir``: the pod plants its own symlinks."""
    runtime = ProcessRuntime(tmp_path / "rt", allowlist=CommandAllowlist(names=(*DEFAULT_ALLOWLIST, "ln", "mkdir")))
    yield runtime
    runtime.stop_all(grace=0)


def spec(uid: str, name: str, *command: str) -> ContainerSpec:
    return ContainerSpec(pod_uid=uid, pod_name="p", namespace="ns", name=name, command=tuple(command))


PLANT = ('ln -s {dir} "$HOME/dir-link" && ln -s {file} "$HOME/file-link" && mkdir -p "$HOME/a/b" '
         '&& ln -s {nested} "$HOME/a/b/link" && ln -s {dir} "$HOME/a/b/c" && echo mine > "$HOME/a/own"')


def test_remove_pod_takes_the_scratch_dirs_not_what_planted_symlinks_point_at(rt: ProcessRuntime,
                                                                             host: dict[str, Path]) -> None:
    script = PLANT.format(**{k: str(v) for k, v in host.items()})
    for name in ("main", "side"):
        rt.start(spec("uid-gone", name, "sh", "-c", script))
        assert rt.wait("uid-gone", name, timeout=30).exit_code == 0, rt.logs("uid-gone", name)
    rt.start(spec("uid-live", "main", "sh", "-c", "echo here > $HOME/f"))
    assert rt.wait("uid-live", "main", timeout=30).exit_code == 0
    home = rt.scratch_dir(spec("uid-gone", "main"))
    assert os.path.islink(home / "dir-link") and os.path.islink(home / "a" / "b" / "c")  # the pod's own links

    assert rt.remove_pod("uid-gone") is True
    assert not os.path.lexists(rt.scratch_root / "uid-gone")
    assert planted.intact(host)
    assert rt.status("uid-gone", "main") is None and rt.status("uid-gone", "side") is None  # records dropped
    assert (rt.scratch_root / "uid-live" / "main" / "f").read_text() == "here\n"  # another pod keeps its own
    assert rt.status("uid-live", "main") is not None
    assert rt.remove_pod("uid-gone") is False  # nothing left


def test_remove_pod_keeps_a_running_pods_dir(rt: ProcessRuntime) -> None:
    rt.start(spec("uid-run", "main", "sleep", "30"))
    assert rt.remove_pod("uid-run") is False
    assert rt.scratch_dir(spec("uid-run", "main")).is_dir() and rt.status("uid-run", "main") is not None
    rt.stop_pod("uid-run", 0)
    assert rt.remove_pod("uid-run") is True
    assert not (rt.scratch_root / "uid-run").exists()


def _dir(p: Path, host: dict[str, Path]) -> None:
    (p / "main").mkdir(parents=True)
    (p / "main" / "f").write_text("x\n")


def _links(p: Path, host: dict[str, Path]) -> None:
    _dir(p, host)
    os.symlink(host["dir"], p / "main" / "dir-link")
    os.symlink(host["file"], p / "main" / "file-link")


def _top_link(p: Path, host: dict[str, Path]) -> None:
    os.symlink(host["dir"], p)


def _file(p: Path, host: dict[str, Path]) -> None:
    p.write_text("not a dir\n")


# (what the stale scratch entry of a deleted pod is, how it is made)
STALE: list[tuple[str, Callable[[Path, dict[str, Path]], None]]] = [
    ("dir", _dir),
    ("dir-with-symlinks-inside", _links),
    ("symlink-to-host-dir", _top_link),
    ("file", _file),
]


@pytest.mark.parametrize(("kind", "make"), STALE, ids=[s[0] for s in STALE])
def test_sweep_scratch_removes_deleted_pods_dirs_only(tmp_path: Path, host: dict[str, Path], kind: str,
                                                      make) -> None:
    runtime = ProcessRuntime(tmp_path / "rt", bwrap=None)
    runtime.scratch_root.mkdir(parents=True)
    make(runtime.scratch_root / "uid-gone", host)
    _dir(runtime.scratch_root / "uid-live", host)
    uids = runtime.scratch_pod_uids()
    _dir(runtime.scratch_root / "uid-late", host)  # a pod created after the dirs were listed
    assert runtime.sweep_scratch(uids, {"uid-live"}) == ["uid-gone"]
    assert not os.path.lexists(runtime.scratch_root / "uid-gone")
    assert (runtime.scratch_root / "uid-live" / "main" / "f").exists()
    assert (runtime.scratch_root / "uid-late" / "main" / "f").exists()
    assert planted.intact(host)


@pytest.mark.parametrize("name", ["..", ".", "a/../b", "", "x\0y", "n" * 256],
                         ids=["dotdot", "dot", "slash", "empty", "nul", "too-long"])
def test_saferm_refuses_odd_names(tmp_path: Path, name: str) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "keep").write_text("x")
    (tmp_path / "root" / "b").mkdir()
    with pytest.raises(ValueError):
        saferm.check_name(name)
    assert saferm.remove_entries(tmp_path / "root", [name]) == []
    assert (tmp_path / "keep").exists() and (tmp_path / "root" / "b").is_dir()


def test_saferm_does_not_enter_a_root_that_is_a_symlink(tmp_path: Path, host: dict[str, Path]) -> None:
    os.symlink(host["dir"], tmp_path / "root")
    assert saferm.remove_entries(tmp_path / "root", ["sub", "secret"]) == []
    assert planted.intact(host)


# -- the reflector: a re-list reports what vanished while the watch was down --------------------------------

def _pod(name: str, uid: str, rv: str = "1") -> dict:
    return {"metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": rv}}


class Gone(Exception):
    status = 410  # the server's history no longer reaches the watch's resourceVersion


class FakeLists:
    """``list_fn``: each call without ``watch`` answers the next list; each watch call answers 410 Gone until
    the lists run out, then blocks until the test ends."""

    def __init__(self, lists: list[list[dict]]) -> None:
        self.lists = list(lists)
        self.done = threading.Event()

    def __call__(self, watch: bool = False, **kwargs) -> SimpleNamespace:
        if watch:
            if self.lists:
                raise Gone()
            self.done.wait(10)
            raise ConnectionError("test over")
        items = self.lists.pop(0)
        return SimpleNamespace(data=json.dumps({"metadata": {"resourceVersion": "9"}, "items": items}))


A, B, C = _pod("a", "uid-a"), _pod("b", "uid-b"), _pod("c", "uid-c")
B2 = _pod("b", "uid-b2")  # b deleted and created again under the same name
# (case, successive lists, the events the handler gets)
RELISTS = [
    ("one-vanished", [[A, B], [A]], [("ADDED", "uid-a"), ("ADDED", "uid-b"), ("DELETED", "uid-b"),
                                     ("ADDED", "uid-a")]),
    ("all-vanished-then-new", [[A, B], [C]], [("ADDED", "uid-a"), ("ADDED", "uid-b"), ("DELETED", "uid-a"),
                                              ("DELETED", "uid-b"), ("ADDED", "uid-c")]),
    ("recreated-same-name", [[A, B], [A, B2]], [("ADDED", "uid-a"), ("ADDED", "uid-b"), ("DELETED", "uid-b"),
                                                ("ADDED", "uid-a"), ("ADDED", "uid-b2")]),
    ("nothing-vanished", [[A], [A]], [("ADDED", "uid-a"), ("ADDED", "uid-a")]),
    ("vanished-across-two-relists", [[A, B], [A], [A]], [("ADDED", "uid-a"), ("ADDED", "uid-b"),
                                                         ("DELETED", "uid-b"), ("ADDED", "uid-a"),
                                                         ("ADDED", "uid-a")]),
]


@pytest.mark.parametrize(("case", "lists", "want"), RELISTS, ids=[r[0] for r in RELISTS])
def test_relist_reports_vanished_objects_as_deleted(case: str, lists: list[list[dict]],
                                                    want: list[tuple[str, str]]) -> None:
    got: list[tuple[str, str]] = []
    objs: list[dict] = []
    fake = FakeLists(lists)

    def handler(etype: str, obj: dict) -> None:
        got.append((etype, obj["metadata"]["uid"]))
        objs.append(obj)

    r = Reflector(fake, handler, name=f"test-{case}").start()
    try:
        polling.wait_for(lambda: len(got) >= len(want) and not fake.lists, timeout=10, what="events")
    finally:
        fake.done.set()
        r.stop()
    assert got == want
    last = {o["metadata"]["uid"]: o for o in (A, B, C, B2)}
    for (etype, uid), obj in zip(got, objs, strict=True):  # a DELETED carries the last object seen
        if etype == "DELETED":
            assert obj == last[uid]


def _deep(top: Path, host: dict[str, Path], depth: int) -> None:
    """``top/d/d/.../d`` ``depth`` levels down (deeper than a path can name), with files, subdirs and symlinks
    to the host along the way, made as a workload would: one ``mkdir``/``openat`` at a time."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(depth):
            if i % 500 == 0:
                os.symlink(host["dir"], "to-dir", dir_fd=fd)
                os.symlink(host["file"], "to-file", dir_fd=fd)
                os.mkdir("side", dir_fd=fd)
                os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
            os.mkdir("d", dir_fd=fd)
            new = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = new
    finally:
        os.close(fd)


@pytest.mark.parametrize("depth", [3, 3000], ids=["shallow", "deeper-than-rmtree-recurses"])
def test_saferm_removes_trees_of_any_depth_without_following_symlinks(tmp_path: Path, host: dict[str, Path],
                                                                      depth: int) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _deep(root / "uid-deep", host, depth)
    assert saferm.remove_entries(root, ["uid-deep"]) == ["uid-deep"]
    assert os.listdir(root) == [] and planted.intact(host)


def test_saferm_deep_walk_itself(tmp_path: Path, host: dict[str, Path]) -> None:
    """The fallback for deep trees, on a tree of links and nested dirs (``rmtree`` handles it otherwise)."""
    root = tmp_path / "root"
    _links(root / "t", host)
    _deep(root / "t" / "main" / "deep", host, 1200)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        saferm._rmtree_deep(fd, "t")
    finally:
        os.close(fd)
    assert os.listdir(root) == [] and planted.intact(host)
