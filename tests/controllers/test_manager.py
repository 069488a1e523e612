"""The controller manager's cache and work queue (no cluster): stale watch events never move the cache back,
and a key is synced once however often it changes while queued."""

from __future__ import annotations

import threading
import time

from mockgpu.control.controllers.manager import Cache, WorkQueue


def obj(name: str, rv: int, uid: str = "u1", owner: str | None = None) -> dict:
    meta = {"name": name, "namespace": "ns", "resourceVersion": str(rv), "uid": uid}
    if owner:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": owner, "controller": True}]
    return {"metadata": meta}


def test_cache_keeps_the_newest_version():
    c = Cache()
    assert c.put("pods", obj("a", 5))
    assert not c.put("pods", obj("a", 4))  # a late watch event after our own write's answer
    assert c.get("pods", "ns", "a")["metadata"]["resourceVersion"] == "5"
    assert c.put("pods", obj("a", 6))


def test_a_removed_object_is_not_resurrected_by_an_older_event():
    c = Cache()
    c.put("pods", obj("a", 5))
    c.remove("pods", obj("a", 7))
    assert c.get("pods", "ns", "a") is None
    assert not c.put("pods", obj("a", 6))
    assert c.put("pods", obj("a", 8, uid="u2"))  # a new pod of the same name


def test_remove_ignores_another_object_of_the_same_name():
    c = Cache()
    c.put("pods", obj("a", 5, uid="new"))
    assert c.remove("pods", obj("a", 3, uid="old")) is None
    assert c.get("pods", "ns", "a") is not None


def test_sync_reports_what_vanished_and_owned_follows_controller_refs():
    c = Cache()
    c.put("pods", obj("a", 1, owner="rs-uid"))
    c.put("pods", obj("b", 2, owner="other"))
    gone = c.sync("pods", [obj("a", 3, owner="rs-uid"), obj("c", 4, owner="rs-uid")])
    assert [g["metadata"]["name"] for g in gone] == ["b"]
    owner = {"metadata": {"name": "rs", "namespace": "ns", "uid": "rs-uid"}}
    assert [p["metadata"]["name"] for p in c.owned("pods", owner)] == ["a", "c"]
    assert [(pl, o["metadata"]["name"]) for pl, o in c.dependents("ns", "rs-uid")] == [("pods", "a"), ("pods", "c")]


def test_work_queue_deduplicates_and_delays():
    q = WorkQueue()
    q.add(("Job", "ns", "j"))
    q.add(("Job", "ns", "j"))
    q.add(("Job", "ns", "k"), after=0.2)
    t0 = time.monotonic()
    assert q.get() == ("Job", "ns", "j")
    assert q.get() == ("Job", "ns", "k")  # the duplicate was dropped; the delayed key waited
    assert time.monotonic() - t0 >= 0.15


def test_work_queue_close_wakes_a_waiting_worker():
    q = WorkQueue()
    got: list = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    time.sleep(0.05)
    q.close()
    t.join(2)
    assert not t.is_alive() and got == [None]


def test_node_heartbeats_do_not_requeue_daemonsets():
    from mockgpu.control.controllers.manager import node_fingerprint

    node = {"metadata": {"name": "n1", "labels": {"a": "1"}, "resourceVersion": "5"},
            "spec": {"taints": []},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t1"}]}}
    beat = {**node, "status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t2"}]}}
    assert node_fingerprint(beat) == node_fingerprint(node)
    for changed in ({**node, "metadata": {**node["metadata"], "labels": {"a": "2"}}},
                    {**node, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}},
                    {**node, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}):
        assert node_fingerprint(changed) != node_fingerprint(node)
