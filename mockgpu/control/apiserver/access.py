"""authorization.k8s.io/v1 SelfSubjectAccessReview, so ``kubectl auth can-i`` gets an answer.

The embedded server has one identity: whoever holds the cluster's bearer token may do everything (there is
no RBAC; requests without the token never get past the 401). So every well-formed review is answered
``allowed: true`` with a reason that says why; malformed reviews get upstream's 422 texts. Simplified: no
SelfSubjectRulesReview (``kubectl auth can-i --list`` reports that the server does not serve it).
"""

from __future__ import annotations

import copy
from typing import Any

from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.openapi import json_kind
from mockgpu.control.apiserver.status import FieldError, field_invalid

API_VERSION = "authorization.k8s.io/v1"
REASON = "mockgpu: the cluster token is authorized for every request (the embedded server has no RBAC)"


def validate_spec(spec: dict[str, Any]) -> list[FieldError]:
    """upstream ``ValidateSelfSubjectAccessReviewSpec``: exactly one of the two attribute sets."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        return [field_invalid("spec.nonResourceAttributes", non_resource,
                              "cannot be specified in combination with resourceAttributes")]
    if resource is None and non_resource is None:
        return [field_invalid("spec.resourceAttributes", None,
                              "exactly one of nonResourceAttributes or resourceAttributes must be specified")]
    return []


def review(body: Any) -> dict[str, Any]:
    """The answered review (status filled in), or a 400/422 StatusError."""
    if not isinstance(body, dict):
        raise st.bad_request("the object provided is unrecognized (must be of type SelfSubjectAccessReview)")
    kind, api_version = body.get("kind") or "SelfSubjectAccessReview", body.get("apiVersion") or API_VERSION
    if kind != "SelfSubjectAccessReview" or api_version != API_VERSION:
        raise st.bad_request(f'{kind} in version "{str(api_version).rsplit("/", 1)[-1]}" cannot be handled as a '
                             f'SelfSubjectAccessReview: no kind "{kind}" is registered for version "{api_version}"')
    spec = body.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    for key in ("resourceAttributes", "nonResourceAttributes"):
        if spec.get(key) is not None and not isinstance(spec[key], dict):
            raise st.bad_request(f"SelfSubjectAccessReview in version \"v1\" cannot be handled as a "
                                 f"SelfSubjectAccessReview: json: cannot unmarshal {json_kind(spec[key])} into "
                                 f"Go struct field SelfSubjectAccessReviewSpec.spec.{key} of type "
                                 f"v1.{key[0].upper()}{key[1:]}")
    errs = validate_spec(spec)
    if errs:
        raise st.invalid("SelfSubjectAccessReview", "", errs, "authorization.k8s.io")
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {"kind": "SelfSubjectAccessReview", "apiVersion": API_VERSION,
            "metadata": {**copy.deepcopy(meta), "creationTimestamp": None}, "spec": copy.deepcopy(spec),
            "status": {"allowed": True, "reason": REASON}}
