"""DRA on the real control plane (issue 12 item 5): mockgpu's kubelets run the gpu.mockgpu.io driver, whose
ResourceSlices the real kube-apiserver validates and stores; the real claim controller makes a pod's claim from
its template, the real kube-scheduler allocates it from our slices, our kubelet prepares it and the container
sees the allocated device's UUID."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polling
import pytest
from dra_scenario import FIVE, manifest
from kubernetes import client
from test_upstream_backend import kubectl

from mockgpu.backends.common.state import node_root
from mockgpu.backends.upstream import UpstreamCluster
from mockgpu.control.kubelet.kubelet import dra_dir_for
from mockgpu.dra.prepare import cdi_file_name

ROOT = Path(__file__).resolve().parents[2]
ATTR = "gpu.mockgpu.io"
MANIFEST = manifest()


@pytest.fixture(scope="module")
def dra_upstream(upstream_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamCluster]:
    home = tmp_path_factory.mktemp("up-dra")
    with UpstreamCluster(ROOT / "clusters" / "dra.yaml", home=home, delete_on_exit=True) as c:
        yield c


def _devices(res: client.ResourceV1Api) -> dict[tuple[str, str], dict]:
    """(pool, device) -> device, from every slice the real API server holds."""
    out = {}
    for s in res.list_resource_slice().items:
        for d in s.spec.devices or []:
            out[(s.spec.pool.name, d.name)] = d
    return out


def test_real_apiserver_stores_our_slices(dra_upstream):
    res = client.ResourceV1Api(dra_upstream.api_client())
    slices = polling.wait_for(lambda: [s for s in res.list_resource_slice().items if s.spec.driver == ATTR]
                              if len({s.spec.node_name for s in res.list_resource_slice().items}) == 2 else None,
                              timeout=60, what="slices of both DRA nodes")
    for pool in ("dra-0", "both-0"):
        mine = [s for s in slices if s.spec.pool.name == pool]
        assert {s.spec.pool.resource_slice_count for s in mine} == {len(mine)}
        assert len({s.spec.pool.generation for s in mine}) == 1
        counters = [s for s in mine if s.spec.shared_counters]
        assert len(counters) == 1 and not counters[0].spec.devices
    devices = {k[1] for k in _devices(res) if k[0] == "both-0" and "-mig-" not in k[1]}
    assert devices == {"gpu-2", "gpu-3"}  # management: both -> only gpu.dra.gpus are published
    assert {k[1] for k in _devices(res) if k[0] == "dra-0" and "-mig-" not in k[1]} == {f"gpu-{i}" for i in range(4)}


def test_real_scheduler_allocates_our_devices(dra_upstream, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST)
    kubectl(dra_upstream, "apply", "-f", str(ROOT / "clusters" / "dra" / "deviceclasses.yaml"))
    kubectl(dra_upstream, "apply", "-f", str(path))
    api = dra_upstream.api_client()
    core, res = client.CoreV1Api(api), client.ResourceV1Api(api)
    kubectl(dra_upstream, "wait", "--for=condition=Ready", "pod/big", "pod/migs", "--timeout=90s")
    devices = _devices(res)

    # the template's claim: made by the real claim controller, allocated by the real scheduler
    pod = core.read_namespaced_pod("big", "default")
    (status,) = pod.status.resource_claim_statuses
    claim = res.read_namespaced_resource_claim(status.resource_claim_name, "default")
    assert claim.metadata.owner_references[0].name == "big"
    (result,) = claim.status.allocation.devices.results
    assert (result.request, result.driver, result.pool) == ("gpu", ATTR, pod.spec.node_name)
    term = claim.status.allocation.node_selector.node_selector_terms[0]
    assert [(f.key, f.operator, f.values) for f in term.match_fields] == [("metadata.name", "In",
                                                                           [pod.spec.node_name])]
    assert [r.name for r in claim.status.reserved_for] == ["big"]
    device = devices[(result.pool, result.device)]
    assert device.attributes["type"].string == "gpu"
    log = polling.wait_for(lambda: kubectl(dra_upstream, "logs", "big").stdout.strip(), timeout=20, what="log")
    assert log == f"NVIDIA_VISIBLE_DEVICES={device.attributes['uuid'].string}"

    # two MIG placements of one card: same parent, memory slices that do not overlap
    claim = res.read_namespaced_resource_claim("migs", "default")
    by_request = {r.request: devices[(r.pool, r.device)] for r in claim.status.allocation.devices.results}
    small, large = by_request["small"], by_request["large"]
    assert small.attributes["profile"].string == "1g.10gb" and large.attributes["profile"].string == "3g.40gb"
    assert small.attributes["parentUUID"].string == large.attributes["parentUUID"].string

    def slices(d):
        start, size = d.attributes["placementStart"].int, d.attributes["placementSize"].int
        return set(range(start, start + size))

    assert not slices(small) & slices(large)
    log = polling.wait_for(lambda: kubectl(dra_upstream, "logs", "migs").stdout.strip(), timeout=20, what="log")
    assert sorted(log.split(",")) == sorted([small.attributes["uuid"].string, large.attributes["uuid"].string])

    # five GPUs: no node has them; upstream's wording, naming no node
    event = polling.wait_for(lambda: [e for e in core.list_namespaced_event(
        "default", field_selector="involvedObject.name=five,reason=FailedScheduling").items], timeout=30,
        what="FailedScheduling event")[0]
    assert event.message == FIVE
    assert res.read_namespaced_resource_claim("five", "default").status.allocation is None

    # deleting the pod: our kubelet unprepares (its CDI spec goes), the real controller removes the claim
    uid = res.read_namespaced_resource_claim(status.resource_claim_name, "default").metadata.uid
    cdi = dra_dir_for(node_root(dra_upstream.state, pod.spec.node_name)) / "cdi" / cdi_file_name(uid)
    assert cdi.is_file()
    kubectl(dra_upstream, "delete", "pod", "big", "--timeout=60s")
    polling.wait_for(lambda: not [c for c in res.list_namespaced_resource_claim("default").items
                                  if c.metadata.name == status.resource_claim_name], timeout=60,
                     what="the template's claim removed")
    assert not cdi.exists()
