"""core/v1 Services: defaults, validation, and the cluster-IP and node-port allocators, as kube-apiserver v1.37.2.

Upstream, in k8s.io/kubernetes v1.37.2:
- ``pkg/apis/core/v1/defaults.go`` ``SetDefaults_Service`` (``default_service``);
- ``pkg/registry/core/service/strategy.go`` (``PrepareForCreate``/``PrepareForUpdate``, ``dropTypeDependentFields``:
  ``prepare_service``) and ``pkg/apis/core/validation/validation.go`` (``validateService``,
  ``ValidateServiceClusterIPsRelatedFields``, ``validateUpgradeDowngradeClusterIPs``: ``validate_service``);
- ``pkg/registry/core/service/storage/storage.go`` (``beginCreate``/``beginUpdate``: ``normalizeClusterIPs``,
  ``patchAllocatedValues``) and ``storage/alloc.go`` (``initIPFamilyFields``, the IP and port allocations:
  ``allocate``), with the allocators' messages (``ipallocator``, ``portallocator``).

The cluster is single-stack IPv4, as the upstream backend's kube-apiserver here: service CIDR ``10.96.0.0/16``
(``--service-cluster-ip-range``, kind's default too), node ports ``30000-32767`` (the default
``--service-node-port-range``). What is allocated is read from the stored Services themselves (the embedded server
applies writes one at a time on its event loop, so a scan and the write that follows are one step; nothing is left
to release when a create fails or a Service goes). Simplified, said in docs/conformance.md: upstream picks a free
address or port at random in the upper part of each range; here the pick is derived from the Service's
namespace and name (the same Service gets the same address in every run, which keeps the labs reproducible), and
no ``networking.k8s.io/v1`` IPAddress/ServiceCIDR objects are kept. There is no service data path: no kube-proxy,
no Endpoints/EndpointSlices.
"""

from __future__ import annotations

import copy
import hashlib
import ipaddress
import json
from collections.abc import Iterable
from typing import Any, Protocol

from mockgpu.apimachinery.names import dns1123_label, dns1123_subdomain, port_name, qualified_name
from mockgpu.control.apiserver import names
from mockgpu.control.apiserver.status import (
    FieldError,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    internal_error,
)

Obj = dict[str, Any]

SERVICE_CIDR = ipaddress.IPv4Network("10.96.0.0/16")
NODE_PORT_RANGE = (30000, 32767)
CLUSTER_IP_NONE = "None"
TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
PROTOCOLS = ("SCTP", "TCP", "UDP")
FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
FAMILIES = ("IPv4", "IPv6")
DEFAULT_CLIENT_IP_TIMEOUT = 10800  # v1.DefaultClientIPServiceAffinitySeconds
MAX_CLIENT_IP_TIMEOUT = 86400  # core.MaxClientIPServiceAffinitySeconds


class ServiceStore(Protocol):
    """What the allocators read: the stored Services of every namespace."""

    def list(self, resource: str, namespace: str | None = None) -> list[Obj]: ...


