"""Fault injection on kind, against a scripted ``docker``: the commands ``KindFaults`` runs in the kind nodes (read
with ``cat``, replace with a temporary file renamed into place, as root in the node), which node container each
spec node is, how GPUs are named, and its one-line refusals. (A real kind cluster is not started here.)"""

from __future__ import annotations

import json

import pytest

from mockgpu.backends.common.run import Result
from mockgpu.backends.kind.faults import WRITE, KindFaults
from mockgpu.config.clusterspec import parse_spec
from mockgpu.config.inventory import node_inventory
from mockgpu.errors import MockgpuError

from .conftest import FakeRunner

GPU_POOL = {"name": "gpu", "count": 2, "gpu": {"model": "A100-SXM4-80GB", "count": 2}}
SPEC = parse_spec({"apiVersion": "mockgpu.io/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": "k"},
                   "spec": {"nodePools": [{"name": "cpu", "count": 1}, GPU_POOL]}})
FILE = "/var/lib/mockgpu/faults/xids.json"


class Nodes:
    """The kind nodes' faults files, as ``docker exec`` would find them."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def __call__(self, args: list[str], stdin: str | None) -> Result:
        if args[:2] == ["docker", "exec"] and args[3:] == ["cat", FILE]:
            text = self.files.get(args[2])
            return Result(0, text, "") if text is not None else \
                Result(1, "", f"cat: {FILE}: No such file or directory")
        if args[:3] == ["docker", "exec", "-i"] and args[4:] == ["sh", "-c", WRITE]:
            self.files[args[3]] = stdin or ""
            return Result(0, "", "")
        return Result(1, "", f"unexpected: {args}")


@pytest.fixture
def nodes() -> Nodes:
    return Nodes()


def test_inject_writes_inside_the_spec_nodes_kind_container(nodes: Nodes) -> None:
    runner = FakeRunner(nodes)
    faults = KindFaults(runner, SPEC, "lab")
    g1 = node_inventory(SPEC, "gpu-1").gpus[1]
    rec = faults.inject("gpu-1", 1, 79)
    assert (rec.node, rec.gpu, rec.uuid, rec.xid) == ("gpu-1", 1, g1.uuid, 79)
    # kind names containers <cluster>-control-plane, -worker, -worker2 ... in spec node order: gpu-1 is the third
    assert runner.calls == [["docker", "exec", "lab-worker2", "cat", FILE],
                            ["docker", "exec", "-i", "lab-worker2", "sh", "-c", WRITE]]
    assert [(e["uuid"], e["xid"]) for e in json.loads(nodes.files["lab-worker2"])] == [(g1.uuid, 79)]
    assert WRITE == ("umask 022 && mkdir -p /var/lib/mockgpu/faults && cat > /var/lib/mockgpu/faults/.xids.json.tmp"
                     " && mv -f /var/lib/mockgpu/faults/.xids.json.tmp /var/lib/mockgpu/faults/xids.json")


def test_list_and_clear(nodes: Nodes) -> None:
    faults = KindFaults(FakeRunner(nodes), SPEC, "lab")
    g0 = node_inventory(SPEC, "gpu-0").gpus[0]
    faults.inject("gpu-0", g0.uuid, 48)
    faults.inject("gpu-1", 0, 79)
    assert [(r.node, r.gpu, r.xid) for r in faults.list()] == [("gpu-0", 0, 48), ("gpu-1", 0, 79)]
    assert faults.clear("gpu-0", 0) == 1
    assert faults.clear() == 1 and faults.list() == []
    assert faults.clear() == 0


@pytest.mark.parametrize(("call", "message"), [
    (lambda f: f.inject("nope-0", 0, 79), "cluster lab has no node 'nope-0'"),
    (lambda f: f.inject("cpu-0", 0, 79), "node cpu-0 has no GPUs"),
    (lambda f: f.inject("gpu-0", 5, 79), r"node gpu-0 has no GPU '5' \(its GPUs: 0, 1"),
    (lambda f: f.inject("gpu-0", 0, 0), "an Xid is a positive integer, not 0"),
    (lambda f: f.clear(gpu=0), r"say which node the GPU is on \(--node\)"),
], ids=["unknown-node", "no-gpus", "unknown-gpu", "bad-xid", "gpu-without-node"])
def test_refusals(nodes: Nodes, call, message: str) -> None:
    with pytest.raises(MockgpuError, match=message):
        call(KindFaults(FakeRunner(nodes), SPEC, "lab"))


def test_a_node_that_cannot_be_read_is_one_line() -> None:
    faults = KindFaults(FakeRunner(lambda a, i: Result(1, "", "Error response from daemon: No such container: "
                                                          "lab-worker")), SPEC, "lab")
    with pytest.raises(MockgpuError, match="cannot read the faults of node gpu-0 .lab-worker.: Error response"):
        faults.inject("gpu-0", 0, 79)
