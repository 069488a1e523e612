"""rbac.authorization.k8s.io/v1 Roles, ClusterRoles, RoleBindings and ClusterRoleBindings: defaults and validation
as kube-apiserver v1.37.2 (``pkg/apis/rbac/v1/defaults.go``, ``pkg/apis/rbac/validation/validation.go``, and the
kinds' ``strategy.go``: a binding's ``roleRef`` cannot change). Names are path segments (``ValidateRBACName``:
``IsPathSegmentName``), so ``system:aggregate-to-admin`` is a valid name.
"""

from __future__ import annotations

from typing import Any

from mockgpu.apimachinery.names import dns1123_subdomain, path_segment_name
from mockgpu.control.apiserver.status import FieldError, field_invalid, field_not_supported, field_required
from mockgpu.control.apiserver.workloadcommon import validate_label_selector

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def default_binding(obj: Obj) -> Obj:
    """``SetDefaults_RoleBinding``/``ClusterRoleBinding`` and ``SetDefaults_Subject``."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = GROUP
    return obj


def prepare_binding(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    return default_binding(obj)


def _rule_errors(rule: Any, namespaced: bool, path: str) -> list[FieldError]:
    """``ValidatePolicyRule``."""
    rule = rule if isinstance(rule, dict) else {}
    errs: list[FieldError] = []
    if not rule.get("verbs"):
        errs.append(field_required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            errs.append(field_invalid(f"{path}.nonResourceURLs", list(urls),
                                      "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errs.append(field_invalid(f"{path}.nonResourceURLs", list(urls),
                                      "rules cannot apply to both regular resources and non-resource URLs"))
        return errs
    if not rule.get("apiGroups"):
        errs.append(field_required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errs.append(field_required(f"{path}.resources", "resource rules must supply at least one resource"))
    return errs


def validate_role(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateRole`` (after ObjectMeta's)."""
    errs: list[FieldError] = []
    for i, rule in enumerate(obj.get("rules") or []):
        errs += _rule_errors(rule, True, f"rules[{i}]")
    return errs


def validate_cluster_role(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateClusterRole``: rules, and an aggregation rule's label selectors."""
    errs: list[FieldError] = []
    for i, rule in enumerate(obj.get("rules") or []):
        errs += _rule_errors(rule, False, f"rules[{i}]")
    agg = obj.get("aggregationRule")
    if isinstance(agg, dict):
        selectors = agg.get("clusterRoleSelectors") or []
        if not selectors:
            errs.append(field_required("aggregationRule.clusterRoleSelectors",
                                       "at least one clusterRoleSelector required if aggregationRule is non-nil"))
        for i, selector in enumerate(selectors):
            if validate_label_selector(selector, ""):
                errs.append(field_invalid(f"aggregationRule.clusterRoleSelectors[{i}]", selector,
                                          "invalid label selector."))
    return errs


def _subject_errors(subject: Any, namespaced: bool, path: str) -> list[FieldError]:
    """``ValidateRoleBindingSubject``."""
    subject = subject if isinstance(subject, dict) else {}
    name, subject_kind = subject.get("name") or "", subject.get("kind") or ""
    group = subject.get("apiGroup") or ""
    errs: list[FieldError] = []
    if not name:
        errs.append(field_required(f"{path}.name"))
    if subject_kind == "ServiceAccount":
        if name:
            errs += [field_invalid(f"{path}.name", name, m) for m in dns1123_subdomain(name)]
        if group:
            errs.append(field_not_supported(f"{path}.apiGroup", group, ("",)))
        if not namespaced and not subject.get("namespace"):
            errs.append(field_required(f"{path}.namespace"))
    elif subject_kind in ("User", "Group"):
        if group != GROUP:
            errs.append(field_not_supported(f"{path}.apiGroup", group, (GROUP,)))
    else:
        errs.append(field_not_supported(f"{path}.kind", subject_kind, SUBJECT_KINDS))
    return errs


def _binding_errors(obj: Obj, old: Obj | None, namespaced: bool) -> list[FieldError]:
    """``ValidateRoleBinding``/``ValidateClusterRoleBinding``, and on update the immutable ``roleRef``."""
    ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
    errs: list[FieldError] = []
    if old is not None and ref != (old.get("roleRef") or {}):
        # the internal rbac.RoleRef, whose fields carry no json tags, marshalled
        errs.append(field_invalid("roleRef", {"APIGroup": ref.get("apiGroup", ""), "Kind": ref.get("kind", ""),
                                              "Name": ref.get("name", "")}, "field is immutable"))
    if ref.get("apiGroup") != GROUP:
        errs.append(field_not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), (GROUP,)))
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if ref.get("kind") not in kinds:
        errs.append(field_not_supported("roleRef.kind", ref.get("kind", ""), kinds))
    if not ref.get("name"):
        errs.append(field_required("roleRef.name"))
    else:
        errs += [field_invalid("roleRef.name", ref["name"], m) for m in path_segment_name(str(ref["name"]), False)]
    for i, subject in enumerate(obj.get("subjects") or []):
        errs += _subject_errors(subject, namespaced, f"subjects[{i}]")
    return errs


def validate_role_binding(obj: Obj, old: Obj | None) -> list[FieldError]:
    return _binding_errors(obj, old, True)


def validate_cluster_role_binding(obj: Obj, old: Obj | None) -> list[FieldError]:
    return _binding_errors(obj, old, False)
