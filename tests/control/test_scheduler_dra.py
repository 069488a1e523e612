"""The scheduler loop with ResourceClaims: informers, assumed claims, PreEnqueue gating, PreBind then bind.

Pods and nodes live in the real embedded API server. Its ``resource.k8s.io/v1`` API is being built on another
branch, so DeviceClasses, ResourceSlices and ResourceClaims come from ``FakeDra`` here: an in-memory store
with list, watch (a streamed response read by the real informer code), GET and PUT (``resourceVersion``
checked, 409 when stale) of claims and their ``status``. Every claim write and every binding is logged in
order, so the tests can check PreBind happens before the bind, as upstream.
"""

from __future__ import annotations

import copy
import json
import queue
import re
import threading
import time
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from mockgpu.config import load_spec
from mockgpu.control.scheduler import Scheduler, load_scheduler_config
from tests.sched.dra_builders import CLASSES, claim, claim_pod, node_slices, request

from .conftest import Env

GROUP = "resource.k8s.io/v1"


class _Stream:
    def __init__(self) -> None:
        self.q: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()

    def stream(self, amt: Any = None, decode_content: bool = False):  # noqa: ARG002
        while (chunk := self.q.get()) is not None:
            yield chunk

    def shutdown(self) -> None:
        self.q.put(None)

    def close(self) -> None:
        self.q.put(None)


class FakeDra:
    def __init__(self) -> None:
        self.objs: dict[str, dict[str, dict]] = {"deviceclasses": {}, "resourceslices": {}, "resourceclaims": {},
                                                 "devicetaintrules": {}}
        self.rv = 1
        self.lock = threading.Lock()
        self.watchers: list[tuple[str, _Stream]] = []
        self.log: list[tuple[str, str]] = []  # (what, name) in order

    @staticmethod
    def _key(obj: dict) -> str:
        meta = obj["metadata"]
        return f"{meta.get('namespace', '')}/{meta['name']}" if meta.get("namespace") else meta["name"]

    def put(self, plural: str, obj: dict) -> dict:
        with self.lock:
            self.rv += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.rv)
            typ = "MODIFIED" if self._key(obj) in self.objs[plural] else "ADDED"
            self.objs[plural][self._key(obj)] = obj
            for p, s in self.watchers:
                if p == plural:
                    s.q.put(json.dumps({"type": typ, "object": obj}).encode() + b"\n")
            return copy.deepcopy(obj)

    # the RawApi methods the scheduler calls for resource.k8s.io
    def list(self, plural: str) -> dict:
        with self.lock:
            return {"metadata": {"resourceVersion": str(self.rv)},
                    "items": [copy.deepcopy(o) for o in self.objs[plural].values()]}

    def watch(self, plural: str) -> _Stream:
        s = _Stream()
        with self.lock:
            self.watchers.append((plural, s))
        return s

    def get_claim(self, ns: str, name: str) -> dict:
        with self.lock:
            obj = self.objs["resourceclaims"].get(f"{ns}/{name}")
        if obj is None:
            raise ApiException(status=404, reason="Not Found")
        return copy.deepcopy(obj)

    def update_claim(self, obj: dict, status: bool) -> dict:
        with self.lock:
            current = self.objs["resourceclaims"][self._key(obj)]
            if current["metadata"]["resourceVersion"] != obj["metadata"].get("resourceVersion"):
                raise ApiException(status=409, reason="Conflict")
            new = copy.deepcopy(current)
            if status:
                new["status"] = copy.deepcopy(obj.get("status") or {})
            else:
                new["metadata"]["finalizers"] = list(obj["metadata"].get("finalizers") or [])
            self.log.append(("claim/status" if status else "claim", obj["metadata"]["name"]))
        return self.put("resourceclaims", new)


