"""upstream's resourceclaim.Name, one row per case (k8s.io/dynamic-resource-allocation/resourceclaim)."""

from __future__ import annotations

import pytest

from mockgpu.sched.dra.claimname import ClaimNameError, claim_name, claim_name_or_empty


def _pod(statuses: list[dict] | None = None) -> dict:
    return {"metadata": {"name": "p", "namespace": "ns"}, "status": {"resourceClaimStatuses": statuses or []}}


@pytest.mark.parametrize("entry, statuses, want", [
    ({"name": "gpu", "resourceClaimName": "one-40g"}, [], ("one-40g", False)),
    # a named claim wins even where a status entry of the same name exists
    ({"name": "gpu", "resourceClaimName": "one-40g"}, [{"name": "gpu", "resourceClaimName": "other"}],
     ("one-40g", False)),
    ({"name": "gpu", "resourceClaimTemplateName": "t"}, [{"name": "gpu", "resourceClaimName": "p-gpu-x7k2p"}],
     ("p-gpu-x7k2p", True)),
    # the controller recorded the entry without a name: intentionally not generated
    ({"name": "gpu", "resourceClaimTemplateName": "t"}, [{"name": "gpu"}], (None, True)),
    ({"name": "gpu", "resourceClaimTemplateName": "t"}, [{"name": "other", "resourceClaimName": "x"}],
     'pod "ns/p": ResourceClaim not created yet'),
    ({"name": "gpu"}, [], 'pod "ns/p", spec.resourceClaim "gpu": none of the supported fields are set'),
])
def test_claim_name(entry, statuses, want):
    pod = _pod(statuses)
    if isinstance(want, str):
        with pytest.raises(ClaimNameError) as err:
            claim_name(pod, entry)
        assert str(err.value) == want
        assert claim_name_or_empty(pod, entry) == ""
    else:
        assert claim_name(pod, entry) == want
        assert claim_name_or_empty(pod, entry) == (want[0] or "")
