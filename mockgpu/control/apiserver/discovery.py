"""API discovery documents: ``/version``, ``/api``, ``/api/v1``, ``/apis`` and the resource catalogue.

kubectl and the Python client find resources through these documents, so their shape follows
kube-apiserver's (``metav1.APIVersions``, ``APIResourceList``, ``APIGroupList`` and, for kubectl ≥ 1.30,
the aggregated ``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList``). What is served is ``registry``'s: the core
group and the named groups, each kind's names, scope, verbs and subresources from its record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mockgpu.apimachinery.version import GIT_VERSION, KUBE_MAJOR, KUBE_MINOR, KUBE_PATCH  # noqa: F401  (re-exported)
from mockgpu.config.featuregates import DEFAULT as DEFAULT_GATES
from mockgpu.config.featuregates import FeatureGates
from mockgpu.control.apiserver import registry
from mockgpu.control.apiserver.registry.kind import Kind

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

#: the core group's resources, and each named group-version's, by plural: views of ``registry`` (every kind it
#: has; a server serves those its feature gates allow: ``group_resources``)
RESOURCES: dict[str, Kind] = registry.served("v1") or {}
GROUP_RESOURCES: dict[str, dict[str, Kind]] = {gv: registry.served(gv) or {} for gv in registry.group_versions()}
served = registry.served
stored_plurals = registry.stored_plurals


def group_resources(gates: FeatureGates = DEFAULT_GATES) -> dict[str, dict[str, Kind]]:
    """Each named group-version a server running with ``gates`` serves, its resources by plural."""
    return {gv: registry.served(gv, gates) or {} for gv in registry.group_versions(gates)}


def root_paths(gates: FeatureGates = DEFAULT_GATES) -> list[str]:
    """``GET /`` (kube-apiserver's index, ``RootPaths``): every path the server registers, sorted."""
    resources = group_resources(gates)
    groups = {gv.split("/")[0] for gv in resources}
    return sorted({"/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version", "/openapi/v2",
                   "/openapi/v3", *(f"/apis/{g}" for g in groups), *(f"/apis/{gv}" for gv in resources)})


def version_info(platform: str = "linux/amd64") -> dict[str, str]:
    """``GET /version`` (``version.Info``)."""
    return {"major": KUBE_MAJOR, "minor": KUBE_MINOR, "gitVersion": GIT_VERSION,
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc", "platform": platform}


def api_versions(server_address: str = "127.0.0.1:0") -> dict[str, Any]:
    """``GET /api`` (``APIVersions``)."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _entries(info: Kind) -> list[dict[str, Any]]:
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


def api_group(group: str, gates: FeatureGates = DEFAULT_GATES) -> dict[str, Any] | None:
    """``GET /apis/<group>`` (``APIGroup``), or None when the group is not served."""
    versions = [gv for gv in group_resources(gates) if gv.split("/")[0] == group]
    if not versions:
        return None
    entries = [{"groupVersion": gv, "version": gv.split("/")[1]} for gv in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries,
            "preferredVersion": entries[0]}


def api_group_list(groups: Sequence[dict[str, Any]] | None = None,
                   gates: FeatureGates = DEFAULT_GATES) -> dict[str, Any]:
    """``GET /apis`` (``APIGroupList``): the served named groups."""
    if groups is None:
        names = dict.fromkeys(gv.split("/")[0] for gv in group_resources(gates))
        groups = [{k: v for k, v in (api_group(n, gates) or {}).items() if k not in ("kind", "apiVersion")}
                  for n in names]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": list(groups)}


def group_resource_list(group_version: str, gates: FeatureGates = DEFAULT_GATES) -> dict[str, Any] | None:
    """``GET /apis/<group>/<version>`` (``APIResourceList``; unlike ``/api/v1`` it carries apiVersion)."""
    resources = group_resources(gates).get(group_version)
    if resources is None:
        return None
    entries = [e for info in resources.values() for e in _entries(info)]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": sorted(entries, key=lambda e: e["name"])}


def _aggregated_resource(info: Kind) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": info.plural, "responseKind": {"group": info.group, "version": info.version, "kind": info.kind},
        "scope": "Namespaced" if info.namespaced else "Cluster", "singularResource": info.singular,
        "verbs": list(info.verbs)}
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(info.categories)
    subs = [{"subresource": s.name,
             "responseKind": {"group": s.group or info.group, "version": s.version or info.version, "kind": s.kind},
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


def aggregated_group_discovery(gates: FeatureGates = DEFAULT_GATES) -> dict[str, Any]:
    """``GET /apis`` with the aggregated-discovery Accept header: every served named group."""
    items: dict[str, dict[str, Any]] = {}
    for gv, resources in group_resources(gates).items():
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


def resource_for(name: str) -> Kind | None:
    """A resource by plural, singular, kind or short name (as kubectl users type them)."""
    lowered = name.lower()
    for info in RESOURCES.values():
        if lowered in (info.plural, info.singular, info.kind.lower()) or lowered in info.short_names:
            return info
    return None
