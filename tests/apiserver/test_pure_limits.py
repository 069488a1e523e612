"""The API server's bounds on hostile input (``limits``) and the watchers' bounded buffers, without HTTP."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from mockgpu.control.apiserver import limits, watch
from mockgpu.control.apiserver.patch import apply_patch
from mockgpu.control.apiserver.request import decode_body
from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.store import Store
from mockgpu.control.apiserver.watch import MAX_PENDING, WatchHub

limits.ensure_recursion_headroom()  # as the server does: deep values below are built here too


def alias_bomb(levels: int, width: int = 10) -> str:
    """The classic "billion laughs": each level names the previous one ``width`` times."""
    lines = ["a0: &a0 [" + ",".join(["x"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\nx:\n  " + "\n  ".join(lines) + "\n"


ALIASES = [  # (case, document, expected: a value, or the error text)
    ("plain", "a: 1\nb: [x, z]\n", {"a": 1, "b": ["x", "z"]}),
    # goyaml v2 (sigs.k8s.io/yaml's) resolves y/Y/n/N as booleans too, unlike PyYAML's YAML 1.1 resolver
    ("goyaml-v2-bools", "a: [y, Y, n, N, yes, off, yy, 'y']\n", {"a": [True, True, False, False, True, False, "yy",
                                                                   "y"]}),
    ("few-aliases", "base: &b {cpu: 1}\nx: *b\nz: *b\n", {"base": {"cpu": 1}, "x": {"cpu": 1}, "z": {"cpu": 1}}),
    ("bool-key", "y: 1\nn: 2\n", {"true": 1, "false": 2}),  # YAMLToJSON writes a bool key as its text
    ("merge-key", "base: &b {cpu: 1}\nx: {<<: *b, mem: 2}\n", {"base": {"cpu": 1}, "x": {"cpu": 1, "mem": 2}}),
    ("bomb-1e6", alias_bomb(6), "yaml: document contains excessive aliasing"),
    ("bomb-1e9", alias_bomb(9), "yaml: document contains excessive aliasing"),
    ("self-reference", "a: &a [1, *a]\n", "yaml: anchor value contains itself"),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in ALIASES], ids=[c[0] for c in ALIASES])
def test_yaml_aliases_are_bounded_as_goyaml(text, expected):
    if isinstance(expected, str):
        with pytest.raises(yaml.YAMLError, match=expected):
            limits.load_yaml(text)
    else:
        assert limits.load_yaml(text) == expected


def test_a_long_string_named_many_times_is_refused_before_expansion():
    """Under goyaml's step rule (100 aliases), but 100 x 1 MiB: refused before it is expanded."""
    text = "s: &s " + "x" * 2**20 + "\nl: [" + ",".join(["*s"] * 100) + "]\n"
    with pytest.raises(StatusError) as err:
        limits.load_yaml(text)
    assert err.value.code == 413


@pytest.mark.parametrize("ratio_at,expected", [(1000, 0.99), (400_000, 0.99), (2_200_000, 0.545),
                                               (4_000_000, 0.10), (9_000_000, 0.10)])
def test_allowed_alias_ratio_is_goyamls(ratio_at, expected):
    assert limits.allowed_alias_ratio(ratio_at) == pytest.approx(expected)


def nested(depth: int) -> bytes:
    """An object whose field ``x`` nests arrays: ``depth`` levels in all, counting the object."""
    return b'{"x":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


@pytest.mark.parametrize("depth,ok", [(2, True), (990, True), (5000, True), (10000, True), (10001, False),
                                      (30000, False)])
def test_json_nesting_limit_is_upstreams(depth, ok):
    if ok:
        assert decode_body(nested(depth), "application/json")["x"] is not None
    else:
        with pytest.raises(StatusError) as err:
            decode_body(nested(depth), "application/json", "ConfigMap")
        assert err.value.code == 400 and "exceeded max depth" in err.value.status["message"]


