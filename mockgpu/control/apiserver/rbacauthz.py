"""Who is asking and may they: impersonation, request attributes and the RBAC authorizer, as kube-apiserver v1.37.2.

Upstream, in k8s.io/kubernetes v1.37.2 and k8s.io/apiserver v0.37.2:
- the user: the embedded server has one credential, the cluster's bearer token, whose user is ``mockgpu-admin`` in
  ``system:masters`` (what a kubeadm admin certificate gives). kubectl's ``--as``/``--as-group`` send
  ``Impersonate-User``/``Impersonate-Group`` headers (``endpoints/filters/impersonation.go``): the request then runs as
  that user, with ``system:authenticated`` added, and a service account
  (``system:serviceaccount:<ns>:<name>``) also in ``system:serviceaccounts`` and ``system:serviceaccounts:<ns>``.
  Only the admin can impersonate here, and it may impersonate anyone (``system:masters``).
- the request's attributes: ``endpoints/request/requestinfo.go`` (verb from the method and the path: get, list,
  watch, create, update, patch, delete, deletecollection; namespace, resource, subresource, name; the rest are
  non-resource URLs with the method's lower-case verb).
- the decision: ``system:masters`` is allowed everything (the privileged-group authorizer); everyone else goes to RBAC
  (``plugin/pkg/auth/authorizer/rbac/rbac.go``: the rules of ClusterRoleBindings, then of the RoleBindings of the
  request's namespace, whose subjects name the user, a group of the user, or the service account;
  ``pkg/apis/rbac/v1/evaluation_helpers.go`` for how a rule matches), and a denial is upstream's 403.
- ``kubectl auth can-i`` (SelfSubjectAccessReview) and ``--list`` (SelfSubjectRulesReview) answer for that user.

Simplified (docs/conformance.md): the ClusterRole aggregation controller is not run — an aggregated role's rules are
computed when it is used (and written once at start for the bootstrap roles), so ``kubectl get clusterrole admin
-o yaml`` shows the start's union; creating a Role or binding does not check escalation (upstream refuses rules the
creator does not hold unless it may ``escalate``/``bind``), since every identity here is one the admin chose to
impersonate; no other credentials (service-account tokens, certificates) are accepted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote

from mockgpu.apimachinery.selectors import selector_matches
from mockgpu.control.apiserver.status import StatusError, forbidden

Obj = dict[str, Any]
ADMIN_USER = "mockgpu-admin"
ADMIN_GROUPS = ("system:masters", "system:authenticated")
MASTERS = "system:masters"
SA_PREFIX = "system:serviceaccount:"


class Objects(Protocol):
    """What the authorizer reads: stored RBAC objects."""

    def get(self, resource: str, namespace: str, name: str) -> Obj | None: ...

    def list(self, resource: str, namespace: str | None = None) -> list[Obj]: ...


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def privileged(self) -> bool:
        return MASTERS in self.groups


ADMIN = User(ADMIN_USER, ADMIN_GROUPS)


class ImpersonationError(Exception):
    """A malformed impersonation request; ``code`` the status upstream answers."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def impersonated(headers: Mapping[str, str], items: Iterable[tuple[str, str]]) -> User:
    """The user a request runs as: the admin, or whom its ``Impersonate-*`` headers name
    (``impersonation.WithImpersonation``; the admin is allowed to impersonate anyone)."""
    items = list(items)
    name = headers.get("Impersonate-User", "")
    groups = [v for k, v in items if k.lower() == "impersonate-group"]
    uid = headers.get("Impersonate-Uid", "")
    extra: dict[str, list[str]] = {}
    for k, v in items:
        if k.lower().startswith("impersonate-extra-"):
            extra.setdefault(unquote(k[len("impersonate-extra-"):].lower()), []).append(v)
    if not name:
        if groups or uid or extra:
            requests = [f"{{Group  {g}    }}" for g in groups]
            requests += [f"{{UserExtra  {v}  authentication.k8s.io/v1  {k}}}" for k, vs in extra.items() for v in vs]
            requests += [f"{{UID  {uid}  authentication.k8s.io/v1  }}"] if uid else []
            raise ImpersonationError(400, f"requested [{' '.join(requests)}] without impersonating a user")
        return ADMIN
    all_groups = list(groups)
    if name.startswith(SA_PREFIX) and not groups and name.count(":") == 3:
        ns = name[len(SA_PREFIX):].split(":", 1)[0]
        all_groups = ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
    if name != "system:anonymous":
        if not any(g in ("system:authenticated", "system:unauthenticated") for g in all_groups):
            all_groups.append("system:authenticated")
    elif "system:unauthenticated" not in all_groups:
        all_groups.append("system:unauthenticated")
    return User(name, tuple(all_groups), uid, {k: tuple(v) for k, v in extra.items()})


# ---- request attributes (RequestInfoFactory) ---------------------------------------------------------------------