class GoLiteral:
    """A value field.Error prints as the JSON of the Go value (``["10.96.0.9"]``; apimachinery v0.37's
    ``ErrorBody`` marshals what is not a string, number or bool): shown as is, unquoted."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoLiteral) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def _strings(values: Iterable[Any]) -> GoLiteral:
    return GoLiteral(json.dumps([str(v) for v in values], separators=(",", ":")))


def _spec(svc: Obj) -> dict[str, Any]:
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        spec = svc["spec"] = {}
    return spec


def _ports(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in (spec.get("ports") or []) if isinstance(p, dict)]


def _headless(spec: dict[str, Any]) -> bool:
    ips = spec.get("clusterIPs") or []
    return bool(ips) and ips[0] == CLUSTER_IP_NONE


def _needs_cluster_ip(spec: dict[str, Any]) -> bool:
    return spec.get("type") != "ExternalName"


def _needs_node_port(spec: dict[str, Any]) -> bool:
    if spec.get("type") == "NodePort":
        return True
    return spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False


def _externally_accessible(spec: dict[str, Any]) -> bool:
    """``service.ExternallyAccessible``: LoadBalancer, NodePort, or ClusterIP with external IPs."""
    return spec.get("type") in ("LoadBalancer", "NodePort") or (
        spec.get("type") == "ClusterIP" and bool(spec.get("externalIPs")))


def _needs_health_check(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


# ---- defaults and the strategy's Prepare* ----------------------------------------------------------------------

def default_service(svc: Obj) -> Obj:
    """``SetDefaults_Service``."""
    spec = _spec(svc)
    if spec.get("sessionAffinity") in (None, ""):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        cfg = spec.get("sessionAffinityConfig")
        client = cfg.get("clientIP") if isinstance(cfg, dict) else None
        if not isinstance(client, dict) or client.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_TIMEOUT}}
    if spec.get("type") in (None, ""):
        spec["type"] = "ClusterIP"
    for port in _ports(spec):
        if port.get("protocol") in (None, ""):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port", 0)
    if _externally_accessible(spec) and spec.get("externalTrafficPolicy") in (None, ""):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    return svc


def _normalize_cluster_ips(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> None:
    """``normalizeClusterIPs``: a client that sends only the singular field (or, on update, drops the plural)."""
    ip, ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    if old_spec is None:
        if ip and not ips:
            spec["clusterIPs"] = [ip]
        return
    old_ip, old_ips = old_spec.get("clusterIP") or "", old_spec.get("clusterIPs") or []
    if old_ips and not ips and old_ip == ip:
        spec["clusterIPs"] = list(old_ips)
    elif old_ips and ips and ip != old_ip and ips[0] == old_ips[0]:
        # an old client changed the singular field only: the plural follows it (validation then refuses it)
        spec["clusterIPs"] = [ip] + list(ips[1:]) if ip else []


def _patch_allocated_values(spec: dict[str, Any], old_spec: dict[str, Any]) -> None:
    """``patchAllocatedValues``: what the client omitted on update and the server allocated is kept."""
    if _needs_cluster_ip(old_spec) and _needs_cluster_ip(spec):
        if not spec.get("clusterIP"):
            spec["clusterIP"] = old_spec.get("clusterIP", "")
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if _needs_node_port(old_spec) and _needs_node_port(spec):
        old_ports = {(p.get("port"), p.get("protocol")): p.get("nodePort") for p in _ports(old_spec)}
        old_by_port = {p.get("port"): p.get("nodePort") for p in _ports(old_spec)}
        for port in _ports(spec):
            if not port.get("nodePort"):
                np = old_ports.get((port.get("port"), port.get("protocol"))) or old_by_port.get(port.get("port"))
                if np:
                    port["nodePort"] = np
    if _needs_health_check(old_spec) and _needs_health_check(spec) and not spec.get("healthCheckNodePort"):
        if old_spec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


def _drop_type_dependent_fields(spec: dict[str, Any], old_spec: dict[str, Any], status: dict[str, Any]) -> None:
    """``dropTypeDependentFields``: fields the old type needed and the new one does not, unchanged by the client."""
    if _needs_cluster_ip(old_spec) and not _needs_cluster_ip(spec):
        if spec.get("clusterIP", "") == old_spec.get("clusterIP", "") and \
                (spec.get("clusterIPs") or []) == (old_spec.get("clusterIPs") or []):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if (spec.get("ipFamilies") or []) == (old_spec.get("ipFamilies") or []):
            spec.pop("ipFamilies", None)
        if spec.get("ipFamilyPolicy") == old_spec.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if _needs_node_port(old_spec) and not _needs_node_port(spec) and \
            [p.get("nodePort") for p in _ports(spec)] == [p.get("nodePort") for p in _ports(old_spec)]:
        for port in _ports(spec):
            port.pop("nodePort", None)
    if _needs_health_check(old_spec) and not _needs_health_check(spec) and \
            spec.get("healthCheckNodePort") == old_spec.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if old_spec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer" and \
            spec.get("allocateLoadBalancerNodePorts") is not None and \
            spec.get("allocateLoadBalancerNodePorts") == old_spec.get("allocateLoadBalancerNodePorts"):
        spec.pop("allocateLoadBalancerNodePorts", None)
    if old_spec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer" and \
            spec.get("loadBalancerClass") == old_spec.get("loadBalancerClass"):
        spec.pop("loadBalancerClass", None)
    if _externally_accessible(old_spec) and not _externally_accessible(spec) and \
            spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)
    if spec.get("type") != "LoadBalancer":
        status["loadBalancer"] = {}


def prepare_service(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """Defaults, then ``PrepareForCreate``/``PrepareForUpdate`` (status and spec kept apart) and the storage's
    ``beginCreate``/``beginUpdate`` normalisation (the allocations themselves are ``allocate``)."""
    obj = default_service(obj)
    spec = _spec(obj)
    if old is None:
        obj["status"] = {"loadBalancer": {}}
        _normalize_cluster_ips(spec, None)
        return obj
    old_spec = old.get("spec") or {}
    if subresource == "status":
        obj["spec"] = copy.deepcopy(old_spec)
        obj.setdefault("status", {}).setdefault("loadBalancer", {})
        return obj
    status = obj["status"] = copy.deepcopy(old.get("status") or {"loadBalancer": {}})
    _patch_allocated_values(spec, old_spec)
    _normalize_cluster_ips(spec, old_spec)
    _drop_type_dependent_fields(spec, old_spec, status)
    return obj


# ---- validation ------------------------------------------------------------------------------------------------

def _valid_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _cluster_ip_fields(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    """``ValidateServiceClusterIPsRelatedFields``."""
    if spec.get("type") == "ExternalName":
        return []
    errs: list[FieldError] = []
    ip, ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    if ip:
        if not ips:
            errs.append(field_required("spec.clusterIPs"))
        elif ips[0] != ip:
            errs.append(field_invalid("spec.clusterIPs", _strings(ips), "first value must match `clusterIP`"))
    elif ips:
        errs.append(field_invalid("spec.clusterIPs", _strings(ips), "must be empty when `clusterIP` is not specified"))
    seen: set[str] = set()
    for i, fam in enumerate(spec.get("ipFamilies") or []):
        if fam not in FAMILIES:
            errs.append(field_not_supported(f"spec.ipFamilies[{i}]", fam, FAMILIES))
        if fam in seen:
            errs.append(field_duplicate(f"spec.ipFamilies[{i}]", fam))
        seen.add(fam)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in FAMILY_POLICIES:
        errs.append(field_not_supported("spec.ipFamilyPolicy", policy, FAMILY_POLICIES))
    existing = (old_spec or {}).get("clusterIPs") or []
    invalid = False
    for i, value in enumerate(ips):
        if i == 0 and value == CLUSTER_IP_NONE:
            if len(ips) > 1:
                invalid = True
                errs.append(field_invalid("spec.clusterIPs", _strings(ips), "'None' must be the first and only value"))
            continue
        if value in existing:
            continue
        if not isinstance(value, str) or not _valid_ip(value):
            invalid = True
            errs.append(field_invalid(f"spec.clusterIPs[{i}]", value,
                                      "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
        elif value != str(ipaddress.ip_address(value)):
            invalid = True
            errs.append(field_invalid(f"spec.clusterIPs[{i}]", value,
                                      f'must be in canonical form ("{ipaddress.ip_address(value)}")'))
    if len(ips) > 2:
        errs.append(field_invalid("spec.clusterIPs", _strings(ips), "may only hold up to 2 values"))
    if invalid:
        return errs
    if len(ips) > 1 and len({ipaddress.ip_address(v).version for v in ips[:2]}) < 2:
        errs.append(field_invalid("spec.clusterIPs", _strings(ips),
                                  "may specify no more than one IP for each IP family"))
    families = spec.get("ipFamilies") or []
    if not _headless(spec):
        for i, value in enumerate(ips[:len(families)]):
            v6 = ipaddress.ip_address(value).version == 6
            if families[i] == "IPv4" and v6:
                errs.append(field_invalid(f"spec.clusterIPs[{i}]", value,
                                          f"expected an IPv4 value as indicated by `ipFamilies[{i}]`"))
            if families[i] == "IPv6" and not v6:
                errs.append(field_invalid(f"spec.clusterIPs[{i}]", value,
                                          f"expected an IPv6 value as indicated by `ipFamilies[{i}]`"))
    return errs


def _port_num(value: Any) -> list[str]:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return []
    return ["must be between 1 and 65535, inclusive"]


def _target_port(value: Any, path: str) -> list[FieldError]:
    """``ValidatePortNumOrName``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [field_invalid(path, value, m) for m in _port_num(value)]
    if isinstance(value, str):
        return [field_invalid(path, value, m) for m in port_name(value)]
    return []