class Api:
    """The scheduler's RawApi with resource.k8s.io served by FakeDra; bindings are logged too."""

    def __init__(self, real: Any, fake: FakeDra) -> None:
        self.real, self.fake = real, fake

    def list(self, plural: str, group: str = "") -> dict:
        return self.fake.list(plural) if group == GROUP else self.real.list(plural)

    def watch(self, plural: str, rv: str, timeout: int, read_timeout: float, group: str = "") -> Any:
        return self.fake.watch(plural) if group == GROUP else self.real.watch(plural, rv, timeout, read_timeout)

    def get_claim(self, ns: str, name: str) -> dict:
        return self.fake.get_claim(ns, name)

    def update_claim(self, obj: dict, *, status: bool = False) -> dict:
        return self.fake.update_claim(obj, status)

    def bind(self, ns: str, name: str, *args: Any) -> None:
        with self.fake.lock:
            self.fake.log.append(("bind", name))
        self.real.bind(ns, name, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.fixture
def dra(seed: Env):
    fake = FakeDra()
    for c in CLASSES.values():
        fake.put("deviceclasses", c)
    for node in ("gpu-1", "gpu-2"):  # one A100 each; gpu-0 and gpu-3 publish no slices (yet)
        for s in node_slices(node, "A100-SXM4-80GB", 1):
            fake.put("resourceslices", s)
    cfg = load_scheduler_config(load_spec(seed.cluster.spec.source))
    s = Scheduler(seed.cluster.api_client(), cfg, unschedulable_timeout=300.0)
    s.api = Api(s.api, fake)
    s.recorder.api = s.api
    for inf in s._informers:
        inf.api = s.api
    s.start()
    seed.schedulers.append(s)
    assert s.wait_synced(10)
    return seed, fake, s


def _pod(name: str, *claims: str) -> dict:
    p = claim_pod(name, *claims)
    del p["metadata"]["uid"]
    return p


def _claim(name: str) -> dict:
    return claim(name, request("gpu"))


def test_claims_are_allocated_then_pods_bound_on_distinct_devices(dra):
    env, fake, _ = dra
    for name in ("c1", "c2", "c3"):
        fake.put("resourceclaims", _claim(name))
    for i in (1, 2):
        env.create(_pod(f"p{i}", f"c{i}"))
    bound = {i: env.wait_bound(f"p{i}") for i in (1, 2)}
    assert {p.spec.node_name for p in bound.values()} == {"gpu-1", "gpu-2"}  # one GPU each: never the same
    for i, pod in bound.items():
        stored = fake.get_claim("default", f"c{i}")
        alloc = stored["status"]["allocation"]
        assert alloc["devices"]["results"] == [{"request": "gpu", "driver": "gpu.mockgpu.io",
                                                "pool": pod.spec.node_name, "device": "gpu-0"}]
        assert alloc["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [pod.spec.node_name]}]}]}
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", alloc["allocationTimestamp"])  # as v1.37 stamps it
        assert stored["status"]["reservedFor"] == [{"resource": "pods", "name": f"p{i}", "uid": pod.metadata.uid}]
        assert stored["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
        order = [w for w, n in fake.log if n in (f"c{i}", f"p{i}")]
        assert order == ["claim", "claim/status", "bind"]  # PreBind before the binding
        notes = pod.metadata.annotations
        assert json.loads(notes["mockgpu.io/dra-allocation"]) == {f"c{i}": [{"request": "gpu", "device": "gpu-0"}]}
        assert json.loads(notes["mockgpu.io/filter-result"])["gpu-0"]["DynamicResources"] == \
            "cannot allocate all claims"

    env.create(_pod("p3", "c3"))
    cond = env.wait_unschedulable("p3")
    assert cond.message == ("0/4 nodes are available: 4 cannot allocate all claims. preemption: 0/4 nodes are "
                            "available: 4 Preemption is not helpful for scheduling.")
    for s in node_slices("gpu-3", "A100-SXM4-80GB", 1):  # a driver publishes devices: the pod is retried
        fake.put("resourceslices", s)
    assert env.wait_bound("p3", timeout=15).spec.node_name == "gpu-3"


def test_device_taint_rule_keeps_pods_off_until_its_effect_changes(dra):
    """A DeviceTaintRule from the watch joins the devices' taints; changing its effect re-queues the pod."""
    env, fake, _ = dra
    rule = {"apiVersion": GROUP, "kind": "DeviceTaintRule", "metadata": {"name": "all-gpus"},
            "spec": {"deviceSelector": {"driver": "gpu.mockgpu.io"},
                     "taint": {"key": "gpu.mockgpu.io/xid", "value": "79", "effect": "NoSchedule"}}}
    fake.put("devicetaintrules", rule)
    fake.put("resourceclaims", _claim("ct"))
    env.create(_pod("pt", "ct"))
    cond = env.wait_unschedulable("pt")
    assert cond.message == ("0/4 nodes are available: 4 cannot allocate all claims. preemption: 0/4 nodes are "
                            "available: 4 Preemption is not helpful for scheduling.")
    rule["spec"]["taint"]["effect"] = "None"
    fake.put("devicetaintrules", rule)
    assert env.wait_bound("pt", timeout=15).spec.node_name in ("gpu-1", "gpu-2")


def test_pod_waits_silently_for_its_claim(dra):
    env, fake, _ = dra
    env.create(_pod("early", "later"))
    time.sleep(1.5)
    pod = env.pod("early")
    assert pod.spec.node_name is None
    assert not [c for c in pod.status.conditions or [] if c.type == "PodScheduled"]  # PreEnqueue writes nothing
    assert not [e for e in env.events("early") if e.reason == "FailedScheduling"]
    fake.put("resourceclaims", _claim("later"))
    assert env.wait_bound("early", timeout=15).spec.node_name in ("gpu-1", "gpu-2")


def test_allocated_claim_pins_the_pod_to_its_node(dra):
    env, fake, _ = dra
    fake.put("resourceclaims", claim("shared", request("gpu"), allocated=[("gpu", "gpu-2", "gpu-0")]))
    env.create(_pod("user", "shared"))
    pod = env.wait_bound("user")
    assert pod.spec.node_name == "gpu-2"
    assert json.loads(pod.metadata.annotations["mockgpu.io/dra-allocation"]) == {
        "shared": [{"request": "gpu", "device": "gpu-0"}]}  # allocated before, shown all the same
    stored = fake.get_claim("default", "shared")
    assert [r["name"] for r in stored["status"]["reservedFor"]] == ["user"]
    assert [w for w, n in fake.log if n == "shared"] == ["claim/status"]  # reservation only, no finalizer PUT


def test_missing_class_then_created(dra):
    env, fake, _ = dra
    fake.put("resourceclaims", claim("odd", request("gpu", "odd-class")))
    env.create(_pod("needs-class", "odd"))
    cond = env.wait_unschedulable("needs-class")
    assert (cond.reason, cond.message) == ("Unschedulable", "0/4 nodes are available: request gpu: device class "
                                           "odd-class does not exist. preemption: 0/4 nodes are available: 4 "
                                           "Preemption is not helpful for scheduling.")
    fake.put("deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                               "metadata": {"name": "odd-class"},
                               "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.mockgpu.io"'}}]}})
    assert env.wait_bound("needs-class", timeout=15).spec.node_name in ("gpu-1", "gpu-2")


def test_cel_runtime_error_is_a_scheduler_error(dra):
    env, fake, _ = dra
    fake.put("resourceclaims", claim("bad", request("gpu", selectors=[
        'device.attributes["gpu.mockgpu.io"].nvlinkIsland == 0'])))
    env.create(_pod("cel", "bad"))
    cond = env.wait_unschedulable("cel")
    assert cond.reason == "SchedulerError"
    assert cond.message.startswith('running "DynamicResources" filter plugin: claim default/bad: selector #0 on '
                                   "device gpu.mockgpu.io/gpu-")
    assert ": CEL runtime error: no such key: nvlinkIsland. consider using CEL optional chaining" in cond.message
