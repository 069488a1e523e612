"""Who am I and what may I do: SelfSubjectAccessReview and SelfSubjectRulesReview (authorization.k8s.io/v1)
for ``kubectl auth can-i [--list]``, SelfSubjectReview (authentication.k8s.io/v1) for ``kubectl auth whoami``.

The embedded server has one identity: whoever holds the cluster's bearer token may do everything (there is
no RBAC; requests without the token never get past the 401). That identity is reported as user
:data:`USERNAME` in the groups ``system:masters`` and ``system:authenticated`` (what a kubeadm admin
certificate gives); every well-formed access review is answered ``allowed: true`` with a reason that says
why, and the rules review lists ``*`` for everything. Malformed access reviews get upstream's 422 texts.
"""

from __future__ import annotations

import copy
from typing import Any

from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.gojson import json_kind
from mockgpu.control.apiserver.status import FieldError, field_invalid

API_VERSION = "authorization.k8s.io/v1"
REASON = "mockgpu: the cluster token is authorized for every request (the embedded server has no RBAC)"
USERNAME = "mockgpu-admin"
GROUPS = ("system:masters", "system:authenticated")


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


def _check_kind(body: Any, want: str, api_version: str) -> None:
    if not isinstance(body, dict):
        raise st.bad_request(f"the object provided is unrecognized (must be of type {want})")
    kind, given = body.get("kind") or want, body.get("apiVersion") or api_version
    if kind != want or given != api_version:
        raise st.bad_request(f'{kind} in version "{str(given).rsplit("/", 1)[-1]}" cannot be handled as a '
                             f'{want}: no kind "{kind}" is registered for version "{given}"')


def answer(kind: str, body: Any) -> dict[str, Any]:
    """The answered review of ``kind`` (one of :data:`REVIEW_KINDS`), or a 400/422 StatusError."""
    return {"SelfSubjectAccessReview": review, "SelfSubjectRulesReview": rules_review,
            "SelfSubjectReview": self_subject_review}[kind](body)


REVIEW_KINDS = ("SelfSubjectAccessReview", "SelfSubjectRulesReview", "SelfSubjectReview")


def _meta(body: dict[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {**copy.deepcopy(meta), "creationTimestamp": None}


def rules_review(body: Any) -> dict[str, Any]:
    """``kubectl auth can-i --list``: every verb on every resource and non-resource URL."""
    _check_kind(body, "SelfSubjectRulesReview", API_VERSION)
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    return {"kind": "SelfSubjectRulesReview", "apiVersion": API_VERSION, "metadata": _meta(body),
            "spec": copy.deepcopy(spec),
            "status": {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                       "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": False}}


def self_subject_review(body: Any) -> dict[str, Any]:
    """``kubectl auth whoami``: the one identity of the cluster token."""
    _check_kind(body, "SelfSubjectReview", "authentication.k8s.io/v1")
    return {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1", "metadata": _meta(body),
            "status": {"userInfo": {"username": USERNAME, "groups": list(GROUPS)}}}


def review(body: Any) -> dict[str, Any]:
    """The answered access review (status filled in), or a 400/422 StatusError."""
    _check_kind(body, "SelfSubjectAccessReview", API_VERSION)
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
    return {"kind": "SelfSubjectAccessReview", "apiVersion": API_VERSION, "metadata": _meta(body),
            "spec": copy.deepcopy(spec),
            "status": {"allowed": True, "reason": REASON}}
