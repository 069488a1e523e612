"""DRA end to end on a real kind cluster (clusters/dra.yaml): the gpu.mockgpu.io driver runs as a kubelet-plugin
DaemonSet next to the real kubelet, publishes its ResourceSlices through the real API server, the real claim
controller and kube-scheduler allocate from them, the real kubelet prepares the claim over the driver's gRPC
socket and the node's containerd applies the driver's CDI spec to a real container.

Needs a Docker engine, kind and kubectl (skipped elsewhere, saying which); images as test_kind_e2e.py (the
offline node image must carry containerd with CDI: scripts/kind-node-image). One cluster for the module.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from dra_scenario import FIVE, manifest

from mockgpu.backends.kind.config import kind_node_names
from mockgpu.dra.prepare import cdi_file_name

from .kind_live import get, kubectl, live_cluster, wait_for

pytestmark = pytest.mark.kind

NAME = "drakind-e2e"
@pytest.fixture(scope="module")
def dra_kind(tmp_path_factory) -> Iterator[dict[str, Any]]:
    yield from live_cluster(NAME, "dra.yaml", tmp_path_factory.mktemp("drakind"), "kind DRA e2e")


def devices(c: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(pool, device) -> device of every gpu.mockgpu.io ResourceSlice; attributes as plain values."""
    out = {}
    for s in get(c, "resourceslices")["items"]:
        if s["spec"]["driver"] != "gpu.mockgpu.io":
            continue
        for d in s["spec"].get("devices") or []:
            attrs = {k: next(iter(v.values())) for k, v in d["attributes"].items()}
            out[(s["spec"]["pool"]["name"], d["name"])] = attrs
    return out


def node_container(c: dict[str, Any], node: str) -> str:
    return next(k for k, v in kind_node_names(c["spec"], NAME).items() if v == node)


def test_every_dra_node_publishes_its_slices_and_the_device_plugin_keeps_the_rest(dra_kind):
    slices = get(dra_kind, "resourceslices")["items"]
    mine = [s for s in slices if s["spec"]["driver"] == "gpu.mockgpu.io"]
    assert {s["spec"]["nodeName"] for s in mine} == {"dra-0", "both-0"}
    for pool in ("dra-0", "both-0"):
        pool_slices = [s for s in mine if s["spec"]["pool"]["name"] == pool]
        assert {s["spec"]["pool"]["resourceSliceCount"] for s in pool_slices} == {len(pool_slices)}
        owner = pool_slices[0]["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"]) == ("Node", pool)  # owned by the Node, as upstream's helper does
    whole = {k for k, d in devices(dra_kind).items() if d["type"] == "gpu"}
    assert whole == {("dra-0", f"gpu-{i}") for i in range(4)} | {("both-0", "gpu-2"), ("both-0", "gpu-3")}
    alloc = {n["metadata"]["name"]: n["status"]["allocatable"] for n in get(dra_kind, "nodes")["items"]}
    assert alloc["both-0"].get("nvidia.com/gpu") == "2"  # GPUs 0-1 through the device plugin
    assert "nvidia.com/gpu" not in alloc["dra-0"] or alloc["dra-0"]["nvidia.com/gpu"] == "0"
    classes = {d["metadata"]["name"] for d in get(dra_kind, "deviceclasses")["items"]}
    assert {"gpu.mockgpu.io", "mig.gpu.mockgpu.io"} <= classes


