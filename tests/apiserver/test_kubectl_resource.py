"""kubectl and resource.k8s.io/v1 on the embedded control plane (API server + controllers): discovery,
``kubectl apply`` of a DeviceClass, a ResourceClaimTemplate and a pod using it, and ``kubectl get`` with
upstream's printer columns."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import polling
import pytest
from kubectl_harness import KUBECTL, Kubectl, get, kubectl_runner

from mockgpu.backends.embedded import EmbeddedCluster

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "clusters" / "seed-4x2.yaml"
pytestmark = [pytest.mark.skipif(KUBECTL is None, reason="no kubectl on PATH"), pytest.mark.timeout(180)]
wait_for = functools.partial(polling.wait_for, timeout=30.0)

MANIFESTS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.mockgpu.io}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.mockgpu.io" && device.attributes["gpu.mockgpu.io"].type == "gpu"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.mockgpu.io}
---
apiVersion: v1
kind: Pod
metadata: {name: train}
spec:
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: one-gpu}
  containers:
  - name: main
    image: busybox
    resources:
      claims: [{name: gpu}]
"""

SLICE = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-0-gpu.mockgpu.io}
spec:
  driver: gpu.mockgpu.io
  nodeName: gpu-0
  pool: {name: gpu-0, generation: 0, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      type: {string: gpu}
      index: {int: 0}
"""


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    with EmbeddedCluster(SEED, home=tmp_path_factory.mktemp("home"), controllers=True, delete_on_exit=True) as c:
        yield kubectl_runner(c.kubeconfig, timeout=60)


def test_api_resources_lists_the_group(kubectl: Kubectl) -> None:
    rows = [line.split() for line in kubectl("api-resources", "--api-group=resource.k8s.io").splitlines()]
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert rows[1:] == [["deviceclasses", "resource.k8s.io/v1", "false", "DeviceClass"],
                        ["devicetaintrules", "resource.k8s.io/v1", "false", "DeviceTaintRule"],
                        ["resourceclaims", "resource.k8s.io/v1", "true", "ResourceClaim"],
                        ["resourceclaimtemplates", "resource.k8s.io/v1", "true", "ResourceClaimTemplate"],
                        ["resourceslices", "resource.k8s.io/v1", "false", "ResourceSlice"]]


def test_apply_class_template_and_pod_then_get_shows_upstream_columns(kubectl: Kubectl) -> None:
    out = kubectl("apply", "-f", "-", stdin=MANIFESTS)
    assert out.splitlines() == ["deviceclass.resource.k8s.io/gpu.mockgpu.io created",
                                "resourceclaimtemplate.resource.k8s.io/one-gpu created", "pod/train created"]
    kubectl("apply", "-f", "-", stdin=SLICE)
    statuses = wait_for(lambda: get(kubectl, "pod", "train")["status"].get("resourceClaimStatuses"),
                        what="the pod's generated claim recorded")
    claim = statuses[0]["resourceClaimName"]
    assert claim.startswith("train-gpu-")

    out = kubectl("get", "resourceslices,resourceclaims,deviceclasses,resourceclaimtemplates")
    blocks = [b.splitlines() for b in out.strip().split("\n\n")]
    assert [b[0].split() for b in blocks] == [["NAME", "NODE", "DRIVER", "POOL", "AGE"], ["NAME", "STATE", "AGE"],
                                              ["NAME", "AGE"], ["NAME", "AGE"]]
    assert blocks[0][1].split()[:4] == ["resourceslice.resource.k8s.io/gpu-0-gpu.mockgpu.io", "gpu-0",
                                        "gpu.mockgpu.io", "gpu-0"]
    assert blocks[1][1].split()[:2] == [f"resourceclaim.resource.k8s.io/{claim}", "pending"]
    assert blocks[2][1].split()[0] == "deviceclass.resource.k8s.io/gpu.mockgpu.io"
    assert blocks[3][1].split()[0] == "resourceclaimtemplate.resource.k8s.io/one-gpu"

    nodes = kubectl("get", "resourceslices", "--field-selector", "spec.nodeName=gpu-0", "-o", "name")
    assert nodes.split() == ["resourceslice.resource.k8s.io/gpu-0-gpu.mockgpu.io"]
    assert "No resources found" in kubectl("get", "resourceslices", "--field-selector", "spec.driver=other",
                                           check=False)

    again = kubectl("apply", "-f", "-", stdin=MANIFESTS)  # re-applying is accepted (the pod is unchanged)
    assert "pod/train unchanged" in again.splitlines()
    kubectl("delete", "pod", "train", "--wait=false")
    wait_for(lambda: "NotFound" in kubectl("get", "resourceclaim", claim, check=False),
             what="the generated claim garbage-collected with its pod")


def test_invalid_claim_is_refused_with_the_field_path(kubectl: Kubectl) -> None:
    out = kubectl("apply", "-f", "-", check=False, stdin="""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: broken}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.mockgpu.io
        selectors:
        - cel: {expression: 'device.driver =='}
""")
    assert 'The ResourceClaim "broken" is invalid' in out
    assert "spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value" in out