def test_exceeds_depth_is_iterative():
    value: list = []
    for _ in range(100_000):  # far past Python's recursion limit
        value = [value]
    assert limits.exceeds_depth(value) and not limits.exceeds_depth([[1]], 2) and limits.exceeds_depth([[1]], 1)


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "i"}]}}
PATCHES = [  # (case, content type, body, code or the patched object's check)
    ("merge-number", "application/merge-patch+json", b"1", 400),
    ("merge-null", "application/merge-patch+json", b"null", 400),
    ("merge-array", "application/merge-patch+json", b"[1]", 400),
    ("strategic-number", "application/strategic-merge-patch+json", b"1", 400),
    ("strategic-null", "application/strategic-merge-patch+json", b"null", POD),
    ("json-null", "application/json-patch+json", b"null", POD),
    ("json-number", "application/json-patch+json", b"1", 400),
    ("json-ops-over-10000", "application/json-patch+json",
     json.dumps([{"op": "test", "path": "/kind", "value": "Pod"}] * 10001).encode(), 413),
    ("json-copy-doubling", "application/json-patch+json", json.dumps(
        [{"op": "add", "path": "/metadata/annotations", "value": {"a": "y" * 1000}}]
        + [{"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/k{i}"}
           for i in range(13)]).encode(), 422),
    ("json-deep-add", "application/json-patch+json", json.dumps(
        [{"op": "add", "path": "/metadata/x", "value": {}},  # the body is within the limit, the result not
         {"op": "add", "path": "/metadata/x/y", "value": json.loads(nested(9998))}]).encode(), 422),
]


@pytest.mark.parametrize("ctype,body,expected", [c[1:] for c in PATCHES], ids=[c[0] for c in PATCHES])
def test_patch_bodies_are_bounded_and_4xx(ctype, body, expected):
    if isinstance(expected, int):
        with pytest.raises(StatusError) as err:
            apply_patch(POD, body, ctype)
        assert err.value.code == expected
    else:
        assert apply_patch(POD, body, ctype) == expected


@pytest.mark.parametrize("size,ok", [(1024, True), (limits.MAX_OBJECT_BYTES - 200, True),
                                     (limits.MAX_OBJECT_BYTES, False), (3 * 1024 * 1024, False)])
def test_store_refuses_objects_over_etcds_request_limit(tmp_path, size, ok):
    store = Store(tmp_path / "s.db")
    obj = {"metadata": {"name": "big", "namespace": "default"}, "data": {"a": "x" * size}}
    if ok:
        store.create("configmaps", obj)
    else:
        with pytest.raises(StatusError) as err:
            store.create("configmaps", obj)
        assert err.value.code == 500 and "reason" not in err.value.status
        assert store.rv == 0 and store.get("configmaps", "default", "big") is None


def _cm(i: int) -> dict:
    return {"metadata": {"name": f"c{i}", "namespace": "default"}}


def test_a_watcher_too_far_behind_is_terminated_and_released(tmp_path):
    store = Store(tmp_path / "s.db")
    hub = WatchHub(store)
    slow = hub.subscribe("configmaps", None, lambda o: True, store.rv)
    fast = hub.subscribe("configmaps", None, lambda o: True, store.rv)
    for i in range(MAX_PENDING):
        store.create("configmaps", _cm(i))
        fast.pending.clear()  # a client that keeps up
    assert not slow.overflowed and len(slow.pending) == MAX_PENDING
    store.create("configmaps", _cm(MAX_PENDING))
    assert slow.overflowed and not slow.pending and hub.count() == 1  # dropped, the other stays
    assert not fast.overflowed and len(fast.pending) == 1


def test_initial_events_do_not_count_against_the_live_buffer(tmp_path):
    store = Store(tmp_path / "s.db")
    hub = WatchHub(store)
    initial = [store.create("configmaps", _cm(i)) for i in range(MAX_PENDING + 10)]
    w = hub.subscribe("configmaps", None, lambda o: True, store.rv, initial=initial)
    store.create("configmaps", _cm(-1))
    assert not w.overflowed and w.waiting == MAX_PENDING + 11


def test_each_event_is_encoded_once_for_all_watchers(tmp_path):
    store = Store(tmp_path / "s.db")
    hub = WatchHub(store)
    watchers = [hub.subscribe("configmaps", None, lambda o: True, store.rv) for _ in range(3)]
    store.create("configmaps", _cm(1))
    calls = []

    def encode_line(obj):
        calls.append(obj)
        return json.dumps(obj).encode()

    lines = [hub.encoded(t, o, "", lambda o=o: encode_line(o)) for w in watchers for t, o in w.pending]
    assert len(calls) == 1 and lines[0] is lines[1] is lines[2]
    for w in watchers:
        hub.unsubscribe(w)
    assert hub.count() == 0 and hub.cached_lines() == 0


