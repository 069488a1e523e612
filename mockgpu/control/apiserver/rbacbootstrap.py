"""The RBAC objects kube-apiserver creates at start (its bootstrap policy, ``plugin/pkg/auth/authorizer/rbac/
bootstrappolicy``): the default ClusterRoles (``cluster-admin``, ``admin``, ``edit``, ``view``, the ``system:*`` roles
of components and controllers), the kube-system and kube-public Roles, and their bindings — among them
``cluster-admin`` bound to the group ``system:masters``, and discovery and basic-user rules for every authenticated
user. The objects are upstream's, copied from its own rendering by ``scripts/gen-rbac-bootstrap`` into
``rbac-bootstrap.json`` (its ``source`` names where from, and the license). Missing objects are created at each start,
as the bootstrap hook does; an aggregated ClusterRole (``admin``, ``edit``, ``view``) gets the union of the rules of
the roles it selects, which upstream's clusterrole-aggregation controller writes.
"""

from __future__ import annotations

import copy
import json
import uuid
from functools import cache
from pathlib import Path
from typing import Any

from mockgpu.control.apiserver import rbacauthz, registry
from mockgpu.control.apiserver.handlers import ResourceAPI, now_rfc3339

DATA = Path(__file__).with_name("rbac-bootstrap.json")


@cache
def policy() -> tuple[dict[str, Any], ...]:
    """The bootstrap objects, as upstream renders them."""
    return tuple(json.loads(DATA.read_text())["items"])


def ensure_bootstrap_policy(api: ResourceAPI) -> None:
    """Create what is missing (stored as upstream renders it: the data is upstream's own, valid by construction,
    so the start does not pay for decoding and validating 141 objects); give each aggregated ClusterRole its rules."""
    for item in policy():
        info = registry.by_kind(item["kind"])
        assert info is not None, item["kind"]
        ns = item["metadata"].get("namespace", "") if info.namespaced else ""
        if api.store.get(info.plural, ns, item["metadata"]["name"]) is None:
            obj = copy.deepcopy(item)
            obj["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339())
            api.store.create(info.plural, obj)
    roles = registry.by_kind("ClusterRole")
    assert roles is not None
    for role in api.store.list("clusterroles"):
        if isinstance(role.get("aggregationRule"), dict):
            rules = rbacauthz.cluster_role_rules(api.store, role)
            if rules != (role.get("rules") or []):
                api.update(roles, "", role["metadata"]["name"], {**copy.deepcopy(role), "rules": rules})
