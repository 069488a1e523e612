"""A pod's ``/status`` update with ``allocatedResourcesStatus`` (ResourceHealthStatus, beta and on in v1.37.2): the
rules and texts of upstream's ``validateContainerStatusAllocatedResourcesStatus`` (pkg/apis/core/validation)."""

from __future__ import annotations

import copy

import pytest

from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.validation import default_and_validate

GPU = "nvidia.com/gpu"


def _pod() -> dict:
    body = {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "img", "resources": {"limits": {GPU: "1"}, "claims": [{"name": "gpu"}]}},
                       {"name": "plain", "image": "img"}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
    }}
    return default_and_validate("Pod", body, namespace="d")


def _status(ars: list, container: str = "c", key: str = "containerStatuses") -> list[str]:
    old = _pod()
    new = copy.deepcopy(old)
    new["status"] = {key: [{"name": container, "ready": True, "restartCount": 0, "image": "img", "imageID": "",
                            "state": {"running": {}}, "allocatedResourcesStatus": ars}]}
    try:
        default_and_validate("Pod", new, namespace="d", old=old, subresource="status")
    except StatusError as exc:
        return [f"{c['field']}: {c['message']}" for c in exc.status["details"]["causes"]]
    return []


def health(*rows: tuple[str, str], name: str = GPU) -> dict:
    return {"name": name, "resources": [{"resourceID": i, "health": h} for i, h in rows]}


F = "status.containerStatuses[0].allocatedResourcesStatus[0]"
CASES = [
    ("healthy", [health(("GPU-a", "Healthy"))], []),
    ("unhealthy-and-unknown", [health(("GPU-a", "Unhealthy"), ("GPU-b", "Unknown"))], []),
    ("claim", [health(("gpu.example.com/pool/dev-0", "Healthy"), name="claim:gpu")], []),
    ("not-requested", [health(("x", "Healthy"), name="example.com/fpga")],
     [f'{F}.name: Invalid value: "example.com/fpga": must match one of the container\'s resource requests']),
    ("unknown-claim", [health(("x", "Healthy"), name="claim:other")],
     [f'{F}.name: Invalid value: "claim:other": must match one of the container\'s resource claims as '
      "'claim:<claimName>/<requestName>' when container.resources.claims[*].request is set or 'claim:<claimName>' "
      "when it is empty"]),
    ("bad-health", [health(("GPU-a", "Sick"))],
     [f'{F}.resources[0].health: Unsupported value: "Sick": supported values: "Healthy", "Unhealthy", "Unknown"']),
    ("duplicate-id", [health(("GPU-a", "Healthy"), ("GPU-a", "Unhealthy"))],
     [f'{F}.resources[1].resourceID: Duplicate value: "GPU-a"']),
    ("empty-message", [{"name": GPU, "resources": [{"resourceID": "GPU-a", "health": "Healthy", "message": ""}]}],
     [f"{F}.resources[0].message: Required value: must be non-empty if specified"]),
    ("long-message", [{"name": GPU, "resources": [{"resourceID": "GPU-a", "health": "Healthy",
                                                   "message": "x" * 1025}]}],
     [f"{F}.resources[0].message: Too long: may not be more than 1024 bytes"]),
]


@pytest.mark.parametrize(("ars", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_allocated_resources_status(ars: list, want: list[str]) -> None:
    assert _status(ars) == want


def test_a_status_for_a_container_the_spec_lacks_is_not_checked_by_name() -> None:
    assert _status([health(("x", "Healthy"), name="example.com/fpga")], container="ghost") == []


def test_ephemeral_containers_must_not_have_it() -> None:
    assert _status([health(("GPU-a", "Healthy"))], key="ephemeralContainerStatuses") == [
        "status.ephemeralContainerStatuses[0].allocatedResourcesStatus: Forbidden: must not be specified in "
        "container status"]
