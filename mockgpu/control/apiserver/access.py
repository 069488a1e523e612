"""Who am I and what may I do: SelfSubjectAccessReview and SelfSubjectRulesReview (authorization.k8s.io/v1)
for ``kubectl auth can-i [--list]``, SelfSubjectReview (authentication.k8s.io/v1) for ``kubectl auth whoami``.

The embedded server has one credential, the cluster's bearer token (requests without it never get past the 401):
its user is :data:`USERNAME` in the groups ``system:masters`` and ``system:authenticated`` (what a kubeadm admin
certificate gives), allowed everything. A request that impersonates a user (``kubectl --as``, ``rbacauthz``) runs as
that user, and the reviews answer for it from RBAC: ``can-i`` with the RBAC authorizer's decision, ``--list`` with
the rules its bindings give (``RulesFor``). Malformed access reviews get upstream's 422 texts.
"""

from __future__ import annotations

import copy
from typing import Any

from mockgpu.control.apiserver import rbacauthz
from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.gojson import json_kind
from mockgpu.control.apiserver.rbacauthz import Attributes, Objects, User
from mockgpu.control.apiserver.status import FieldError, field_invalid

API_VERSION = "authorization.k8s.io/v1"
REASON = "mockgpu: the cluster token's user is in system:masters, which is authorized for every request"
USERNAME = rbacauthz.ADMIN_USER
GROUPS = rbacauthz.ADMIN_GROUPS


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


def answer(kind: str, body: Any, user: User = rbacauthz.ADMIN, objects: Objects | None = None) -> dict[str, Any]:
    """The answered review of ``kind`` (one of :data:`REVIEW_KINDS`) for ``user``, or a 400/422 StatusError."""
    return {"SelfSubjectAccessReview": review, "SelfSubjectRulesReview": rules_review,
            "SelfSubjectReview": self_subject_review}[kind](body, user, objects)


REVIEW_KINDS = ("SelfSubjectAccessReview", "SelfSubjectRulesReview", "SelfSubjectReview")


def _meta(body: dict[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {**copy.deepcopy(meta), "creationTimestamp": None}


def rules_review(body: Any, user: User = rbacauthz.ADMIN, objects: Objects | None = None) -> dict[str, Any]:
    """``kubectl auth can-i --list``: the admin may do everything; another user what its bindings give."""
    _check_kind(body, "SelfSubjectRulesReview", API_VERSION)
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    if user.privileged or objects is None:
        status: dict[str, Any] = {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                                  "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                                  "incomplete": False}
    else:
        rules, errors = rbacauthz.rules_for(objects, user, str(spec.get("namespace") or ""))
        resource = [{k: r[k] for k in ("verbs", "apiGroups", "resources", "resourceNames") if r.get(k)}
                    for r in rules if not r.get("nonResourceURLs")]
        non_resource = [{"verbs": r["verbs"], "nonResourceURLs": r["nonResourceURLs"]} for r in rules
                        if r.get("nonResourceURLs")]
        status = {"resourceRules": resource, "nonResourceRules": non_resource, "incomplete": bool(errors)}
        if errors:
            status["evaluationError"] = ", ".join(errors)
    return {"kind": "SelfSubjectRulesReview", "apiVersion": API_VERSION, "metadata": _meta(body),
            "spec": copy.deepcopy(spec), "status": status}


def self_subject_review(body: Any, user: User = rbacauthz.ADMIN, objects: Objects | None = None) -> dict[str, Any]:
    """``kubectl auth whoami``: the user the request runs as."""
    _check_kind(body, "SelfSubjectReview", "authentication.k8s.io/v1")
    info: dict[str, Any] = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    if user.extra:
        info["extra"] = {k: list(v) for k, v in user.extra.items()}
    return {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1", "metadata": _meta(body),
            "status": {"userInfo": info}}


def _attributes(spec: dict[str, Any]) -> Attributes:
    res = spec.get("resourceAttributes")
    if isinstance(res, dict):
        return Attributes(str(res.get("verb") or ""), True, str(res.get("group") or ""), str(res.get("version") or ""),
                          str(res.get("resource") or ""), str(res.get("subresource") or ""),
                          str(res.get("namespace") or ""), str(res.get("name") or ""))
    non = spec.get("nonResourceAttributes") or {}
    return Attributes(str(non.get("verb") or ""), False, path=str(non.get("path") or ""))


def review(body: Any, user: User = rbacauthz.ADMIN, objects: Objects | None = None) -> dict[str, Any]:
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
    if user.privileged or objects is None:
        status: dict[str, Any] = {"allowed": True, "reason": REASON}
    else:
        allowed, reason = rbacauthz.authorize(objects, user, _attributes(spec))
        status = {"allowed": allowed}
        if reason:
            status["reason"] = reason
    return {"kind": "SelfSubjectAccessReview", "apiVersion": API_VERSION, "metadata": _meta(body),
            "spec": copy.deepcopy(spec), "status": status}
