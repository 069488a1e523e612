"""API discovery documents: ``/version``, ``/api``, ``/api/v1``, ``/apis`` and the resource catalogue.

kubectl and the Python client find resources through these documents, so their shape follows
kube-apiserver's (``metav1.APIVersions``, ``APIResourceList``, ``APIGroupList`` and, for kubectl ≥ 1.30,
the aggregated ``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList``). Only the core group is served by the
embedded server's core resources plus the few named groups in :data:`GROUP_RESOURCES` (Leases, events.k8s.io
Events over the core Event storage, apps/v1 Deployments, ReplicaSets, DaemonSets and StatefulSets, batch/v1 Jobs
and CronJobs, resource.k8s.io/v1 DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices, and
the self-reviews
for ``kubectl auth can-i`` and ``whoami``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mockgpu.apimachinery.version import GIT_VERSION, KUBE_MAJOR, KUBE_MINOR, KUBE_PATCH  # noqa: F401  (re-exported)

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

_ALL = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_NO_COLLECTION = ("create", "delete", "get", "list", "patch", "update", "watch")
_STATUS = ("get", "patch", "update")


@dataclass(frozen=True)
class Subresource:
    """``pods/status`` style entry: its kind and verbs, and the group/version of a foreign kind."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""


@dataclass(frozen=True)
class ResourceInfo:
    """One served resource: what discovery advertises and what the server needs to route it."""

    plural: str
    singular: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = _ALL
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = field(default_factory=tuple)
    group: str = ""
    version: str = "v1"

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


RESOURCES: dict[str, ResourceInfo] = {
    "pods": ResourceInfo("pods", "pod", "Pod", True, _ALL, ("po",), ("all",), (
        Subresource("binding", "Binding", ("create",)),
        Subresource("eviction", "Eviction", ("create",), "policy", "v1"),
        Subresource("log", "Pod", ("get",)),
        Subresource("status", "Pod", _STATUS),
    )),
    "nodes": ResourceInfo("nodes", "node", "Node", False, _ALL, ("no",), (), (
        Subresource("status", "Node", _STATUS),
    )),
    "namespaces": ResourceInfo("namespaces", "namespace", "Namespace", False, _NO_COLLECTION, ("ns",), (), (
        Subresource("status", "Namespace", _STATUS),
    )),
    "events": ResourceInfo("events", "event", "Event", True, _ALL, ("ev",)),
    "configmaps": ResourceInfo("configmaps", "configmap", "ConfigMap", True, _ALL, ("cm",)),
    "serviceaccounts": ResourceInfo("serviceaccounts", "serviceaccount", "ServiceAccount", True, _ALL, ("sa",)),
    "bindings": ResourceInfo("bindings", "binding", "Binding", True, ("create",)),
    # read-only: only the ``kubernetes`` Service of ``default`` exists (see ``services``)
    "services": ResourceInfo("services", "service", "Service", True, ("get", "list", "watch"), ("svc",), ("all",)),
}

