"""StatefulSets end to end on the embedded backend (controllers, scheduler, fake kubelets), driven with kubectl:
ordered creation, ``rollout status``, a partitioned rolling update, scale-down from the highest ordinal, the
scale subresource, deletion with the pods; and the API's defaults, validation causes and 4xx for bad input."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path

import polling
import pytest
from kubectl_harness import KUBECTL, get, kubectl_runner

from mockgpu.backends.embedded import EmbeddedCluster

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"
pytestmark = [pytest.mark.skipif(KUBECTL is None, reason="no kubectl on PATH"), pytest.mark.timeout(240)]
wait_for = functools.partial(polling.wait_for, timeout=90.0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(SEED, home=tmp_path_factory.mktemp("home"), kubelets=True, scheduler=True,
                         delete_on_exit=True) as c:
        yield c


@pytest.fixture(scope="module")
def kubectl(cluster: EmbeddedCluster):
    return kubectl_runner(cluster.kubeconfig, timeout=120)


STS = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: %(name)s}
spec:
  replicas: 3
  serviceName: %(name)s
  selector: {matchLabels: {app: %(name)s}}
  template:
    metadata: {labels: {app: %(name)s}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: db
        image: %(image)s
        command: [sleep, "600"]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""


def live_pods(kubectl, app: str) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in get(kubectl, "pods", "-l", f"app={app}")["items"]
            if not p["metadata"].get("deletionTimestamp")}


def test_statefulset_creates_in_order_rolls_out_by_partition_and_scales_down(kubectl):
    kubectl("apply", "-f", "-", stdin=STS % {"name": "web", "image": "v1"})
    out = kubectl("rollout", "status", "sts/web", "--timeout=120s")
    assert "partitioned roll out complete: 3 new pods have been updated..." in out
    pods = live_pods(kubectl, "web")
    assert sorted(pods) == ["web-0", "web-1", "web-2"]
    created = sorted(pods.values(), key=lambda p: p["metadata"]["creationTimestamp"] + p["metadata"]["name"])
    assert [p["metadata"]["name"] for p in created] == ["web-0", "web-1", "web-2"]
    assert all(p["status"]["phase"] == "Running" for p in pods.values())
    web1 = pods["web-1"]
    assert web1["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "web-1"
    assert web1["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
    assert web1["spec"]["hostname"] == "web-1" and web1["spec"]["subdomain"] == "web"
    sts = get(kubectl, "sts", "web")
    first_rev = sts["status"]["currentRevision"]
    assert web1["metadata"]["labels"]["controller-revision-hash"] == first_rev == sts["status"]["updateRevision"]
    events = get(kubectl, "events", "--field-selector", "involvedObject.kind=StatefulSet,involvedObject.name=web")
    assert ("SuccessfulCreate", "Create Pod web-0 in StatefulSet web successful") in {  # verb title-cased
        (e["reason"], e["message"]) for e in events["items"]}
    assert kubectl("get", "sts", "web", "--no-headers").split()[:2] == ["web", "3/3"]

    # a partition of 2: only web-2 moves to the new revision
    kubectl("patch", "sts", "web", "-p", '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}')
    kubectl("set", "image", "sts/web", "db=v2")
    out = kubectl("rollout", "status", "sts/web", "--timeout=120s")
    assert "partitioned roll out complete: 1 new pods have been updated..." in out
    images = {n: p["spec"]["containers"][0]["image"] for n, p in live_pods(kubectl, "web").items()}
    assert images == {"web-0": "v1", "web-1": "v1", "web-2": "v2"}
    sts = get(kubectl, "sts", "web")
    assert sts["status"]["currentRevision"] == first_rev != sts["status"]["updateRevision"]
    assert sts["status"]["updatedReplicas"] == 1 and sts["status"]["currentReplicas"] == 2

    # partition 0: the rest follow, highest first; then the current revision moves
    kubectl("patch", "sts", "web", "-p", '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}')
    kubectl("rollout", "status", "sts/web", "--timeout=120s")
    wait_for(lambda: get(kubectl, "sts", "web")["status"].get("currentRevision")
             == get(kubectl, "sts", "web")["status"]["updateRevision"])
    images = {n: p["spec"]["containers"][0]["image"] for n, p in live_pods(kubectl, "web").items()}
    assert images == {"web-0": "v2", "web-1": "v2", "web-2": "v2"}

    # scale down through the scale subresource: the highest ordinals go
    kubectl("scale", "sts/web", "--replicas=1")
    wait_for(lambda: sorted(live_pods(kubectl, "web")) == ["web-0"])
    wait_for(lambda: get(kubectl, "sts", "web")["status"]["replicas"] == 1)
    kubectl("delete", "sts", "web")
    wait_for(lambda: not get(kubectl, "pods", "-l", "app=web")["items"])


def test_parallel_statefulset_creates_all_at_once(kubectl):
    body = (STS % {"name": "par", "image": "v1"}).replace("  replicas: 3", "  replicas: 3\n  podManagementPolicy: "
                                                                            "Parallel")
    kubectl("apply", "-f", "-", stdin=body)
    wait_for(lambda: sorted(live_pods(kubectl, "par")) == ["par-0", "par-1", "par-2"])
    kubectl("rollout", "status", "sts/par", "--timeout=120s")
    kubectl("delete", "sts", "par")
    wait_for(lambda: not get(kubectl, "pods", "-l", "app=par")["items"])


def create_fails(kubectl, body: str) -> str:
    return kubectl("apply", "-f", "-", stdin=body, check=False)


def test_defaults_and_validation(kubectl):
    kubectl("apply", "--dry-run=server", "-f", "-", stdin=STS % {"name": "dflt", "image": "v1"})
    sts = json.loads(kubectl("apply", "--dry-run=server", "-o", "json", "-f", "-",
                             stdin=STS % {"name": "dflt", "image": "v1"}))
    spec = sts["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady" and spec["revisionHistoryLimit"] == 10
    assert spec["updateStrategy"] == {"type": "RollingUpdate",
                                      "rollingUpdate": {"partition": 0, "maxUnavailable": 1}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert sts["status"] == {"replicas": 0, "availableReplicas": 0}
    base = STS % {"name": "bad", "image": "v1"}
    out = create_fails(kubectl, base.replace("  serviceName: bad",
                                             "  serviceName: bad\n  podManagementPolicy: Sometimes"))
    assert "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'" in out
    out = create_fails(kubectl, base.replace("{app: bad}}\n  template", "{app: other}}\n  template"))
    assert "`selector` does not match template `labels`" in out
    out = create_fails(kubectl, base.replace("terminationGracePeriodSeconds: 1",
                                             "terminationGracePeriodSeconds: 1\n      restartPolicy: Never"))
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"' in out
    out = create_fails(kubectl, base.replace("  replicas: 3", "  replicas: 3\n  updateStrategy: {type: RollingUpdate, "
                                             "rollingUpdate: {maxUnavailable: 0}}"))
    assert "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0" in out
    kubectl("apply", "-f", "-", stdin=STS % {"name": "imm", "image": "v1"})
    out = create_fails(kubectl, (STS % {"name": "imm", "image": "v1"}).replace("serviceName: imm",
                                                                               "serviceName: other"))
    assert "spec.serviceName: Invalid value" in out and "field is immutable" in out
    kubectl("delete", "sts", "imm", "--wait=false")


@pytest.mark.parametrize("spec", [5, "x", {"updateStrategy": "x"}, {"updateStrategy": {"rollingUpdate": "x"}},
                                  {"replicas": "3"}, {"template": 5}, {"volumeClaimTemplates": 5},
                                  {"volumeClaimTemplates": [5]}, {"ordinals": {"start": "x"}}])
def test_malformed_statefulsets_are_4xx(cluster: EmbeddedCluster, spec):
    raw = cluster.api_client()
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "malformed"}, "spec": spec}
    params = raw.param_serialize("POST", "/apis/apps/v1/namespaces/default/statefulsets",
                                 header_params={"Accept": "application/json", "Content-Type": "application/json"},
                                 body=body, auth_settings=["BearerToken"])
    resp = raw.call_api(*params)
    resp.read()
    status = json.loads(resp.data or b"{}")
    assert resp.status in (400, 422) and status["kind"] == "Status", (resp.status, status)