def test_claims_are_allocated_prepared_and_applied_by_containerds_cdi(dra_kind):
    from mockgpu.backends.common.images import mockgpu_image

    kubectl(dra_kind, "apply", "-f", "-", input=manifest(mockgpu_image(), pull="Never", mig_container_per_request=True))
    kubectl(dra_kind, "wait", "--for=condition=Ready", "pod/big", "pod/migs", "--timeout=180s")
    devs = devices(dra_kind)

    # the template's claim: made by the claim controller, allocated by kube-scheduler (>= 40 GiB: a whole A100)
    big = get(dra_kind, "pod", "big")
    (status,) = big["status"]["resourceClaimStatuses"]
    claim = get(dra_kind, "resourceclaim", status["resourceClaimName"])
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert (result["request"], result["driver"], result["pool"]) == ("gpu", "gpu.mockgpu.io", big["spec"]["nodeName"])
    uuid = devs[(result["pool"], result["device"])]["uuid"]
    log = wait_for("big's log", lambda: kubectl(dra_kind, "logs", "big").strip(), 30)
    assert log == f"NVIDIA_VISIBLE_DEVICES={uuid}"  # the CDI spec's env, applied by containerd
    # the CDI spec's mount too: the fake driver directory, so nvidia-smi in the container sees that device
    smi = kubectl(dra_kind, "exec", "big", "--", "nvidia-smi", "-L")
    assert f"(UUID: {uuid})" in smi and smi.count("GPU ") == 1, smi
    container = node_container(dra_kind, big["spec"]["nodeName"])
    cdi = f"/var/run/cdi/{cdi_file_name(claim['metadata']['uid'])}"
    spec = json.loads(subprocess.run(["docker", "exec", container, "cat", cdi], capture_output=True, text=True,
                                     timeout=60, check=True).stdout)
    assert spec["kind"] == "gpu.mockgpu.io/gpu" and spec["devices"][0]["containerEdits"]["env"] == [
        f"NVIDIA_VISIBLE_DEVICES={uuid}"]

    # two MIG placements of one card: same parent, memory slices that do not overlap
    migs = get(dra_kind, "resourceclaim", "migs")
    results = migs["status"]["allocation"]["devices"]["results"]
    by_request = {r["request"]: devs[(r["pool"], r["device"])] for r in results}
    small, large = by_request["small"], by_request["large"]
    assert (small["profile"], large["profile"]) == ("1g.10gb", "3g.40gb")
    assert small["parentUUID"] == large["parentUUID"]

    def slots(d):
        return set(range(d["placementStart"], d["placementStart"] + d["placementSize"]))

    assert not slots(small) & slots(large)
    # each container names one request: the kubelet hands it that request's CDI device only
    for name, dev in (("small", small), ("large", large)):
        log = wait_for(f"migs/{name}'s log", lambda n=name: kubectl(dra_kind, "logs", "migs", "-c", n).strip(), 30)
        assert log == dev["uuid"]
    # the MIG instance exists in the node's fake driver while the claim is prepared (nvidia-smi in the container)
    smi = kubectl(dra_kind, "exec", "migs", "-c", "small", "--", "nvidia-smi", "-L")
    assert f"MIG {small['profile']}" in smi and f"(UUID: {small['uuid']})" in smi, smi

    # five GPUs: no node has them; kube-scheduler's own message
    def failed():
        events = get(dra_kind, "events", "--field-selector", "involvedObject.name=five,reason=FailedScheduling")
        return events["items"]

    event = wait_for("FailedScheduling of five", failed, 60)[0]
    assert event["message"] == FIVE
    assert get(dra_kind, "pod", "five")["status"]["phase"] == "Pending"
    assert (get(dra_kind, "resourceclaim", "five").get("status") or {}).get("allocation") is None

    # deleting the pod: the kubelet unprepares through the driver (its CDI spec goes), the claim controller
    # removes the template's claim
    assert subprocess.run(["docker", "exec", container, "test", "-f", cdi], timeout=60).returncode == 0
    kubectl(dra_kind, "delete", "pod", "big", "--timeout=90s")
    wait_for("the template's claim removed", lambda: status["resourceClaimName"] not in {
        c["metadata"]["name"] for c in get(dra_kind, "resourceclaims")["items"]}, 90)
    wait_for("the CDI spec removed", lambda: subprocess.run(
        ["docker", "exec", container, "test", "-e", cdi], timeout=60).returncode == 1, 60)