#: named API groups, by "group/version": the resources each serves under ``/apis/<group>/<version>``
GROUP_RESOURCES: dict[str, dict[str, ResourceInfo]] = {
    "coordination.k8s.io/v1": {
        "leases": ResourceInfo("leases", "lease", "Lease", True, group="coordination.k8s.io")},
    "events.k8s.io/v1": {  # the same objects as core/v1 events, converted (see ``eventsv1``)
        "events": ResourceInfo("events", "event", "Event", True, short_names=("ev",), group="events.k8s.io")},
    "authorization.k8s.io/v1": {
        "selfsubjectaccessreviews": ResourceInfo("selfsubjectaccessreviews", "selfsubjectaccessreview",
                                                 "SelfSubjectAccessReview", False, ("create",),
                                                 group="authorization.k8s.io"),
        "selfsubjectrulesreviews": ResourceInfo("selfsubjectrulesreviews", "selfsubjectrulesreview",
                                                "SelfSubjectRulesReview", False, ("create",),
                                                group="authorization.k8s.io")},
    "apps/v1": {
        "deployments": ResourceInfo("deployments", "deployment", "Deployment", True, short_names=("deploy",),
                                    categories=("all",), group="apps", subresources=(
                                        Subresource("scale", "Scale", _STATUS, "autoscaling", "v1"),
                                        Subresource("status", "Deployment", _STATUS))),
        "replicasets": ResourceInfo("replicasets", "replicaset", "ReplicaSet", True, short_names=("rs",),
                                    categories=("all",), group="apps", subresources=(
                                        Subresource("scale", "Scale", _STATUS, "autoscaling", "v1"),
                                        Subresource("status", "ReplicaSet", _STATUS))),
        "daemonsets": ResourceInfo("daemonsets", "daemonset", "DaemonSet", True, short_names=("ds",),
                                   categories=("all",), group="apps", subresources=(
                                       Subresource("status", "DaemonSet", _STATUS),)),
        "statefulsets": ResourceInfo("statefulsets", "statefulset", "StatefulSet", True, short_names=("sts",),
                                     categories=("all",), group="apps", subresources=(
                                         Subresource("scale", "Scale", _STATUS, "autoscaling", "v1"),
                                         Subresource("status", "StatefulSet", _STATUS)))},
    "batch/v1": {
        "jobs": ResourceInfo("jobs", "job", "Job", True, categories=("all",), group="batch", subresources=(
            Subresource("status", "Job", _STATUS),)),
        "cronjobs": ResourceInfo("cronjobs", "cronjob", "CronJob", True, short_names=("cj",), categories=("all",),
                                 group="batch", subresources=(Subresource("status", "CronJob", _STATUS),))},
    "resource.k8s.io/v1": {  # Dynamic Resource Allocation (see ``resourcev1``); upstream has no short names here
        "deviceclasses": ResourceInfo("deviceclasses", "deviceclass", "DeviceClass", False, group="resource.k8s.io"),
        "resourceclaims": ResourceInfo("resourceclaims", "resourceclaim", "ResourceClaim", True,
                                       group="resource.k8s.io",
                                       subresources=(Subresource("status", "ResourceClaim", _STATUS),)),
        "resourceclaimtemplates": ResourceInfo("resourceclaimtemplates", "resourceclaimtemplate",
                                               "ResourceClaimTemplate", True, group="resource.k8s.io"),
        "resourceslices": ResourceInfo("resourceslices", "resourceslice", "ResourceSlice", False,
                                       group="resource.k8s.io")},
    "authentication.k8s.io/v1": {
        "selfsubjectreviews": ResourceInfo("selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview", False,
                                           ("create",), group="authentication.k8s.io")},
}

KIND_TO_PLURAL: dict[str, str] = {info.kind: plural for plural, info in RESOURCES.items()} | {
    "Lease": "leases", "Deployment": "deployments", "ReplicaSet": "replicasets", "Job": "jobs",
    "DaemonSet": "daemonsets", "CronJob": "cronjobs", "StatefulSet": "statefulsets", "DeviceClass": "deviceclasses",
    "ResourceClaim": "resourceclaims", "ResourceClaimTemplate": "resourceclaimtemplates",
    "ResourceSlice": "resourceslices"}


def served(group_version: str) -> dict[str, ResourceInfo] | None:
    """The resources of ``"v1"`` (core) or ``"<group>/<version>"``; None when that group-version is not served."""
    return RESOURCES if group_version == "v1" else GROUP_RESOURCES.get(group_version)


def stored_plurals() -> list[str]:
    """Every store key that holds objects (events.k8s.io events share the core ``events`` key)."""
    infos = [*RESOURCES.values(), *(i for gv in GROUP_RESOURCES.values() for i in gv.values())]
    return sorted({i.plural for i in infos if i.namespaced and i.plural != "bindings"})


def root_paths() -> list[str]:
    """``GET /`` (kube-apiserver's index, ``RootPaths``): every path the server registers, sorted."""
    groups = {gv.split("/")[0] for gv in GROUP_RESOURCES}
    return sorted({"/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version", "/openapi/v2",
                   "/openapi/v3", *(f"/apis/{g}" for g in groups), *(f"/apis/{gv}" for gv in GROUP_RESOURCES)})


