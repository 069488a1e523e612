"""rbac.authorization.k8s.io/v1: Roles, ClusterRoles, RoleBindings, ClusterRoleBindings
(``pkg/registry/rbac/<kind>``; the rules are in ``apiserver.rbacstrategy``, the authorizer in ``apiserver.rbacauthz``).
Roles and ClusterRoles have no printer upstream: the default table (Name, Created At)."""

from __future__ import annotations

from mockgpu.control.apiserver import printers, rbacstrategy
from mockgpu.control.apiserver.names import path_segment_name
from mockgpu.control.apiserver.registry.kind import Kind

GROUP = rbacstrategy.GROUP
GROUP_VERSION = f"{GROUP}/v1"
SCHEME_KINDS: frozenset[str] = frozenset()

ROLE = Kind("roles", "role", "Role", True, group=GROUP, name_rule=path_segment_name,
            validate=rbacstrategy.validate_role, model="V1Role")
CLUSTERROLE = Kind("clusterroles", "clusterrole", "ClusterRole", False, group=GROUP, name_rule=path_segment_name,
                   validate=rbacstrategy.validate_cluster_role, model="V1ClusterRole")
ROLEBINDING = Kind("rolebindings", "rolebinding", "RoleBinding", True, group=GROUP, name_rule=path_segment_name,
                   prepare=rbacstrategy.prepare_binding, validate=rbacstrategy.validate_role_binding,
                   printer=printers.ROLEBINDING, model="V1RoleBinding")
CLUSTERROLEBINDING = Kind("clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", False, group=GROUP,
                          name_rule=path_segment_name, prepare=rbacstrategy.prepare_binding,
                          validate=rbacstrategy.validate_cluster_role_binding, printer=printers.CLUSTERROLEBINDING,
                          model="V1ClusterRoleBinding")

KINDS = (CLUSTERROLEBINDING, CLUSTERROLE, ROLEBINDING, ROLE)
