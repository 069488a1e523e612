"""Services as kube-apiserver v1.37.2 defaults, validates and allocates them (``servicestrategy``), without HTTP.

Table-driven: each row is a create (or an update of a stored Service) and what upstream answers — the stored
spec's fields, or the 422's message. The messages are upstream's (``pkg/apis/core/validation``,
``pkg/registry/core/service/storage/alloc.go``, the allocators); tests/conformance compares them live.
"""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

import pytest

from mockgpu.control.apiserver import servicestrategy
from mockgpu.control.apiserver.discovery import RESOURCES
from mockgpu.control.apiserver.handlers import DeleteOptions, ResourceAPI
from mockgpu.control.apiserver.services import ensure_kubernetes_service
from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.store import Store

SVC = RESOURCES["services"]


@pytest.fixture
def api(tmp_path):
    store = Store(tmp_path / "store.db")
    api = ResourceAPI(store)
    api.create(RESOURCES["namespaces"], "", {"metadata": {"name": "default"}})
    ensure_kubernetes_service(api, 40001)
    yield api
    store.close()


def create(api: ResourceAPI, name: str, spec: dict[str, Any]) -> dict[str, Any] | str:
    try:
        return api.create(SVC, "default", {"metadata": {"name": name}, "spec": spec})
    except StatusError as exc:
        return f"{exc.status['code']} {exc.status['message']}"


P80 = [{"port": 80}]