def version_info(platform: str = "linux/amd64") -> dict[str, str]:
    """``GET /version`` (``version.Info``)."""
    return {"major": KUBE_MAJOR, "minor": KUBE_MINOR, "gitVersion": GIT_VERSION,
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc", "platform": platform}


def api_versions(server_address: str = "127.0.0.1:0") -> dict[str, Any]:
    """``GET /api`` (``APIVersions``)."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _entries(info: ResourceInfo) -> list[dict[str, Any]]:
    main: dict[str, Any] = {"name": info.plural, "singularName": info.singular, "namespaced": info.namespaced,
                            "kind": info.kind, "verbs": list(info.verbs)}
    if info.short_names:
        main["shortNames"] = list(info.short_names)
    if info.categories:
        main["categories"] = list(info.categories)
    out = [main]
    for sub in info.subresources:
        entry: dict[str, Any] = {"name": f"{info.plural}/{sub.name}", "singularName": "",
                                 "namespaced": info.namespaced, "kind": sub.kind, "verbs": list(sub.verbs)}
        if sub.group:
            entry["group"], entry["version"] = sub.group, sub.version
        out.append(entry)
    return out


def api_resource_list_v1() -> dict[str, Any]:
    """``GET /api/v1`` (``APIResourceList``), resources sorted by name like upstream."""
    resources = [e for info in RESOURCES.values() for e in _entries(info)]
    return {"kind": "APIResourceList", "groupVersion": "v1", "resources": sorted(resources, key=lambda e: e["name"])}


def api_group(group: str) -> dict[str, Any] | None:
    """``GET /apis/<group>`` (``APIGroup``), or None when the group is not served."""
    versions = [gv for gv in GROUP_RESOURCES if gv.split("/")[0] == group]
    if not versions:
        return None
    entries = [{"groupVersion": gv, "version": gv.split("/")[1]} for gv in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries,
            "preferredVersion": entries[0]}


def api_group_list(groups: Sequence[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``GET /apis`` (``APIGroupList``): the served named groups."""
    if groups is None:
        names = dict.fromkeys(gv.split("/")[0] for gv in GROUP_RESOURCES)
        groups = [{k: v for k, v in (api_group(n) or {}).items() if k not in ("kind", "apiVersion")} for n in names]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": list(groups)}


def group_resource_list(group_version: str) -> dict[str, Any] | None:
    """``GET /apis/<group>/<version>`` (``APIResourceList``; unlike ``/api/v1`` it carries apiVersion)."""
    resources = GROUP_RESOURCES.get(group_version)
    if resources is None:
        return None
    entries = [e for info in resources.values() for e in _entries(info)]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": sorted(entries, key=lambda e: e["name"])}


def _aggregated_resource(info: ResourceInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": info.plural, "responseKind": {"group": info.group, "version": info.version, "kind": info.kind},
        "scope": "Namespaced" if info.namespaced else "Cluster", "singularResource": info.singular,
        "verbs": list(info.verbs)}
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(info.categories)
    subs = [{"subresource": s.name, "responseKind": {"group": s.group or info.group, "version": s.version or "v1",
                                                     "kind": s.kind},
             "verbs": list(s.verbs)} for s in info.subresources]
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated_core_discovery() -> dict[str, Any]:
    """``GET /api`` with the aggregated-discovery Accept header (served as ``AGGREGATED_CONTENT_TYPE``)."""
    resources = [_aggregated_resource(RESOURCES[name]) for name in sorted(RESOURCES)]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
            "items": [{"metadata": {"creationTimestamp": None},
                       "versions": [{"version": "v1", "resources": resources, "freshness": "Current"}]}]}


def aggregated_group_discovery() -> dict[str, Any]:
    """``GET /apis`` with the aggregated-discovery Accept header: every served named group."""
    items: dict[str, dict[str, Any]] = {}
    for gv, resources in GROUP_RESOURCES.items():
        group, version = gv.split("/")
        item = items.setdefault(group, {"metadata": {"name": group, "creationTimestamp": None}, "versions": []})
        item["versions"].append({"version": version, "freshness": "Current",
                                 "resources": [_aggregated_resource(resources[n]) for n in sorted(resources)]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
            "items": list(items.values())}


def wants_aggregated(accept: str) -> bool:
    """Whether an Accept header asks for aggregated discovery v2 before plain JSON (kubectl ≥ 1.30 does)."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if {"g=apidiscovery.k8s.io", "v=v2", "as=APIGroupDiscoveryList"} <= params:
            return True
        if part.split(";")[0].strip() in ("application/json", "*/*"):
            return False
    return False


def resource_for(name: str) -> ResourceInfo | None:
    """A resource by plural, singular, kind or short name (as kubectl users type them)."""
    lowered = name.lower()
    for info in RESOURCES.values():
        if lowered in (info.plural, info.singular, info.kind.lower()) or lowered in info.short_names:
            return info
    return None