def _validate_port(port: dict[str, Any], path: str, require_name: bool, seen: set[str]) -> list[FieldError]:
    """``validateServicePort``."""
    errs: list[FieldError] = []
    name = port.get("name") or ""
    if require_name and not name:
        errs.append(field_required(f"{path}.name"))
    elif name:
        errs += [field_invalid(f"{path}.name", name, m) for m in dns1123_label(name)]
        if name in seen:
            errs.append(field_duplicate(f"{path}.name", name))
        seen.add(name)
    errs += [field_invalid(f"{path}.port", port.get("port", 0), m) for m in _port_num(port.get("port", 0))]
    proto = port.get("protocol") or ""
    if not proto:
        errs.append(field_required(f"{path}.protocol"))
    elif proto not in PROTOCOLS:
        errs.append(field_not_supported(f"{path}.protocol", proto, PROTOCOLS))
    errs += _target_port(port.get("targetPort"), f"{path}.targetPort")
    if port.get("appProtocol") is not None:
        errs += [field_invalid(f"{path}.appProtocol", port["appProtocol"], m)
                 for m in qualified_name(str(port["appProtocol"]))]
    return errs


def _go_service_port(protocol: Any, port: Any) -> GoLiteral:
    """The (protocol, port) key of a duplicate port: the internal ``core.ServicePort``, whose fields carry no json
    tags, marshalled."""
    return GoLiteral(json.dumps({"Name": "", "Protocol": protocol, "AppProtocol": None, "Port": port,
                                 "TargetPort": 0, "NodePort": 0}, separators=(",", ":")))


