"""The scheduler log fed from a stream (kind: the kube-scheduler pod's log through the API) reads as the file."""

from __future__ import annotations

import json

import pytest

from mockgpu.backends.common.schedlog import BOUND, SCORED, TOTAL, SchedulerLog
from mockgpu.backends.kind.schedresults import SCHEDULER_SELECTOR

POD = {"name": "p", "namespace": "default"}
LINES = [
    {"msg": "Attempting to schedule pod", "pod": POD},
    {"msg": SCORED, "pod": POD, "node": {"name": "gpu-0"}, "plugin": "NodeResourcesFit", "score": 50},
    {"msg": TOTAL, "pod": POD, "node": {"name": "gpu-0"}, "score": 50},
    {"msg": BOUND, "pod": POD, "node": {"name": "gpu-0"}},
]


def test_feed_in_pieces_cut_mid_line_gives_the_same_attempt(tmp_path):
    data = "".join(json.dumps(r) + "\n" for r in LINES).encode()
    path = tmp_path / "kube-scheduler.log"
    path.write_bytes(data)
    from_file = SchedulerLog(path)
    from_file.read()
    streamed = SchedulerLog()
    streamed.read()  # no file: nothing
    for i in range(0, len(data), 7):
        streamed.feed(data[i:i + 7])
    assert streamed.drain_finished() == from_file.drain_finished() == ["default/p"]
    assert streamed.attempt("default/p") == from_file.attempt("default/p")
    assert streamed.attempt("default/p").bound_to == "gpu-0"


def test_a_line_cut_short_by_a_dropped_stream_is_dropped():
    log = SchedulerLog()
    log.feed(json.dumps(LINES[0]).encode()[:10])
    log.feed(b"\n")  # the stream dropped
    log.feed(("".join(json.dumps(r) + "\n" for r in LINES)).encode())
    assert log.drain_finished() == ["default/p"]


def test_kind_scheduler_pod_is_found_by_kubeadms_static_pod_label():
    # kubeadm's manifest labels it component=kube-scheduler; its name ends with the Node's, which is a spec node's
    assert SCHEDULER_SELECTOR == "component=kube-scheduler"


class _Api:
    """CoreV1Api + ResourceV1Api stand-ins: the pod and claims as the client's models, patches recorded."""

    def __init__(self, pod, claims):
        from kubernetes import client

        self.api_client = client.ApiClient()
        self.pod, self.claims, self.patches = pod, claims, []

    def read_namespaced_pod(self, name, ns):
        return self.pod

    def patch_namespaced_pod(self, name, ns, body):
        self.patches.append(body)

    def read_namespaced_resource_claim(self, name, ns):
        return self.claims[name]


def _claim(name, results):
    from kubernetes import client

    alloc = client.V1AllocationResult(devices=client.V1DeviceAllocationResult(results=[
        client.V1DeviceRequestAllocationResult(request=r, driver="gpu.mockgpu.io", pool="dra-0", device=d)
        for r, d in results])) if results is not None else None
    return client.ResourceV1ResourceClaim(metadata=client.V1ObjectMeta(name=name), spec=client.V1ResourceClaimSpec(),
                                          status=client.V1ResourceClaimStatus(allocation=alloc))


def _pod_with_claims():
    from kubernetes import client

    return client.V1Pod(
        metadata=client.V1ObjectMeta(name="p", namespace="default"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="main")], scheduler_name="default-scheduler",
                              resource_claims=[
                                  client.V1PodResourceClaim(name="gpu", resource_claim_name="one-40g"),
                                  client.V1PodResourceClaim(name="mig", resource_claim_template_name="t")]),
        status=client.V1PodStatus(resource_claim_statuses=[
            client.V1PodResourceClaimStatus(name="mig", resource_claim_name="p-mig-abcde")]))


@pytest.mark.parametrize(("mig_results", "annotated"), [([("mig", "gpu-3-mig-1g10gb-0")], True), (None, False)],
                         ids=["allocated", "not-yet-allocated"])
def test_recorder_writes_the_dra_allocation_of_a_bound_pod_as_the_embedded_scheduler(mig_results, annotated):
    """On kind and upstream the claims' allocations (kube-scheduler's PreBind) become the pod's
    mockgpu.io/dra-allocation, keyed by ResourceClaim name (a template's claim by its generated name)."""
    from mockgpu.backends.common.recorder import ResultsRecorder

    api = _Api(_pod_with_claims(), {"one-40g": _claim("one-40g", [("gpu", "gpu-0")]),
                                    "p-mig-abcde": _claim("p-mig-abcde", mig_results)})
    log = SchedulerLog()
    log.feed(("".join(json.dumps(r) + "\n" for r in LINES)).encode())
    recorder = ResultsRecorder(api.api_client, log, {})
    recorder.core = recorder.resource = api
    log.drain_finished()
    recorder._annotate("default/p")
    (patch,) = api.patches
    notes = patch["metadata"]["annotations"]
    assert notes["mockgpu.io/selected-node"] == "gpu-0"
    if not annotated:
        assert "mockgpu.io/dra-allocation" not in notes
        return
    assert json.loads(notes["mockgpu.io/dra-allocation"]) == {
        "one-40g": [{"request": "gpu", "device": "gpu-0"}],
        "p-mig-abcde": [{"request": "mig", "device": "gpu-3-mig-1g10gb-0"}]}
