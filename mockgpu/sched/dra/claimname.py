"""Which ResourceClaim an entry of a pod's ``spec.resourceClaims`` means: upstream's ``resourceclaim.Name``
(``k8s.io/dynamic-resource-allocation/resourceclaim``), the one rule the scheduler, the kubelet, the GPU-state
publisher, the results recorder and the widgets all follow.

A named entry means that claim. A template entry means the claim the resource claim controller made for the
pod, recorded in ``status.resourceClaimStatuses`` (its owner must then be the pod); an entry recorded with no
claim name was intentionally not generated. Anything else is an error with upstream's message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ClaimNameError(Exception):
    """The entry names no claim yet (or none of its fields is set); the message is upstream's."""


def claim_name(pod: Mapping[str, Any], entry: Mapping[str, Any]) -> tuple[str | None, bool]:
    """(claim name, or None when intentionally not generated; whether the claim's owner must be the pod)."""
    meta = pod.get("metadata") or {}
    who = f'pod "{meta.get("namespace") or "default"}/{meta.get("name", "")}"'
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"]), False
    if entry.get("resourceClaimTemplateName"):
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("name") == entry.get("name"):
                return status.get("resourceClaimName") or None, True
        raise ClaimNameError(f"{who}: ResourceClaim not created yet")
    raise ClaimNameError(f'{who}, spec.resourceClaim "{entry.get("name", "")}": none of the supported fields are set')


def claim_name_or_empty(pod: Mapping[str, Any], entry: Mapping[str, Any]) -> str:
    """The claim's name, or '' while there is none (for views that show what exists)."""
    try:
        return claim_name(pod, entry)[0] or ""
    except ClaimNameError:
        return ""
