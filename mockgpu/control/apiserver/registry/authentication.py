"""authentication.k8s.io/v1: the SelfSubjectReview of ``kubectl auth whoami`` (answered by ``apiserver.access``,
never stored; upstream ``pkg/registry/authentication/selfsubjectreview``)."""

from __future__ import annotations

from mockgpu.control.apiserver import access
from mockgpu.control.apiserver.registry.kind import Kind

GROUP_VERSION = "authentication.k8s.io/v1"
SCHEME_KINDS: frozenset[str] = frozenset()

SELF_SUBJECT_REVIEW = Kind("selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview", False, ("create",),
                           group="authentication.k8s.io", stored=False, review=access.self_subject_review)

KINDS = (SELF_SUBJECT_REVIEW,)