CREATED = [  # (case, spec sent, fields of the stored spec)
    ("defaults", {"selector": {"app": "web"}, "ports": [{"port": 80}]},
     {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
      "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"], "ports": [{"port": 80, "protocol": "TCP",
                                                                             "targetPort": 80}]}),
    ("named target port kept", {"ports": [{"port": 80, "targetPort": "http"}]},
     {"ports": [{"port": 80, "protocol": "TCP", "targetPort": "http"}]}),
    ("NodePort: external traffic policy", {"type": "NodePort", "ports": P80}, {"externalTrafficPolicy": "Cluster"}),
    ("LoadBalancer: node ports allocated", {"type": "LoadBalancer", "ports": P80},
     {"allocateLoadBalancerNodePorts": True, "externalTrafficPolicy": "Cluster"}),
    ("headless with a selector: single stack", {"clusterIP": "None", "selector": {"a": "b"}, "ports": P80},
     {"clusterIPs": ["None"], "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]}),
    ("headless without a selector: RequireDualStack, both families", {"clusterIP": "None", "ports": P80},
     {"clusterIPs": ["None"], "ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"]}),
    ("PreferDualStack on a single-stack cluster", {"ipFamilyPolicy": "PreferDualStack", "ports": P80},
     {"ipFamilyPolicy": "PreferDualStack", "ipFamilies": ["IPv4"]}),
    ("ExternalName: no address, no families", {"type": "ExternalName", "externalName": "db.example.com."},
     {"type": "ExternalName", "externalName": "db.example.com."}),
    ("ClientIP affinity: timeout defaulted", {"sessionAffinity": "ClientIP", "ports": P80},
     {"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}}),
    ("a requested address", {"clusterIP": "10.96.12.34", "ports": P80},
     {"clusterIP": "10.96.12.34", "clusterIPs": ["10.96.12.34"]}),
]


@pytest.mark.parametrize(("case", "spec", "want"), CREATED, ids=[c[0] for c in CREATED])
def test_created_as_upstream(api, case, spec, want):
    got = create(api, "s", spec)
    assert isinstance(got, dict), got
    for key, value in want.items():
        assert got["spec"][key] == value, key
    assert got["status"] == {"loadBalancer": {}}
    if got["spec"]["type"] == "ExternalName":
        assert "clusterIP" not in got["spec"] and "ipFamilies" not in got["spec"]
        assert "internalTrafficPolicy" not in got["spec"]
    elif got["spec"]["clusterIPs"] != ["None"]:
        ip = ipaddress.ip_address(got["spec"]["clusterIP"])
        assert ip in servicestrategy.SERVICE_CIDR and got["spec"]["clusterIPs"] == [str(ip)]
    for port in got["spec"].get("ports", []):
        assert ("nodePort" in port) == (got["spec"]["type"] in ("NodePort", "LoadBalancer"))


REFUSED = [  # (case, spec sent, upstream's message)
    ("no ports", {"selector": {"a": "b"}}, "spec.ports: Required value"),
    ("two ports without names", {"ports": [{"port": 80}, {"port": 81}]},
     "[spec.ports[0].name: Required value, spec.ports[1].name: Required value]"),
    ("port 0", {"ports": [{"port": 0}]},
     "[spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ports[0].targetPort: "
     "Invalid value: 0: must be between 1 and 65535, inclusive]"),
    ("bad protocol", {"ports": [{"port": 80, "protocol": "HTTP"}]},
     'spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'),
    ("bad target port name", {"ports": [{"port": 80, "targetPort": "Http_1"}]},
     'spec.ports[0].targetPort: Invalid value: "Http_1": must contain only alpha-numeric characters (a-z, 0-9), '
     "and hyphens (-)"),
    ("duplicate port", {"ports": [{"port": 80, "name": "a"}, {"port": 80, "name": "b"}]},
     'spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,'
     '"NodePort":0}'),
    ("bad type", {"type": "Ingress", "ports": P80},
     'spec.type: Unsupported value: "Ingress": supported values: "ClusterIP", "ExternalName", "LoadBalancer", '
     '"NodePort"'),
    ("node port on a ClusterIP Service", {"ports": [{"port": 80, "nodePort": 30001}]},
     "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"),
    ("node port out of range", {"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]},
     "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports "
     "is 30000-32767"),
    ("address taken", {"clusterIP": "10.96.0.1", "ports": P80},
     'spec.clusterIPs: Invalid value: ["10.96.0.1"]: failed to allocate IP 10.96.0.1: provided IP is '
     "already allocated"),
    ("address outside the service CIDR", {"clusterIP": "10.0.0.5", "ports": P80},
     'spec.clusterIPs: Invalid value: ["10.0.0.5"]: failed to allocate IP 10.0.0.5: the provided network '
     "does not match the current range"),
    ("not an address", {"clusterIP": "10.96.0.300", "ports": P80},
     'spec.clusterIPs[0]: Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or '
     "2001:db8::ffff)"),
    ("clusterIPs disagree", {"clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.8"], "ports": P80},
     'spec.clusterIPs: Invalid value: ["10.96.0.8"]: first value must match `clusterIP`'),
    ("IPv6 on an IPv4 cluster", {"clusterIP": "fd00::7", "ports": P80},
     'spec.clusterIPs[0]: Invalid value: ["fd00::7"]: IPv6 is not configured on this cluster'),
    ("RequireDualStack", {"ipFamilyPolicy": "RequireDualStack", "ports": P80},
     'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack '
     "services"),
    ("IPv6 family", {"ipFamilies": ["IPv6"], "ports": P80},
     'spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster'),
    ("headless NodePort", {"type": "NodePort", "clusterIP": "None", "ports": P80},
     "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"),
    ("ExternalName without a name", {"type": "ExternalName"}, "spec.externalName: Required value"),
    ("ExternalName with an address", {"type": "ExternalName", "externalName": "a.b", "clusterIP": "10.96.0.9"},
     "spec.clusterIPs: Forbidden: may not be set for ExternalName services"),
    ("external traffic policy on a ClusterIP Service", {"externalTrafficPolicy": "Local", "ports": P80},
     'spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services'),
    ("allocateLoadBalancerNodePorts on a NodePort Service", {"type": "NodePort", "ports": P80,
                                                             "allocateLoadBalancerNodePorts": False},
     "spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'"),
]


@pytest.mark.parametrize(("case", "spec", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_as_upstream(api, case, spec, message):
    assert create(api, "s", spec) == f'422 Service "s" is invalid: {message}'
    assert api.store.get("services", "default", "s") is None


def test_a_service_name_is_a_dns_label(api):
    """A valid subdomain with dots is told so (apimachinery v0.37's IsDNS1123Label)."""
    assert create(api, "a.b", {"ports": P80}) == (
        '422 Service "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots')


def test_addresses_and_ports_are_derived_and_distinct(api):
    """The same Service gets the same address in every run (reproducible labs); two never share one."""
    ips, ports = set(), set()
    for i in range(40):
        got = create(api, f"s{i}", {"type": "NodePort", "ports": [{"port": 80, "name": "a"}, {"port": 81,
                                                                                              "name": "b"}]})
        assert isinstance(got, dict), got
        ips.add(got["spec"]["clusterIP"])
        ports.update(p["nodePort"] for p in got["spec"]["ports"])
    assert len(ips) == 40 and len(ports) == 80 and "10.96.0.1" not in ips
    first = api.get(SVC, "default", "s0")["spec"]
    api.delete(SVC, "default", "s0", DeleteOptions())
    again = create(api, "s0", {"type": "NodePort", "ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}]})
    assert isinstance(again, dict) and again["spec"]["clusterIP"] == first["clusterIP"]
    assert [p["nodePort"] for p in again["spec"]["ports"]] == [p["nodePort"] for p in first["ports"]]


UPDATES = [  # (case, patch of the stored NodePort Service's spec, want: fields or the 422's message)
    ("omitted address and node port kept", lambda s: (s.pop("clusterIP"), s.pop("clusterIPs"),
                                                      s["ports"][0].pop("nodePort")),
     {"clusterIP": "<same>", "nodePort": "<same>"}),
    ("address changed", lambda s: s.update(clusterIP="10.96.200.200", clusterIPs=["10.96.200.200"]),
     'spec.clusterIPs[0]: Invalid value: ["10.96.200.200"]: may not change once set'),
    ("to ClusterIP: node ports dropped", lambda s: s.update(type="ClusterIP"),
     {"clusterIP": "<same>", "nodePort": None, "externalTrafficPolicy": None}),
    ("to ExternalName: address dropped", lambda s: s.update(type="ExternalName", externalName="x.example.com"),
     {"clusterIP": None, "ipFamilies": None, "nodePort": None}),
    ("to LoadBalancer: node port kept", lambda s: s.update(type="LoadBalancer"),
     {"clusterIP": "<same>", "nodePort": "<same>", "allocateLoadBalancerNodePorts": True}),
]


@pytest.mark.parametrize(("case", "change", "want"), UPDATES, ids=[c[0] for c in UPDATES])
def test_updated_as_upstream(api, case, change, want):
    old = create(api, "s", {"type": "NodePort", "selector": {"app": "a"}, "ports": P80})
    assert isinstance(old, dict), old
    body = copy.deepcopy(old)
    change(body["spec"])
    try:
        new = api.update(SVC, "default", "s", body)
    except StatusError as exc:
        assert exc.status["message"] == f'Service "s" is invalid: {want}'
        return
    assert isinstance(want, dict), new
    same = {"clusterIP": old["spec"]["clusterIP"], "nodePort": old["spec"]["ports"][0]["nodePort"]}
    for key, value in want.items():
        got = new["spec"]["ports"][0].get(key) if key == "nodePort" else new["spec"].get(key)
        assert got == (same[key] if value == "<same>" else value), key


def test_status_updates_keep_the_spec(api):
    old = create(api, "lb", {"type": "LoadBalancer", "ports": P80})
    assert isinstance(old, dict), old
    body = copy.deepcopy(old)
    body["spec"]["type"] = "ClusterIP"
    body["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}
    new = api.update(SVC, "default", "lb", body, sub="status")
    assert new["spec"] == old["spec"] and new["status"]["loadBalancer"]["ingress"] == [{"ip": "192.0.2.10"}]