@dataclass(frozen=True)
class Attributes:
    """``authorizer.Attributes`` of one request."""

    verb: str
    resource_request: bool
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                 "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """``RequestInfoFactory.NewRequestInfo``."""
    parts = [p for p in path.strip("/").split("/")]
    if parts and parts[0] == "api" and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts and parts[0] == "apis" and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return Attributes(method.lower(), False, path=path or "/")
    verb = _METHOD_VERBS.get(method, method.lower())
    if rest and rest[0] == "watch":  # the legacy /watch/ prefix
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces":
        if len(rest) > 1:
            namespace = rest[1]
            if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
                rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if not rest:
        return Attributes(method.lower(), False, path=path)
    if not name and verb == "get":
        verb = "watch" if query.get("watch") in ("1", "true") else "list"
    elif verb == "get" and query.get("watch") in ("1", "true"):
        verb = "watch"
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(verb, True, group, version, resource, sub, namespace, name, path)


# ---- rules (evaluation_helpers.go) -------------------------------------------------------------------------------

def _rule_allows(rule: Obj, a: Attributes) -> bool:
    verbs = rule.get("verbs") or []
    if "*" not in verbs and a.verb not in verbs:
        return False
    if not a.resource_request:
        for url in rule.get("nonResourceURLs") or []:
            if url == "*" or url == a.path or (url.endswith("*") and a.path.startswith(url[:-1])):
                return True
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and a.api_group not in groups:
        return False
    combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    resources = rule.get("resources") or []
    if not any(r == "*" or r == combined or (a.subresource and r == f"*/{a.subresource}") for r in resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or a.name in names


def _applies(subject: Obj, user: User, binding_ns: str) -> bool:
    subject_kind, name = subject.get("kind"), subject.get("name") or ""
    if subject_kind == "User":
        return name == user.name
    if subject_kind == "Group":
        return name in user.groups
    if subject_kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return user.name == f"{SA_PREFIX}{ns}:{name}"
    return False


def cluster_role_rules(objects: Objects, role: Obj) -> list[Obj]:
    """A ClusterRole's rules; an aggregated one's are the union of the roles its selectors match."""
    agg = role.get("aggregationRule")
    if not isinstance(agg, dict):
        return list(role.get("rules") or [])
    rules: list[Obj] = []
    name = (role.get("metadata") or {}).get("name")
    for other in sorted(objects.list("clusterroles"), key=lambda o: o["metadata"]["name"]):
        if other["metadata"]["name"] == name or isinstance(other.get("aggregationRule"), dict):
            continue
        labels = other["metadata"].get("labels") or {}
        if any(selector_matches(sel, labels) for sel in agg.get("clusterRoleSelectors") or []):
            rules += [r for r in other.get("rules") or [] if r not in rules]
    return rules


def _role_rules(objects: Objects, ref: Obj, binding_ns: str) -> tuple[list[Obj], str]:
    """(rules, error) of a binding's roleRef; a missing role is an error the denial reports."""
    ref_kind, name = ref.get("kind"), ref.get("name") or ""
    if ref_kind == "ClusterRole":
        role = objects.get("clusterroles", "", name)
        if role is None:
            return [], f'clusterrole.rbac.authorization.k8s.io "{name}" not found'
        return cluster_role_rules(objects, role), ""
    role = objects.get("roles", binding_ns, name)
    if role is None:
        return [], f'role.rbac.authorization.k8s.io "{name}" not found'
    return list(role.get("rules") or []), ""


def rules_for(objects: Objects, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
    """``VisitRulesFor``: every rule that applies to ``user`` in ``namespace`` ("" for cluster scope), and the
    errors met (roles that do not exist)."""
    rules: list[Obj] = []
    errors: list[str] = []
    for binding in objects.list("clusterrolebindings"):
        if any(_applies(s, user, "") for s in binding.get("subjects") or []):
            got, err = _role_rules(objects, binding.get("roleRef") or {}, "")
            rules += got
            errors += [err] if err else []
    if namespace:
        for binding in objects.list("rolebindings", namespace):
            if any(_applies(s, user, namespace) for s in binding.get("subjects") or []):
                got, err = _role_rules(objects, binding.get("roleRef") or {}, namespace)
                rules += got
                errors += [err] if err else []
    return rules, errors


def authorize(objects: Objects, user: User, a: Attributes) -> tuple[bool, str]:
    """(allowed, reason): the privileged group, then RBAC."""
    if user.privileged:
        return True, ""
    rules, errors = rules_for(objects, user, a.namespace if a.resource_request else "")
    if any(_rule_allows(r, a) for r in rules):
        return True, "RBAC: allowed"
    return False, ("RBAC: " + ", ".join(errors)) if errors else ""


_SANITIZE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def denial(user: User, a: Attributes, reason: str) -> StatusError:
    """Upstream's 403 for a denied request (``responsewriters.ForbiddenStatusError``)."""
    if not a.resource_request:
        msg = f'User "{user.name}" cannot {a.verb} path "{a.path}"'
    else:
        resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        scope = f' in the namespace "{a.namespace}"' if a.namespace else " at the cluster scope"
        msg = f'User "{user.name}" cannot {a.verb} resource "{resource}" in API group "{a.api_group}"{scope}'
    msg = msg.translate(_SANITIZE) + (f": {reason}" if reason else "")
    if not a.resource_request:
        return forbidden(reason=msg)
    return forbidden(a.resource, a.name, msg, group=a.api_group)
