"""The driver's memory ledgers: exact under concurrent processes, reclaim dead processes, health."""

from __future__ import annotations

import json
import multiprocessing as mp
import os

import pytest

from mockgpu.gpu.driver import Driver, write_node_driver
from mockgpu.gpu.ledger import OutOfMemory, ProcessIdentity

MIB = 1 << 20


def _worker(dirname: str, uuid: str, seed: int, results, done) -> None:
    """Allocate and free in a pattern of its own; report what it still holds; stay alive until told."""
    drv = Driver(dirname)
    me = ProcessIdentity(os.getpid(), "ns", f"pod-{seed}", "c", "worker")
    held: dict[int, int] = {}
    for k in range(60):
        size = (seed * 7 + k * 13) % 17 + 1
        held[drv.allocate(uuid, me, size * MIB)] = size * MIB
        if k % 3 == 2:
            h = min(held)
            assert drv.free(uuid, me, h) == held.pop(h)
    results.put((os.getpid(), sum(held.values())))
    done.wait(60)


def test_concurrent_processes_lose_and_double_count_nothing(node_dir):
    drv, _ = node_dir("whole-0")
    uuid = drv.inventory.gpus[0].uuid
    ctx = mp.get_context("fork")
    results, done = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_worker, args=(str(drv.dir), uuid, seed, results, done)) for seed in range(4)]
    for p in procs:
        p.start()
    try:
        held = dict(results.get(timeout=60) for _ in procs)
        st = drv.ledger(uuid).state()
        assert st["used_bytes"] == sum(held.values()) > 0
        assert {p["pid"]: p["used_bytes"] for p in st["processes"]} == held
    finally:
        done.set()
        for p in procs:
            p.join(timeout=30)
    assert drv.ledger(uuid).state()["used_bytes"] == 0  # all four exited: reclaimed


def _allocate_and_die(dirname: str, uuid: str) -> None:
    Driver(dirname).allocate(uuid, ProcessIdentity(os.getpid(), pod="ghost"), 1024 * MIB)
    os._exit(0)  # no release: like a SIGKILLed workload


def test_dead_process_memory_is_reclaimed_but_live_is_kept(node_dir):
    drv, _ = node_dir("whole-0")
    uuid = drv.inventory.gpus[1].uuid
    me = ProcessIdentity(os.getpid(), pod="alive")
    drv.allocate(uuid, me, 10 * MIB)
    p = mp.get_context("fork").Process(target=_allocate_and_die, args=(str(drv.dir), uuid))
    p.start()
    p.join(timeout=30)
    st = drv.ledger(uuid).state()
    assert st["used_bytes"] == 10 * MIB
    assert [x["pod"] for x in st["processes"]] == ["alive"]
    drv.release(uuid, me)
    assert drv.ledger(uuid).state()["used_bytes"] == 0


def test_out_of_memory_and_replicas_share_the_physical_ledger(node_dir):
    drv, _ = node_dir("whole-0")
    g = drv.inventory.gpus[2]
    me = ProcessIdentity(os.getpid())
    drv.allocate(f"{g.uuid}::0", me, (g.memory_mib - 100) * MIB)
    assert drv.mem_info(f"{g.uuid}::3") == (100 * MIB, g.memory_mib * MIB)
    with pytest.raises(OutOfMemory, match=r"requested 209715200 bytes, 104857600 free"):
        drv.allocate(f"{g.uuid}::1", me, 200 * MIB)
    drv.release(g.uuid, me)


def test_mig_instances_have_their_own_ledgers(node_dir):
    drv, _ = node_dir("mig-0")
    a, b = drv.inventory.gpus[1].mig[:2]
    me = ProcessIdentity(os.getpid())
    drv.allocate(a.uuid, me, a.memory_mib * MIB)
    with pytest.raises(OutOfMemory):
        drv.allocate(a.uuid, me, 1)
    assert drv.mem_info(b.uuid) == (b.memory_mib * MIB, b.memory_mib * MIB)
    snap = drv.snapshot()
    assert snap[drv.inventory.gpus[1].uuid]["used_mib"] == a.memory_mib
    assert snap[a.uuid]["processes"][0]["pid"] == os.getpid()


def test_rewriting_the_driver_never_clobbers_ledgers(node_dir):
    drv, _ = node_dir("whole-0")
    uuid = drv.inventory.gpus[0].uuid
    drv.allocate(uuid, ProcessIdentity(os.getpid()), 7 * MIB)
    write_node_driver(drv.dir, drv.inventory)
    assert Driver(drv.dir).mem_info(uuid)[0] == (drv.inventory.gpus[0].memory_mib - 7) * MIB


def test_xids_make_devices_unhealthy_except_application_xids(node_dir):
    drv, _ = node_dir("mig-0")
    g0, g1 = drv.inventory.gpus
    drv.inject_xid(g1.mig[2].uuid, 31)  # application error: still healthy
    drv.inject_xid(g0.uuid, 79)  # fallen off the bus: the GPU and all its instances
    h = Driver(drv.dir).health()  # persisted: a fresh reader sees it
    assert not h[g0.uuid].healthy and all(not h[m.uuid].healthy for m in g0.mig)
    assert h[g1.mig[2].uuid].healthy and h[g1.mig[2].uuid].xids == (31,)
    drv.clear_xids(g0.uuid)
    assert drv.health()[g0.uuid].healthy
    assert drv.snapshot()[g1.mig[2].uuid]["xids"] == [31]


def _allocate_then_wait(dirname: str, uuid: str, ready, go) -> None:
    Driver(dirname).allocate(uuid, ProcessIdentity(os.getpid(), pod="elsewhere"), 64 * MIB)
    ready.set()
    go.wait(60)
    os._exit(0)


def test_process_in_another_pid_namespace_is_reclaimed_through_its_lease(node_dir):
    drv, _ = node_dir("whole-0")
    uuid = drv.inventory.gpus[3].uuid
    ctx = mp.get_context("fork")
    ready, go = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_allocate_then_wait, args=(str(drv.dir), uuid, ready, go))
    child.start()
    try:
        assert ready.wait(60)
        # Pretend the child lives in another container: /proc cannot tell, only its lease can.
        path = drv.dir / "ledgers" / f"{uuid}.json"
        data = json.loads(path.read_text())
        (entry,) = data["processes"].values()
        data["processes"] = {f"pid:[1]/{entry['pid']}": {**entry, "pidns": "pid:[1]"}}
        path.write_text(json.dumps(data))
        assert drv.ledger(uuid).state()["used_bytes"] == 64 * MIB  # lease held: alive
    finally:
        go.set()
        child.join(timeout=30)
    assert drv.ledger(uuid).state()["used_bytes"] == 0  # lease released by the kernel: reclaimed
    assert not list((drv.dir / "ledgers" / "procs").glob(f"*-{child.pid}.lock"))


def test_unleased_entry_of_another_pid_namespace_is_left_alone(node_dir):
    drv, _ = node_dir("whole-0")
    uuid = drv.inventory.gpus[3].uuid
    led = drv.ledger(uuid)
    led.register(ProcessIdentity(999999, pod="foreign"))  # on behalf of another process: no lease
    path = drv.dir / "ledgers" / f"{uuid}.json"
    data = json.loads(path.read_text())
    ((_, entry),) = data["processes"].items()
    assert entry["lease"] is None
    data["processes"] = {"pid:[1]/999999": {**entry, "pidns": "pid:[1]"}}
    path.write_text(json.dumps(data))
    assert [p["pod"] for p in led.state()["processes"]] == ["foreign"]
