"""authorization.k8s.io/v1: the self-reviews ``kubectl auth can-i`` creates (answered by ``apiserver.access``,
never stored; upstream ``pkg/registry/authorization/selfsubject*review``)."""

from __future__ import annotations

from mockgpu.control.apiserver import access
from mockgpu.control.apiserver.registry.kind import Kind

GROUP_VERSION = "authorization.k8s.io/v1"
#: the self-reviews are answered before any decoding into a stored kind, so no scheme check meets this group
SCHEME_KINDS: frozenset[str] = frozenset()

SELF_SUBJECT_ACCESS_REVIEW = Kind("selfsubjectaccessreviews", "selfsubjectaccessreview", "SelfSubjectAccessReview",
                                  False, ("create",), group="authorization.k8s.io", stored=False,
                                  review=access.review)
SELF_SUBJECT_RULES_REVIEW = Kind("selfsubjectrulesreviews", "selfsubjectrulesreview", "SelfSubjectRulesReview",
                                 False, ("create",), group="authorization.k8s.io", stored=False,
                                 review=access.rules_review)

KINDS = (SELF_SUBJECT_ACCESS_REVIEW, SELF_SUBJECT_RULES_REVIEW)
