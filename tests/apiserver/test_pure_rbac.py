"""RBAC without HTTP: request attributes, impersonation, rule matching and the authorizer (``rbacauthz``), the
kinds' validation (``rbacstrategy``) and the bootstrap policy (``rbacbootstrap``). Table-driven; the expected
values are upstream's (k8s.io/apiserver ``requestinfo.go`` and ``impersonation.go``, k8s.io/kubernetes
``evaluation_helpers.go``, ``rbac/validation``); tests/conformance compares them with a live kube-apiserver."""

from __future__ import annotations

import pytest

from mockgpu.control.apiserver import rbacauthz, rbacbootstrap, rbacstrategy, registry
from mockgpu.control.apiserver.discovery import RESOURCES
from mockgpu.control.apiserver.handlers import ResourceAPI
from mockgpu.control.apiserver.rbacauthz import Attributes, User
from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.store import Store

K = {**RESOURCES, **(registry.served("rbac.authorization.k8s.io/v1") or {})}

ATTRS = [  # (method, path, query, verb, resource request, group, resource, subresource, namespace, name)
    ("GET", "/api/v1/namespaces/a/pods", {}, "list", True, "", "pods", "", "a", ""),
    ("GET", "/api/v1/namespaces/a/pods", {"watch": "true"}, "watch", True, "", "pods", "", "a", ""),
    ("GET", "/api/v1/watch/namespaces/a/pods", {}, "watch", True, "", "pods", "", "a", ""),
    ("GET", "/api/v1/namespaces/a/pods/p/log", {}, "get", True, "", "pods", "log", "a", "p"),
    ("POST", "/api/v1/namespaces/a/pods", {}, "create", True, "", "pods", "", "a", ""),
    ("DELETE", "/api/v1/namespaces/a/pods", {}, "deletecollection", True, "", "pods", "", "a", ""),
    ("PATCH", "/apis/apps/v1/namespaces/a/deployments/d/scale", {}, "patch", True, "apps", "deployments", "scale",
     "a", "d"),
    ("GET", "/api/v1/nodes", {}, "list", True, "", "nodes", "", "", ""),
    ("GET", "/api/v1/namespaces/a", {}, "get", True, "", "namespaces", "", "a", "a"),
    ("PUT", "/api/v1/namespaces/a/finalize", {}, "update", True, "", "namespaces", "finalize", "a", "a"),
    ("GET", "/version", {}, "get", False, "", "", "", "", ""),
    ("GET", "/apis", {}, "get", False, "", "", "", "", ""),
]


@pytest.mark.parametrize(("method", "path", "query", "verb", "res", "group", "resource", "sub", "ns", "name"), ATTRS,
                         ids=[f"{a[0]} {a[1]}{'?watch' if a[2] else ''}" for a in ATTRS])
def test_request_attributes_as_request_info(method, path, query, verb, res, group, resource, sub, ns, name):
    a = rbacauthz.request_attributes(method, path, query)
    assert (a.verb, a.resource_request, a.api_group, a.resource, a.subresource, a.namespace, a.name) == (
        verb, res, group, resource, sub, ns, name)


IMPERSONATION = [  # (headers, user name, groups) or the 400's message
    ({}, "mockgpu-admin", ("system:masters", "system:authenticated")),
    ({"Impersonate-User": "alice"}, "alice", ("system:authenticated",)),
    ({"Impersonate-User": "alice", "Impersonate-Group": "team-a"}, "alice", ("team-a", "system:authenticated")),
    ({"Impersonate-User": "system:serviceaccount:a:robot"}, "system:serviceaccount:a:robot",
     ("system:serviceaccounts", "system:serviceaccounts:a", "system:authenticated")),
    ({"Impersonate-User": "system:anonymous"}, "system:anonymous", ("system:unauthenticated",)),
    ({"Impersonate-Group": "team-a"}, "requested [{Group  team-a    }] without impersonating a user", None),
]


@pytest.mark.parametrize(("headers", "name", "groups"), IMPERSONATION, ids=[str(h) for h, _, _ in IMPERSONATION])
def test_impersonation_as_upstream(headers, name, groups):
    if groups is None:
        with pytest.raises(rbacauthz.ImpersonationError) as exc:
            rbacauthz.impersonated(headers, headers.items())
        assert str(exc.value) == name
        return
    user = rbacauthz.impersonated(headers, headers.items())
    assert (user.name, user.groups) == (name, groups)


