"""A pod's DRA fields as upstream's pod validation checks them (``pkg/apis/core/validation``).

``spec.resourceClaims[]`` (``validatePodResourceClaims``): names required, unique DNS labels, exactly one of
``resourceClaimName``/``resourceClaimTemplateName``, each a DNS subdomain. A container's ``resources.claims[]``
(``validateResourceClaimNames``): names required, no entry twice (a whole claim and one of its requests overlap),
``request`` a DNS label, and the name one of the pod's claims. ``status.resourceClaimStatuses[]``
(``validatePodResourceClaimStatuses``, run on status updates): each names a pod claim once, with a valid claim
name. The static-pod rule (mirror pods may not use claims) is left out: the kit has no static pods.
"""

from __future__ import annotations

import json
from typing import Any

from mockgpu.control.apiserver import names
from mockgpu.control.apiserver.status import FieldError, field_duplicate, field_invalid, field_required


class _GoStruct:
    """The internal ``core.PodResourceClaim`` as ``json.Marshal`` prints it in a field error (Go field names)."""

    def __init__(self, claim: dict[str, Any]) -> None:
        self.claim = claim

    def __str__(self) -> str:
        return json.dumps({"Name": self.claim.get("name") or "",
                           "ResourceClaimName": self.claim.get("resourceClaimName"),
                           "ResourceClaimTemplateName": self.claim.get("resourceClaimTemplateName")},
                          separators=(",", ":"))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def pod_claim_names(spec: dict[str, Any]) -> set[str]:
    """The non-empty names of ``spec.resourceClaims`` (``gatherPodResourceClaimNames``)."""
    return {c["name"] for c in _list(spec.get("resourceClaims")) if isinstance(c, dict) and c.get("name")}


def validate_pod_claims(claims: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(_list(claims)):
        claim = claim if isinstance(claim, dict) else {}
        cpath = f"{path}[{i}]"
        name = claim.get("name") or ""
        if not name:
            errs.append(field_required(f"{cpath}.name"))
        elif name in seen:
            errs.append(field_duplicate(f"{cpath}.name", name))
        else:
            errs += [field_invalid(f"{cpath}.name", name, m) for m in names.dns1123_label(name)]
            seen.add(name)
        claim_name, template = claim.get("resourceClaimName"), claim.get("resourceClaimTemplateName")
        if claim_name is not None and template is not None:
            errs.append(field_invalid(cpath, _GoStruct(claim), "at most one of `resourceClaimName` or "
                                                              "`resourceClaimTemplateName` may be specified"))
        if claim_name is None and template is None:
            errs.append(field_invalid(cpath, _GoStruct(claim), "must specify one of: `resourceClaimName`, "
                                                              "`resourceClaimTemplateName`"))
        for key, value in (("resourceClaimName", claim_name), ("resourceClaimTemplateName", template)):
            if value is not None:
                errs += [field_invalid(f"{cpath}.{key}", value, m)
                         for m in names.name_is_dns_subdomain(str(value), False)]
    return errs


def validate_container_claims(claims: Any, pod_claims: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(_list(claims)):
        claim = claim if isinstance(claim, dict) else {}
        cpath = f"{path}[{i}]"
        name = claim.get("name") or ""
        if not name:
            errs.append(field_required(cpath))
            continue
        if name in seen:
            errs.append(field_duplicate(cpath, name))  # all requests of that claim already referenced
        else:
            key, request = name, claim.get("request") or ""
            if request:
                errs += [field_invalid(f"{cpath}.request", request, m) for m in names.dns1123_label(request)]
                key += "/" + request
            if key in seen:
                errs.append(field_duplicate(cpath, key))
            elif not request:
                errs += [field_duplicate(cpath, name) for k in sorted(seen) if "/" in k and k.split("/")[0] == name]
            seen.add(key)
        if name not in pod_claims:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += ": " + ", ".join(sorted(pod_claims)) if pod_claims else " which is empty"
            errs.append(FieldError(cpath, "NotFound", detail, name))
    return errs


def validate_claim_statuses(status: Any, claims: Any) -> list[FieldError]:
    statuses = _list(status.get("resourceClaimStatuses")) if isinstance(status, dict) else []
    pod_claims = {c.get("name") for c in _list(claims) if isinstance(c, dict)}
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, entry in enumerate(statuses):
        entry = entry if isinstance(entry, dict) else {}
        path = f"status.resourceClaimStatuses[{i}]"
        name = entry.get("name") or ""
        if name not in pod_claims:
            errs.append(field_invalid(f"{path}.name", name, "must match the name of an entry in "
                                                            "`spec.resourceClaims`"))
        if name in seen:
            errs.append(field_duplicate(f"{path}.name", name))
        seen.add(name)
        claim_name = entry.get("resourceClaimName")
        if claim_name is not None:
            errs += [field_invalid(f"{path}.resourceClaimName", claim_name, m)
                     for m in names.name_is_dns_subdomain(str(claim_name), False)]
    return errs