def _validate_spec(svc: Obj, old: Obj | None) -> list[FieldError]:
    """``validateService``."""
    spec, errs = _spec(svc), []
    typ = spec.get("type") or ""
    ports = _ports(spec)
    if not ports and not _headless(spec) and typ != "ExternalName":
        errs.append(field_required("spec.ports"))
    if typ in ("LoadBalancer", "NodePort") and _headless(spec):
        errs.append(field_invalid("spec.clusterIPs[0]", CLUSTER_IP_NONE,
                                  f"may not be set to 'None' for {typ} services"))
    if typ == "ExternalName":
        if spec.get("clusterIPs"):
            errs.append(field_forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if spec.get("ipFamilies"):
            errs.append(field_forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(field_forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = str(spec.get("externalName") or "").removesuffix(".")
        if cname:
            errs += [field_invalid("spec.externalName", cname, m) for m in dns1123_subdomain(cname)]
        else:
            errs.append(field_required("spec.externalName"))
    seen: set[str] = set()
    for i, port in enumerate(ports):
        errs += _validate_port(port, f"spec.ports[{i}]", len(ports) > 1, seen)
    if isinstance(spec.get("selector"), dict):
        errs += names.validate_labels(spec["selector"], "spec.selector")
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        errs.append(field_required("spec.sessionAffinity"))
    elif affinity not in ("ClientIP", "None"):
        errs.append(field_not_supported("spec.sessionAffinity", affinity, ("ClientIP", "None")))
    if affinity == "ClientIP":
        timeout = ((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds")
        if not isinstance(timeout, int) or not 0 < timeout <= MAX_CLIENT_IP_TIMEOUT:
            errs.append(field_invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", timeout,
                                      f"must be greater than 0 and less than {MAX_CLIENT_IP_TIMEOUT}"))
    elif affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        errs.append(field_forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None"))
    errs += _cluster_ip_fields(spec, (old or {}).get("spec"))
    existing_external = ((old or {}).get("spec") or {}).get("externalIPs") or []
    for i, value in enumerate(spec.get("externalIPs") or []):
        if value in existing_external:
            continue
        if not isinstance(value, str) or not _valid_ip(value):
            errs.append(field_invalid(f"spec.externalIPs[{i}]", value,
                                      "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
    if not typ:
        errs.append(field_required("spec.type"))
    elif typ not in TYPES:
        errs.append(field_not_supported("spec.type", typ, TYPES))
    if typ == "ClusterIP":
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                errs.append(field_forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"))
    node_ports: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        if port.get("nodePort"):
            key = (port.get("protocol"), port["nodePort"])
            if key in node_ports:
                errs.append(field_duplicate(f"spec.ports[{i}].nodePort", port["nodePort"]))
            node_ports.add(key)
    pairs: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        key = (port.get("protocol"), port.get("port"))
        if key in pairs:
            errs.append(field_duplicate(f"spec.ports[{i}]", _go_service_port(*key)))
        pairs.add(key)
    if spec.get("loadBalancerSourceRanges") and typ != "LoadBalancer":
        errs.append(field_forbidden("spec.LoadBalancerSourceRanges", "may only be used when `type` is 'LoadBalancer'"))
    if spec.get("allocateLoadBalancerNodePorts") is not None and typ != "LoadBalancer":
        errs.append(field_forbidden("spec.allocateLoadBalancerNodePorts",
                                    "may only be used when `type` is 'LoadBalancer'"))
    if typ == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        errs.append(field_required("allocateLoadBalancerNodePorts"))
    if spec.get("loadBalancerClass") is not None and typ != "LoadBalancer":
        errs.append(field_forbidden("spec.loadBalancerClass", "may only be used when `type` is 'LoadBalancer'"))
    etp = spec.get("externalTrafficPolicy") or ""
    if not _externally_accessible(spec):
        if etp:
            errs.append(field_invalid("spec.externalTrafficPolicy", etp,
                                      "may only be set for externally-accessible services"))
    elif not etp:
        errs.append(field_required("spec.externalTrafficPolicy"))
    elif etp not in ("Cluster", "Local"):
        errs.append(field_not_supported("spec.externalTrafficPolicy", etp, ("Cluster", "Local")))
    if not _needs_health_check(spec) and spec.get("healthCheckNodePort"):
        errs.append(field_invalid("spec.healthCheckNodePort", spec["healthCheckNodePort"],
                                  "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is "
                                  "'Local'"))
    itp = spec.get("internalTrafficPolicy")
    if itp is None and typ in ("NodePort", "LoadBalancer", "ClusterIP"):
        errs.append(field_required("spec.internalTrafficPolicy"))
    if itp is not None and itp not in ("Cluster", "Local"):
        errs.append(field_not_supported("spec.internalTrafficPolicy", itp, ("Cluster", "Local")))
    return errs


def _validate_upgrade_downgrade(spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
    """``validateUpgradeDowngradeClusterIPs`` (single-stack: only the primary address)."""
    if "ExternalName" in (spec.get("type"), old_spec.get("type")):
        return []
    if _headless(spec) and _headless(old_spec):
        return []
    old_ips, ips = old_spec.get("clusterIPs") or [], spec.get("clusterIPs") or []
    errs: list[FieldError] = []
    if len(old_ips) == len(ips):
        errs += [field_invalid(f"spec.clusterIPs[{i}]", _strings(ips), "may not change once set")
                 for i, ip in enumerate(old_ips) if ip != ips[i]]
    elif len(old_ips) > len(ips):
        if not ips:
            errs.append(field_invalid("spec.clusterIPs[0]", _strings(ips), "primary clusterIP can not be unset"))
        elif old_ips[0] != ips[0]:
            errs.append(field_invalid("spec.clusterIPs[0]", _strings(ips), "may not change once set"))
    elif old_ips and ips[0] != old_ips[0]:
        errs.append(field_invalid("spec.clusterIPs[0]", _strings(ips), "may not change once set"))
    return errs


def validate_service(svc: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateServiceCreate`` / ``ValidateServiceUpdate`` after ObjectMeta's checks."""
    if old is None:
        return _validate_spec(svc, None)
    spec, old_spec = _spec(svc), old.get("spec") or {}
    errs = _validate_upgrade_downgrade(spec, old_spec)
    if _needs_health_check(old_spec) and _needs_health_check(spec) and \
            spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
        errs.append(field_forbidden("spec.healthCheckNodePort", "field is immutable"))
    return errs + _validate_spec(svc, old)


def validate_service_status(svc: Obj, old: Obj) -> list[FieldError]:
    """``ValidateServiceStatusUpdate``: the load balancer's ingress addresses."""
    errs: list[FieldError] = []
    for i, ing in enumerate(((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []):
        ip = (ing or {}).get("ip")
        if ip and not _valid_ip(str(ip)):
            errs.append(field_invalid(f"status.loadBalancer.ingress[{i}].ip", ip, "must be a valid IP address"))
        host = (ing or {}).get("hostname")
        if host:
            errs += [field_invalid(f"status.loadBalancer.ingress[{i}].hostname", host, m)
                     for m in dns1123_subdomain(host)]
    return errs


# ---- allocation (storage.beginCreate / beginUpdate, alloc.go) ----------------------------------------------------

def _family_of(ip: str) -> str:
    return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"


def _init_ip_family_fields(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    """``initIPFamilyFields`` on a single-stack IPv4 cluster."""
    if spec.get("type") == "ExternalName":
        return []
    if spec.get("ipFamilyPolicy") is None:
        if old_spec is not None and old_spec.get("ipFamilyPolicy") is not None:
            spec["ipFamilyPolicy"] = old_spec["ipFamilyPolicy"]
        elif spec.get("clusterIP") == CLUSTER_IP_NONE and not spec.get("selector"):
            spec["ipFamilyPolicy"] = "RequireDualStack"
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    errs = _cluster_ip_fields(spec, old_spec)
    if errs:
        return errs
    ips, families = spec.get("clusterIPs") or [], list(spec.get("ipFamilies") or [])
    if spec["ipFamilyPolicy"] == "SingleStack":
        if len(ips) == 2:
            errs.append(field_invalid("spec.ipFamilyPolicy", spec["ipFamilyPolicy"],
                                      "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are "
                                      "specified"))
        if len(families) == 2:
            errs.append(field_invalid("spec.ipFamilyPolicy", spec["ipFamilyPolicy"],
                                      "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are "
                                      "specified"))
    for i, ip in enumerate(ips):
        if ip == CLUSTER_IP_NONE:
            break
        fam = _family_of(ip)
        if i >= len(families):
            if fam != "IPv4":
                errs.append(field_invalid(f"spec.clusterIPs[{i}]", _strings(ips), f"{fam} is not configured on this "
                                                                                  "cluster"))
            else:
                families.append(fam)
    if errs:
        return errs
    if spec.get("clusterIP") == CLUSTER_IP_NONE and not spec.get("selector"):
        families = families or ["IPv4"]
        if len(families) < 2 and spec["ipFamilyPolicy"] != "SingleStack":
            families.append("IPv6" if families[0] == "IPv4" else "IPv4")
        spec["ipFamilies"] = families
        return []
    if spec["ipFamilyPolicy"] == "RequireDualStack":
        errs.append(field_invalid("spec.ipFamilyPolicy", spec["ipFamilyPolicy"],
                                  "this cluster is not configured for dual-stack services"))
    errs += [field_invalid(f"spec.ipFamilies[{i}]", fam, "not configured on this cluster")
             for i, fam in enumerate(families) if fam != "IPv4"]
    if errs:
        return errs
    spec["ipFamilies"] = families or ["IPv4"]
    return []


def _seed(svc: Obj, salt: str) -> int:
    meta = svc.get("metadata") or {}
    key = f"{meta.get('namespace', '')}/{meta.get('name', '')}/{salt}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


def _pick(candidates_first: int, last: int, upper_from: int, taken: set[int], seed: int) -> int | None:
    """A free value: from a start derived from ``seed`` in the upper subrange, then the lower one (as upstream's
    allocators prefer the upper part of a range for dynamic allocation and leave the lower to static requests)."""
    for lo, hi in ((upper_from, last), (candidates_first, upper_from - 1)):
        size = hi - lo + 1
        if size <= 0:
            continue
        start = seed % size
        for k in range(size):
            value = lo + (start + k) % size
            if value not in taken:
                return value
    return None


def _taken_ips(store: ServiceStore, me: Obj) -> set[str]:
    uid = (me.get("metadata") or {}).get("uid")
    return {ip for s in store.list("services") if (s.get("metadata") or {}).get("uid") != uid
            for ip in ((s.get("spec") or {}).get("clusterIPs") or []) if ip != CLUSTER_IP_NONE}


def _taken_ports(store: ServiceStore, me: Obj) -> set[int]:
    uid = (me.get("metadata") or {}).get("uid")
    taken: set[int] = set()
    for s in store.list("services"):
        if (s.get("metadata") or {}).get("uid") == uid:
            continue
        spec = s.get("spec") or {}
        taken.update(p["nodePort"] for p in _ports(spec) if isinstance(p.get("nodePort"), int) and p["nodePort"])
        if isinstance(spec.get("healthCheckNodePort"), int) and spec["healthCheckNodePort"]:
            taken.add(spec["healthCheckNodePort"])
    return taken


def _range_offset(size: int, lo: int, hi: int) -> int:
    """``calculateRangeOffset``: how much of a range's start is kept for static allocation."""
    return min(max(lo, size // 16), hi)


def _allocate_ip(spec: dict[str, Any], svc: Obj, taken: set[str]) -> list[FieldError]:
    ips = spec.get("clusterIPs") or []
    if _headless(spec):
        return []
    if not ips:
        first, last = int(SERVICE_CIDR.network_address) + 1, int(SERVICE_CIDR.broadcast_address) - 1
        size = last - first + 1
        taken_ints = {int(ipaddress.ip_address(ip)) for ip in taken if _family_of(ip) == "IPv4"}
        value = _pick(first, last, first + _range_offset(size, 16, 256), taken_ints, _seed(svc, "clusterIP"))
        if value is None:
            raise internal_error(f'failed to allocate a serviceIP for Service "{svc["metadata"].get("name")}": '
                                 "range is full")
        ip = str(ipaddress.IPv4Address(value))
        spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        return []
    ip = ips[0]
    addr = ipaddress.ip_address(ip)
    if addr not in SERVICE_CIDR:
        reason = "the provided network does not match the current range"
    elif addr in (SERVICE_CIDR.network_address, SERVICE_CIDR.broadcast_address):
        reason = (f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is {SERVICE_CIDR}")
    elif ip in taken:
        reason = "provided IP is already allocated"
    else:
        return []
    return [field_invalid("spec.clusterIPs", _strings(ips), f"failed to allocate IP {ip}: {reason}")]


def _allocate_node_ports(spec: dict[str, Any], svc: Obj, taken: set[int], old_spec: dict[str, Any] | None
                         ) -> list[FieldError]:
    lo, hi = NODE_PORT_RANGE
    kept = set()
    if old_spec is not None and _needs_node_port(old_spec):
        kept = {p.get("nodePort") for p in _ports(old_spec)}
    errs: list[FieldError] = []
    for i, port in enumerate(_ports(spec)):
        np = port.get("nodePort")
        if not np:
            continue
        if np in kept and np not in taken:
            taken.add(np)
            continue
        if not isinstance(np, int) or not lo <= np <= hi:
            errs.append(field_invalid(f"spec.ports[{i}].nodePort", np, "provided port is not in the valid range. "
                                                                      f"The range of valid ports is {lo}-{hi}"))
        elif np in taken:
            errs.append(field_invalid(f"spec.ports[{i}].nodePort", np, "provided port is already allocated"))
        else:
            taken.add(np)
    if errs:
        return errs
    size = hi - lo + 1
    for i, port in enumerate(_ports(spec)):
        if port.get("nodePort"):
            continue
        value = _pick(lo, hi, lo + _range_offset(size // 2, 16, 128), taken, _seed(svc, f"nodePort/{i}"))
        if value is None:
            raise internal_error("failed to allocate a nodePort: range is full")
        port["nodePort"] = value
        taken.add(value)
    return []


def allocate(store: ServiceStore, svc: Obj, old: Obj | None) -> list[FieldError]:
    """``beginCreate``/``beginUpdate``'s allocations: IP families, the cluster IP and node ports (in place).
    Field errors are the 422 upstream answers; a full range is upstream's 500."""
    spec = _spec(svc)
    old_spec = (old or {}).get("spec") if old is not None else None
    if spec.get("type") not in TYPES:
        return []  # validation refuses it
    errs = _init_ip_family_fields(spec, old_spec)
    if errs:
        return errs
    if _needs_cluster_ip(spec) and not (old_spec is not None and _needs_cluster_ip(old_spec)
                                        and (old_spec.get("clusterIPs") or []) == (spec.get("clusterIPs") or [])):
        errs = _allocate_ip(spec, svc, _taken_ips(store, svc))
        if errs:
            return errs
    if _needs_node_port(spec):
        errs = _allocate_node_ports(spec, svc, _taken_ports(store, svc), old_spec)
    return errs