def _a(verb: str, resource: str = "pods", sub: str = "", name: str = "", group: str = "") -> Attributes:
    return Attributes(verb, True, group, "v1", resource, sub, "a", name)


RULES = [  # (rule, attributes, allowed)
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, _a("get"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, _a("list"), False),
    ({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}, _a("delete"), True),
    ({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]}, _a("get"), False),
    ({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}, _a("get", "deployments", group="apps"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, _a("get", sub="log"), False),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}, _a("get", sub="log"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}, _a("get", sub="log"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}, _a("get"), False),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p"]}, _a("get", name="p"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p"]}, _a("get", name="q"), False),
    ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, Attributes("get", False, path="/healthz"), True),
    ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, Attributes("get", False, path="/apis/apps/v1"), True),
    ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, Attributes("get", False, path="/api"), False),
]


@pytest.mark.parametrize(("rule", "attrs", "allowed"), RULES, ids=[str(i) for i in range(len(RULES))])
def test_rule_matching_as_evaluation_helpers(tmp_path, rule, attrs, allowed):
    store = Store(tmp_path / "s.db")
    api = ResourceAPI(store)
    for ns in ("a",):
        api.create(RESOURCES["namespaces"], "", {"metadata": {"name": ns}})
    kind = "ClusterRole" if rule.get("nonResourceURLs") else "Role"
    if kind == "Role":
        api.create(K["roles"], "a", {"metadata": {"name": "r"}, "rules": [rule]})
    else:
        api.create(K["clusterroles"], "", {"metadata": {"name": "r"}, "rules": [rule]})
    binding = {"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "alice"}],
               "roleRef": {"kind": kind, "name": "r"}}
    if kind == "Role":
        api.create(K["rolebindings"], "a", binding)
    else:
        api.create(K["clusterrolebindings"], "", binding)
    assert rbacauthz.authorize(store, User("alice", ("system:authenticated",)), attrs)[0] is allowed
    assert rbacauthz.authorize(store, User("bob", ("system:authenticated",)), attrs)[0] is False
    store.close()


@pytest.fixture
def api(tmp_path):
    store = Store(tmp_path / "store.db")
    api = ResourceAPI(store)
    for ns in ("default", "kube-system", "kube-public", "team-a", "team-b"):
        api.create(RESOURCES["namespaces"], "", {"metadata": {"name": ns}})
    rbacbootstrap.ensure_bootstrap_policy(api)
    yield api
    store.close()


def test_bootstrap_policy_is_upstreams_and_aggregates(api):
    names = {o["metadata"]["name"] for o in api.store.list("clusterroles")}
    assert {"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user"} <= names
    assert len(rbacbootstrap.policy()) == len(api.store.list("clusterroles")) + len(
        api.store.list("clusterrolebindings")) + len(api.store.list("roles")) + len(api.store.list("rolebindings"))
    view = api.store.get("clusterroles", "", "view")
    assert any("pods" in r.get("resources", []) and "list" in r["verbs"] for r in view["rules"])
    assert not any("secrets" in r.get("resources", []) for r in view["rules"])  # view does not read secrets
    rv = api.store.rv
    rbacbootstrap.ensure_bootstrap_policy(api)
    assert api.store.rv == rv  # a second start writes nothing


DECISIONS = [  # (who, attributes, allowed, 403 message when refused)
    (User("mockgpu-admin", ("system:masters",)), _a("delete", "nodes"), True, ""),
    (User("alice", ("system:authenticated",)), Attributes("get", False, path="/version"), True, ""),
    (User("alice", ("system:authenticated",)), Attributes("get", True, "", "v1", "pods", "", "team-b", ""),
     False, 'pods is forbidden: User "alice" cannot get resource "pods" in API group "" in the namespace "team-b"'),
    (User("alice", ("team-a", "system:authenticated")),
     Attributes("list", True, "apps", "v1", "deployments", "", "team-a", ""), True, ""),
    (User("alice", ("team-a", "system:authenticated")),
     Attributes("delete", True, "apps", "v1", "deployments", "", "team-a", "d"), False,
     'deployments.apps "d" is forbidden: User "alice" cannot delete resource "deployments" in API group "apps" in '
     'the namespace "team-a"'),
    (User("alice", ("system:authenticated",)), Attributes("list", True, "", "v1", "nodes", "", "", ""), False,
     'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope'),
    (User("alice", ("system:authenticated",)), Attributes("get", False, path="/metrics"), False,
     'forbidden: User "alice" cannot get path "/metrics"'),
]


