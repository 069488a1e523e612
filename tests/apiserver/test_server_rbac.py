"""RBAC over HTTP: a request that impersonates a user is allowed or refused by the roles bound to it, with
upstream's 403, and ``kubectl auth can-i`` (SelfSubjectAccessReview) answers for that user."""

from __future__ import annotations

import pytest

ALICE = {"Impersonate-User": "alice"}


def test_impersonated_requests_follow_the_bindings(raw):
    code, _ = raw.json("GET", "/api/v1/namespaces/default/pods", headers=ALICE)
    assert code == 403
    code, body = raw.json("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", {
        "metadata": {"name": "alice-view"}, "subjects": [{"kind": "User", "name": "alice"}],
        "roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": "rbac.authorization.k8s.io"}})
    assert code == 201, body
    code, body = raw.json("GET", "/api/v1/namespaces/default/pods", headers=ALICE)
    assert code == 200 and body["kind"] == "PodList"
    code, body = raw.json("DELETE", "/api/v1/namespaces/default/pods/x", headers=ALICE)
    assert code == 403 and body["reason"] == "Forbidden" and body["details"] == {"name": "x", "kind": "pods"}
    assert body["message"] == ('pods "x" is forbidden: User "alice" cannot delete resource "pods" in API group "" '
                               'in the namespace "default"')
    code, body = raw.json("GET", "/api/v1/nodes", headers=ALICE)
    assert code == 403 and body["message"].endswith("at the cluster scope")
    code, _ = raw.json("GET", "/version", headers=ALICE)  # system:public-info-viewer, bound to every user
    assert code == 200


@pytest.mark.parametrize(("headers", "verb", "resource", "allowed"), [
    ({}, "delete", "nodes", True),
    (ALICE, "list", "pods", False),
    ({"Impersonate-User": "bob", "Impersonate-Group": "system:masters"}, "delete", "nodes", True),
])
def test_self_subject_access_review_answers_for_the_user(raw, headers, verb, resource, allowed):
    code, body = raw.json("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "namespace": "default"}}},
        headers=headers)
    assert code == 201 and body["status"]["allowed"] is allowed


def test_whoami_names_the_impersonated_user(raw):
    code, body = raw.json("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {}, headers=ALICE)
    assert code == 201 and body["status"]["userInfo"] == {"username": "alice", "groups": ["system:authenticated"]}


def test_impersonating_a_group_without_a_user_is_a_400(raw):
    code, body = raw.json("GET", "/api/v1/pods", headers={"Impersonate-Group": "team-a"})
    assert code == 400 and body["message"] == "requested [{Group  team-a    }] without impersonating a user"


def test_no_token_is_still_a_401_whatever_it_impersonates(raw):
    code, _ = raw.json("GET", "/api/v1/pods", token=None, headers={"Impersonate-User": "system:admin",
                                                                    "Impersonate-Group": "system:masters"})
    assert code == 401