@pytest.mark.parametrize("events,size,cached", [
    (20, 1000, 20),  # far under both bounds: every line kept
    (watch._ENCODED_CACHE + 50, 10, watch._ENCODED_CACHE),  # the count bound
    (20, watch._ENCODED_CACHE_BYTES // 4, 3),  # the byte bound: large objects do not pin their lines
    (2, watch._ENCODED_CACHE_BYTES + 1, 0),  # a line over the whole bound is sent, never kept
])
def test_encoded_lines_are_bounded_by_count_and_by_bytes(tmp_path, events, size, cached):
    store = Store(tmp_path / "s.db")
    hub = WatchHub(store)
    hub.subscribe("configmaps", None, lambda o: True, store.rv)
    objs = [{"metadata": {"name": f"c{i}"}, "data": {"a": "x" * size}} for i in range(events)]
    for o in objs:
        line = hub.encoded("ADDED", o, "", lambda o=o: json.dumps(o).encode())
        assert len(line) > size  # the encoded line itself is always returned
    assert hub.cached_lines() == cached
    assert hub.cached_bytes() <= watch._ENCODED_CACHE_BYTES


@pytest.mark.parametrize("writes,size,history,history_bytes,retained", [
    (50, 1000, 10000, 10**9, 50),  # far under both bounds: everything is kept
    (50, 1000, 10, 10**9, 10),  # the count bound, in batches: 50 writes leave the last 10
    (50, 100_000, 10000, 1_000_000, 8),  # the byte bound: down to 9/10 of 1 MB of ~100 kB events
    (3, 400_000, 10000, 300_000, 1),  # one event over the bound alone is still kept (the newest)
])
def test_history_is_bounded_by_count_and_by_bytes(tmp_path, writes, size, history, history_bytes, retained):
    store = Store(tmp_path / "s.db", history=history, history_bytes=history_bytes)
    for i in range(writes):
        store.create("configmaps", {"metadata": {"name": f"c{i}", "namespace": "default"}, "data": {"a": "x" * size}})
    kept = list(store.history_after(0, "configmaps"))
    assert len(kept) == pytest.approx(retained, abs=1) and kept[-1].rv == store.rv
    assert store.compacted == (kept[0].rv - 1 if len(kept) < writes else 0)
    assert store._bytes <= max(history_bytes, size + 200)
    reopened = Store(tmp_path / "s.db", history=history, history_bytes=history_bytes)  # what a restart finds
    assert [e.rv for e in reopened.history_after(0, "configmaps")] == [e.rv for e in kept]


def test_continue_tokens_follow_etcds_compaction_clock_not_the_watch_history(tmp_path):
    """kube-apiserver compacts etcd every 5 min to the revision it recorded 5 min before: a list's continue
    token stays good that long, however much watch history the byte bound has dropped."""
    now = [0.0]
    store = Store(tmp_path / "s.db", history_bytes=1000, clock=lambda: now[0])
    big = {"a": "x" * 2000}
    for i in range(3):
        store.create("configmaps", {"metadata": {"name": f"c{i}", "namespace": "default"}, "data": big})
    assert store.compacted >= 2 and store.list_compacted == 0  # history dropped, lists unaffected
    now[0] = 301.0
    store.create("configmaps", _cm(10))  # the first interval: records rv 4, compacts nothing yet
    assert store.list_compacted == 0
    now[0] = 602.0
    store.create("configmaps", _cm(11))  # the next: compacts to what the previous one recorded
    assert store.list_compacted == 4


def test_large_inputs_hand_freed_memory_back_once_per_burst(monkeypatch):
    calls = []
    trimmer = limits._Trimmer()
    if trimmer._trim is None:
        pytest.skip("no glibc malloc_trim here (not Linux/glibc)")
    monkeypatch.setattr(trimmer, "_trim", lambda pad: calls.append(pad))
    monkeypatch.setattr(limits, "_TRIM_DELAY", 0.05)
    trimmer.note(limits.LARGE_INPUT_BYTES - 1)  # a small request: nothing to hand back
    time.sleep(0.2)
    assert calls == []
    for _ in range(5):  # a burst of large ones: one trim after it
        trimmer.note(limits.LARGE_INPUT_BYTES)
    deadline = time.monotonic() + 5
    while not calls and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    assert calls == [0] and trimmer.trims == 1