@pytest.mark.parametrize(("user", "attrs", "allowed", "message"), DECISIONS,
                         ids=[str(i) for i in range(len(DECISIONS))])
def test_authorizer_decisions_and_denials(api, user, attrs, allowed, message):
    api.create(K["rolebindings"], "team-a", {
        "metadata": {"name": "team-a-view"}, "subjects": [{"kind": "Group", "name": "team-a"}],
        "roleRef": {"kind": "ClusterRole", "name": "view"}})
    got, reason = rbacauthz.authorize(api.store, user, attrs)
    assert got is allowed
    if not allowed:
        assert rbacauthz.denial(user, attrs, reason).status["message"] == message


def test_a_binding_to_a_missing_role_says_so(api):
    api.create(K["rolebindings"], "team-a", {
        "metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "alice"}],
        "roleRef": {"kind": "Role", "name": "nope"}})
    allowed, reason = rbacauthz.authorize(api.store, User("alice", ("system:authenticated",)),
                                          Attributes("list", True, "", "v1", "pods", "", "team-a", ""))
    assert not allowed and reason == 'RBAC: role.rbac.authorization.k8s.io "nope" not found'


INVALID = [  # (plural, body, upstream's message)
    ("roles", {"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]},
     'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: verbs must contain at least '
     "one value"),
    ("roles", {"metadata": {"name": "r"}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]},
     'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced '
     "rules cannot apply to non-resource URLs"),
    ("clusterroles", {"metadata": {"name": "c"}, "rules": [{"verbs": ["get"], "resources": ["pods"]}]},
     'ClusterRole.rbac.authorization.k8s.io "c" is invalid: rules[0].apiGroups: Required value: resource rules must '
     "supply at least one api group"),
    ("rolebindings", {"metadata": {"name": "b"}, "roleRef": {"kind": "Secret", "name": "x"},
                      "subjects": [{"kind": "Robot", "name": "r"}]},
     'RoleBinding.rbac.authorization.k8s.io "b" is invalid: [roleRef.kind: Unsupported value: "Secret": supported '
     'values: "Role", "ClusterRole", subjects[0].kind: Unsupported value: "Robot": supported values: '
     '"ServiceAccount", "User", "Group"]'),
    ("clusterrolebindings", {"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
                             "subjects": [{"kind": "ServiceAccount", "name": "default"}]},
     'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: subjects[0].namespace: Required value'),
    ("roles", {"metadata": {"name": "a/b"}, "rules": []},
     "Role.rbac.authorization.k8s.io \"a/b\" is invalid: metadata.name: Invalid value: \"a/b\": may not contain '/'"),
]


@pytest.mark.parametrize(("plural", "body", "message"), INVALID, ids=[str(i) for i in range(len(INVALID))])
def test_invalid_rbac_objects_as_upstream(api, plural, body, message):
    ns = "team-a" if K[plural].namespaced else ""
    with pytest.raises(StatusError) as exc:
        api.create(K[plural], ns, body)
    assert exc.value.status["code"] == 422 and exc.value.status["message"] == message


def test_binding_defaults_and_immutable_role_ref(api):
    b = api.create(K["rolebindings"], "team-a", {
        "metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "alice"},
                                                {"kind": "ServiceAccount", "name": "default"}],
        "roleRef": {"kind": "ClusterRole", "name": "view"}})
    assert b["roleRef"]["apiGroup"] == rbacstrategy.GROUP
    assert b["subjects"][0]["apiGroup"] == rbacstrategy.GROUP and "apiGroup" not in b["subjects"][1]
    changed = {**b, "roleRef": {**b["roleRef"], "name": "edit"}}
    with pytest.raises(StatusError) as exc:
        api.update(K["rolebindings"], "team-a", "b", changed)
    assert exc.value.status["message"] == (
        'RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: '
        '{"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: field is immutable')
