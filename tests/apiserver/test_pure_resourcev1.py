"""resource.k8s.io/v1 defaulting and validation, one row per case, with upstream's field paths and texts
(``pkg/apis/resource/validation`` v1.37), and the pod's DRA fields."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from mockgpu.control.apiserver import tables
from mockgpu.control.apiserver.celcompile import compile_error
from mockgpu.control.apiserver.selectors import parse_field_selector
from mockgpu.control.apiserver.status import StatusError
from mockgpu.control.apiserver.validation import default_and_validate

G = "resource.k8s.io/v1"
SELECTOR = 'device.driver == "gpu.mockgpu.io" && device.attributes["gpu.mockgpu.io"].type == "gpu"'


def device_class() -> dict[str, Any]:
    return {"apiVersion": G, "kind": "DeviceClass", "metadata": {"name": "gpu.mockgpu.io"},
            "spec": {"selectors": [{"cel": {"expression": SELECTOR}}]}}


def claim() -> dict[str, Any]:
    return {"apiVersion": G, "kind": "ResourceClaim", "metadata": {"name": "c"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.mockgpu.io"}}]}}}


def template() -> dict[str, Any]:
    return {"apiVersion": G, "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
            "spec": {"spec": claim()["spec"]}}


def resource_slice() -> dict[str, Any]:
    return {"apiVersion": G, "kind": "ResourceSlice", "metadata": {"name": "node-1-gpus"},
            "spec": {"driver": "gpu.mockgpu.io", "nodeName": "node-1",
                     "pool": {"name": "node-1", "generation": 0, "resourceSliceCount": 2},
                     "devices": [{"name": "gpu-0", "attributes": {
                         "type": {"string": "gpu"}, "index": {"int": 0}, "migCapable": {"bool": True},
                         "driverVersion": {"version": "550.54.15"}},
                         "capacity": {"memory": {"value": "40Gi"}},
                         "consumesCounters": [{"counterSet": "gpu-0-counters",
                                               "counters": {"memory-slice-0": {"value": "1"}}}]}]}}


def counters_slice() -> dict[str, Any]:
    return {"apiVersion": G, "kind": "ResourceSlice", "metadata": {"name": "node-1-counters"},
            "spec": {"driver": "gpu.mockgpu.io", "nodeName": "node-1",
                     "pool": {"name": "node-1", "generation": 0, "resourceSliceCount": 2},
                     "sharedCounters": [{"name": "gpu-0-counters", "counters": {
                         f"memory-slice-{k}": {"value": "1"} for k in range(8)}
                         | {"multiprocessors": {"value": "98"}}}]}}


def ns_of(kind: str) -> str | None:
    return "default" if kind in ("ResourceClaim", "ResourceClaimTemplate", "Pod") else None


def causes(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None, sub: str = "") -> list[tuple[str, str]]:
    with pytest.raises(StatusError) as info:
        default_and_validate(kind, obj, namespace=ns_of(kind), old=old, subresource=sub)
    err = info.value
    assert err.code == 422 and err.status["reason"] == "Invalid"
    assert kind == "Pod" or err.status["details"]["group"] == "resource.k8s.io"
    return [(c["field"], c["message"]) for c in err.status["details"]["causes"]]


def req0(o: dict[str, Any]) -> dict[str, Any]:
    return o["spec"]["devices"]["requests"][0]


Mut = Callable[[dict[str, Any]], Any]
R = "spec.devices.requests[0]"
VALID = [("device-class", device_class), ("claim", claim), ("template", template), ("slice", resource_slice),
         ("counters-slice", counters_slice)]


@pytest.mark.parametrize("make", [v[1] for v in VALID], ids=[v[0] for v in VALID])
def test_valid_objects_are_accepted(make: Callable[[], dict[str, Any]]) -> None:
    obj = make()
    out = default_and_validate(obj["kind"], obj, namespace=ns_of(obj["kind"]))
    assert out["apiVersion"] == G


def test_defaults_as_upstream() -> None:
    c = claim()
    req0(c)["firstAvailable"] = None
    out = default_and_validate("ResourceClaim", c, namespace="default")
    assert req0(out)["exactly"] == {"deviceClassName": "gpu.mockgpu.io", "allocationMode": "ExactCount", "count": 1}
    assert out["status"] == {}  # a new claim's status is reset
    c = claim()
    req0(c)["exactly"]["allocationMode"] = "All"
    assert "count" not in req0(default_and_validate("ResourceClaim", c, namespace="default"))["exactly"]
    c = claim()
    req0(c).pop("exactly")
    req0(c)["firstAvailable"] = [{"name": "big", "deviceClassName": "gpu.mockgpu.io"}]
    sub = req0(default_and_validate("ResourceClaim", c, namespace="default"))["firstAvailable"][0]
    assert (sub["allocationMode"], sub["count"]) == ("ExactCount", 1)
    s = resource_slice()
    s["spec"]["devices"][0]["taints"] = [{"key": "example.com/broken", "effect": "NoSchedule"}]
    taint = default_and_validate("ResourceSlice", s, namespace=None)["spec"]["devices"][0]["taints"][0]
    assert taint["timeAdded"].endswith("Z") and len(taint["timeAdded"]) == len("2026-01-01T00:00:00Z")
    t = default_and_validate("ResourceClaimTemplate", template(), namespace="default")
    assert t["spec"]["metadata"] == {}  # Go encodes the template's ObjectMeta struct even when empty
    empty = default_and_validate("ResourceClaim", {"metadata": {"name": "e"}}, namespace="default")
    assert (empty["spec"], empty["status"]) == ({"devices": {}}, {})
    assert t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    dc = default_and_validate("DeviceClass", device_class(), namespace=None)
    assert dc["metadata"]["generation"] == 1
    changed = copy.deepcopy(dc)
    changed["spec"]["selectors"][0]["cel"]["expression"] = 'device.driver == "x"'
    assert default_and_validate("DeviceClass", changed, namespace=None, old=dc)["metadata"]["generation"] == 2
    assert default_and_validate("DeviceClass", copy.deepcopy(dc), namespace=None, old=dc)["metadata"][
        "generation"] == 1


def _set(path: list[Any], value: Any) -> Mut:
    def mut(o: dict[str, Any]) -> None:
        cur = o
        for k in path[:-1]:
            cur = cur[k]
        if value is _DEL:
            del cur[path[-1]]
        else:
            cur[path[-1]] = value
    return mut


_DEL = object()
_REQ = ["spec", "devices", "requests", 0]
_EX = [*_REQ, "exactly"]
_BAD_CEL = "device.driver =="

CLAIM_ROWS: list[tuple[str, Mut, list[tuple[str, str]]]] = [
    ("class-required", _set([*_EX, "deviceClassName"], _DEL),
     [(f"{R}.exactly.deviceClassName", "Required value")]),
    ("class-not-subdomain", _set([*_EX, "deviceClassName"], "GPU_class"),
     [(f"{R}.exactly.deviceClassName", 'Invalid value: "GPU_class": a lowercase RFC 1123 subdomain must consist of '
       "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
       "(e.g. 'example.com', regex used for validation is "
       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]),
    ("count-zero", _set([*_EX, "count"], -1), [(f"{R}.exactly.count", "Invalid value: -1: must be greater than zero")]),
    ("count-with-all", lambda o: req0(o)["exactly"].update(allocationMode="All", count=2),
     [(f"{R}.exactly.count", "Invalid value: 2: must not be specified when allocationMode is 'All'")]),
    ("bad-mode", _set([*_EX, "allocationMode"], "Some"),
     [(f"{R}.exactly.allocationMode", 'Unsupported value: "Some": supported values: "All", "ExactCount"')]),
    ("cel-compile-error", _set([*_EX, "selectors"], [{"cel": {"expression": _BAD_CEL}}]),
     [(f"{R}.exactly.selectors[0].cel.expression", f'Invalid value: "{_BAD_CEL}": {compile_error(_BAD_CEL)}')]),
    ("cel-missing", _set([*_EX, "selectors"], [{}]), [(f"{R}.exactly.selectors[0].cel", "Required value")]),
    ("too-many-selectors", _set([*_EX, "selectors"], [{"cel": {"expression": "true"}}] * 33),
     [(f"{R}.exactly.selectors", "Too many: 33: must have at most 32 items")]),
    ("request-name-empty", _set([*_REQ, "name"], _DEL),  # ValidateDNS1123Label(""): Invalid, not Required
     [(f"{R}.name", 'Invalid value: "": a lowercase RFC 1123 label must consist of lower case alphanumeric '
       "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
       "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]),
    ("request-name-label", _set([*_REQ, "name"], "GPU"),
     [(f"{R}.name", 'Invalid value: "GPU": a lowercase RFC 1123 label must consist of lower case alphanumeric '
       "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
       "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]),
    ("neither-exactly-nor-first", _set([*_REQ, "exactly"], _DEL),
     [(R, "Required value: exactly one of `exactly` or `firstAvailable` is required")]),
    ("both-exactly-and-first", _set([*_REQ, "firstAvailable"], [{"name": "a", "deviceClassName": "x"}]),
     [(R, "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields "
          "are set")]),
    ("duplicate-request", lambda o: o["spec"]["devices"]["requests"].append(copy.deepcopy(req0(o))),
     [("spec.devices.requests[1]", 'Duplicate value: {"name":"gpu","exactly":{"deviceClassName":"gpu.mockgpu.io",'
                                   '"allocationMode":"ExactCount","count":1}}')]),  # v1.37's declarative wording
    ("sub-request-class", _set(_REQ, {"name": "gpu", "firstAvailable": [{"name": "a"}]}),
     [(f"{R}.firstAvailable[0].deviceClassName", "Required value")]),
    ("constraint-not-qualified", _set(["spec", "devices", "constraints"], [{"matchAttribute": "model"}]),
     [("spec.devices.constraints[0].matchAttribute", 'Invalid value: "model": a fully qualified name must be a '
       "domain and a name separated by a slash")]),
    ("constraint-bad-request", _set(["spec", "devices", "constraints"],
                                    [{"requests": ["nope"], "matchAttribute": "gpu.mockgpu.io/model"}]),
     [("spec.devices.constraints[0].requests[0]", 'Invalid value: "nope": must be the name of a request in the '
       "claim or the name of a request and a subrequest separated by '/'")]),
    ("constraint-without-attribute", _set(["spec", "devices", "constraints"], [{}]),
     [("spec.devices.constraints[0]", 'Required value: exactly one of "matchAttribute" or "distinctAttribute" is '
                                      "required, but multiple fields are set")]),  # v1.37, verbatim
    ("config-without-opaque", _set(["spec", "devices", "config"], [{"requests": ["gpu"]}]),
     [("spec.devices.config[0].opaque", "Required value")]),
]


@pytest.mark.parametrize(("mutate", "want"), [r[1:] for r in CLAIM_ROWS], ids=[r[0] for r in CLAIM_ROWS])
def test_claim_spec_errors(mutate: Mut, want: list[tuple[str, str]]) -> None:
    c = claim()
    mutate(c)
    assert causes("ResourceClaim", c) == want
    t = template()  # the template validates the same spec one level down
    t["spec"]["spec"] = c["spec"]
    assert causes("ResourceClaimTemplate", t) == [(f"spec.{f}", m) for f, m in want]


def test_the_422_names_the_group_and_the_cel_path_in_its_message() -> None:
    c = claim()
    req0(c)["exactly"]["selectors"] = [{"cel": {"expression": "foo == 1"}}]
    with pytest.raises(StatusError) as info:
        default_and_validate("ResourceClaim", c, namespace="default")
    msg = info.value.status["message"]
    assert msg == ('ResourceClaim.resource.k8s.io "c" is invalid: spec.devices.requests[0].exactly.selectors[0].cel.'
                   "expression: Invalid value: \"foo == 1\": compilation failed: ERROR: <input>:1:1: undeclared "
                   "reference to 'foo' (in container '')\n | foo == 1\n | ^")


CEL_ROWS = [
    ("valid", SELECTOR, None),
    ("macro-binds-its-variable", 'device.attributes["gpu.mockgpu.io"].all(a, a != "")', None),
    ("quantity", 'device.capacity["gpu.mockgpu.io"].memory.compareTo(quantity("10Gi")) >= 0', None),
    ("syntax-at-end", "device.driver ==", "compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input "
                                          "'<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
                                          "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n"
                                          " | device.driver ==\n | ................^"),
    ("syntax", "device.driver 'x'", "compilation failed: ERROR: <input>:1:15: Syntax error: unexpected input\n"
                                    " | device.driver 'x'\n | ..............^"),
    ("undefined-field", "device.nosuch == 1", "compilation failed: ERROR: <input>:1:7: undefined field 'nosuch'\n"
                                              " | device.nosuch == 1\n | ......^"),
    ("capacity-result", "device.capacity",
     "must evaluate to bool or the unknown type, not map(string, map(string, kubernetes.Quantity))"),
    ("string-result", "device.driver", "must evaluate to bool or the unknown type, not string"),
    ("int-literal", "(1)", "must evaluate to bool or the unknown type, not int"),
    ("bool-literal", "true", None),
    ("driver-compared", 'device.driver != ""', None),
    ("attribute-not-evident", 'device.attributes["gpu.mockgpu.io"].model', None),  # simplified: no type checker
    ("undeclared", "dev.driver == 'x'", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'dev' "
                                        "(in container '')\n | dev.driver == 'x'\n | ^"),
]


@pytest.mark.parametrize(("expression", "want"), [r[1:] for r in CEL_ROWS], ids=[r[0] for r in CEL_ROWS])
def test_cel_compile(expression: str, want: str | None) -> None:
    assert compile_error(expression) == want


D = "spec.devices[0]"
# validate.Union's member list (the attribute union is checked by declarative validation in v1.37)
UNION = "`int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`"
SLICE_ROWS: list[tuple[str, Mut, list[tuple[str, str]]]] = [
    ("no-node-field", _set(["spec", "nodeName"], _DEL),
     [("spec", "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
               "required")]),
    ("two-node-fields", _set(["spec", "allNodes"], True),
     [("spec", 'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, `allNodes`, '
               "`perDeviceNodeSelection` is required, but multiple fields are set")]),
    ("all-nodes-false", lambda o: o["spec"].update(allNodes=False),
     [("spec.allNodes", "Invalid value: false: must be either unset or set to true")]),
    ("devices-and-counters", lambda o: o["spec"].update(sharedCounters=counters_slice()["spec"]["sharedCounters"]),
     [("spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed')]),
    ("driver-required", _set(["spec", "driver"], _DEL), [("spec.driver", "Required value")]),
    ("slice-count", _set(["spec", "pool", "resourceSliceCount"], 0),
     [("spec.pool.resourceSliceCount", "Invalid value: 0: must be greater than zero")]),
    ("pool-name", _set(["spec", "pool", "name"], _DEL), [("spec.pool.name", "Required value")]),
    ("device-name-label", _set(["spec", "devices", 0, "name"], "gpu_0"),
     [(f"{D}.name", 'Invalid value: "gpu_0": a lowercase RFC 1123 label must consist of lower case alphanumeric '
       "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
       "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]),
    ("device-name-dots", _set(["spec", "devices", 0, "name"], "gpu.0"),
     [(f"{D}.name", 'Invalid value: "gpu.0": must not contain dots')]),  # IsDNS1123Label of apimachinery v0.37
    ("duplicate-device", lambda o: o["spec"]["devices"].append(copy.deepcopy(o["spec"]["devices"][0])),
     [("spec.devices[1]", 'Duplicate value: "gpu-0"')]),
    ("attribute-two-values", _set(["spec", "devices", 0, "attributes", "index"], {"int": 0, "string": "0"}),
     [(f"{D}.attributes[index]", 'Invalid value: "{int, string}": must specify exactly one of: ' + UNION)]),
    ("attribute-no-value", _set(["spec", "devices", 0, "attributes", "index"], {}),
     [(f"{D}.attributes[index]", 'Invalid value: "": must specify one of: ' + UNION)]),
    ("attribute-bad-version", _set(["spec", "devices", 0, "attributes", "driverVersion"], {"version": "550.54"}),
     [(f"{D}.attributes[driverVersion].version", 'Invalid value: "550.54": must be a string compatible with '
       "semver.org spec 2.0.0")]),
    ("attribute-long-string", _set(["spec", "devices", 0, "attributes", "type"], {"string": "x" * 65}),
     [(f"{D}.attributes[type].string", "Too long: may not be more than 64 bytes")]),
    ("attribute-name", _set(["spec", "devices", 0, "attributes", "9lives"], {"int": 9}),
     [(f"{D}.attributes", 'Invalid value: "9lives": a valid C identifier must start with alphabetic character or '
       "'_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', "
       "regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')")]),
    ("too-many-devices", lambda o: o["spec"].update(devices=[{"name": f"d-{i}"} for i in range(129)]),
     [("spec.devices", "Too many: 129: must have at most 128 items")]),
    ("too-many-devices-with-counters",
     lambda o: o["spec"].update(devices=[copy.deepcopy(o["spec"]["devices"][0]) | {"name": f"d-{i}"}
                                         for i in range(65)]),
     [("spec.devices", "Too many: 65: must have at most 64 items")]),
    ("consumption-without-counters", _set(["spec", "devices", 0, "consumesCounters", 0, "counters"], {}),
     [(f"{D}.consumesCounters[0].counters", "Required value")]),
    ("per-device-node-without-flag", _set(["spec", "devices", 0, "nodeName"], "node-1"),
     [(D, "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
          "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")]),
]


@pytest.mark.parametrize(("mutate", "want"), [r[1:] for r in SLICE_ROWS], ids=[r[0] for r in SLICE_ROWS])
def test_slice_errors(mutate: Mut, want: list[tuple[str, str]]) -> None:
    s = resource_slice()
    mutate(s)
    assert causes("ResourceSlice", s) == want


@pytest.mark.parametrize(("name", "why"), [
    ("example.com/gpu", None), ("nvidia.com/gpu", None),
    ("gpu", "a name must be a domain-prefixed path, such as 'example.com/my-prop'"),
    ("kubernetes.io/gpu", 'must not have "kubernetes.io/" domain'),
    ("requests.example.com/gpu", 'must not have "requests." prefix')])
def test_device_class_extended_resource_name(name: str, why: str | None) -> None:
    """v1.37's declarative format=k8s-extended-resource-name messages (the conformance suite saw them)."""
    dc = device_class()
    dc["spec"]["extendedResourceName"] = name
    if why is None:
        assert default_and_validate("DeviceClass", dc, namespace=None)["spec"]["extendedResourceName"] == name
    else:
        assert causes("DeviceClass", dc) == [("spec.extendedResourceName", f'Invalid value: "{name}": {why}')]


def test_counter_set_errors() -> None:
    s = counters_slice()
    s["spec"]["sharedCounters"].append({"name": "gpu-0-counters", "counters": {}})
    assert causes("ResourceSlice", s) == [("spec.sharedCounters[1].counters", "Required value"),
                                          ("spec.sharedCounters[1]", 'Duplicate value: "gpu-0-counters"')]


def _stored(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    out = default_and_validate(kind, obj, namespace=ns_of(kind))
    out["metadata"].update(uid="u", resourceVersion="1", creationTimestamp="2026-01-01T00:00:00Z")
    return out


def test_slice_immutable_fields() -> None:
    old = _stored("ResourceSlice", resource_slice())
    new = copy.deepcopy(old)
    new["spec"].update(driver="other.example.com", nodeName="node-2")
    new["spec"]["pool"]["name"] = "node-2"
    assert causes("ResourceSlice", new, old) == [
        ("spec.pool.name", 'Invalid value: "node-2": field is immutable'),
        ("spec.driver", 'Invalid value: "other.example.com": field is immutable'),
        ("spec.nodeName", 'Invalid value: "node-2": field is immutable')]
    new = copy.deepcopy(old)
    new["spec"]["devices"][0]["attributes"]["index"] = {"int": 1}
    assert default_and_validate("ResourceSlice", new, namespace=None, old=old)["metadata"]["generation"] == 2


def test_claim_and_template_specs_are_immutable() -> None:
    for kind, make, path in (("ResourceClaim", claim, ["spec", "devices"]),
                             ("ResourceClaimTemplate", template, ["spec", "spec", "devices"])):
        old = _stored(kind, make())
        new = copy.deepcopy(old)
        target = new
        for k in path:
            target = target[k]
        target["requests"][0]["exactly"]["count"] = 2
        ((field, message),) = causes(kind, new, old)
        # a claim's spec is declaratively immutable in v1.37 (no value printed); a template's is handwritten
        value = "null" if kind == "ResourceClaim" else "{"
        assert field == "spec" and message.startswith(f"Invalid value: {value}") and message.endswith(
            ": field is immutable")
        metadata_only = copy.deepcopy(old)
        metadata_only["metadata"]["labels"] = {"a": "b"}
        assert default_and_validate(kind, metadata_only, namespace="default", old=old)["metadata"]["labels"]


ALLOCATION = {"devices": {"results": [{"request": "gpu", "driver": "gpu.mockgpu.io", "pool": "node-1",
                                       "device": "gpu-0"}]},
              "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                                       "values": ["node-1"]}]}]}}
POD_REF = {"resource": "pods", "name": "p", "uid": "0d3a1b8e-0000-4000-8000-000000000001"}

STATUS_ROWS: list[tuple[str, dict[str, Any], dict[str, Any], list[tuple[str, str]]]] = [
    ("reserved-without-allocation", {}, {"reservedFor": [POD_REF]},
     [("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")]),
    ("reference-fields", {}, {"allocation": ALLOCATION, "reservedFor": [{"resource": "pods"}]},
     [("status.reservedFor[0].name", "Required value"), ("status.reservedFor[0].uid", "Required value")]),
    ("duplicate-reservation", {}, {"allocation": ALLOCATION, "reservedFor": [POD_REF, POD_REF]},
     [("status.reservedFor[1]", f'Duplicate value: "{POD_REF["uid"]}"')]),
    ("unknown-request", {}, {"allocation": {"devices": {"results": [dict(ALLOCATION["devices"]["results"][0],
                                                                          request="cpu")]}}},
     [("status.allocation.devices.results[0].request", 'Invalid value: "cpu": must be the name of a request in the '
       "claim or the name of a request and a subrequest separated by '/'")]),
    ("device-status-ok", {"allocation": ALLOCATION},
     {"allocation": ALLOCATION, "devices": [{"driver": "gpu.mockgpu.io", "pool": "node-1", "device": "gpu-0",
                                             "data": {"uuid": "GPU-1"}}]}, []),
    ("device-status-not-allocated", {"allocation": ALLOCATION},
     {"allocation": ALLOCATION, "devices": [{"driver": "gpu.mockgpu.io", "pool": "node-1", "device": "gpu-1"}]},
     [("status.devices[0]", "Invalid value: gpu.mockgpu.io/node-1/gpu-1: must be an allocated device in the claim")]),
    ("device-status-data-not-object", {"allocation": ALLOCATION},
     {"allocation": ALLOCATION, "devices": [{"driver": "gpu.mockgpu.io", "pool": "node-1", "device": "gpu-0",
                                             "data": [1]}]},
     [("status.devices[0].data", 'Invalid value: "<value omitted>": must be a valid JSON object')]),
    ("allocation-immutable", {"allocation": ALLOCATION},
     {"allocation": {**ALLOCATION, "devices": {"results": [dict(ALLOCATION["devices"]["results"][0],
                                                                device="gpu-1")]}}},
     [("status.allocation", "Invalid value: " + '{"devices":{"results":[{"device":"gpu-1","driver":"gpu.mockgpu.io",'
       '"pool":"node-1","request":"gpu"}]},"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":'
       '"metadata.name","operator":"In","values":["node-1"]}]}]}}: field is immutable')]),
]


@pytest.mark.parametrize(("old_status", "new_status", "want"), [r[1:] for r in STATUS_ROWS],
                         ids=[r[0] for r in STATUS_ROWS])
def test_claim_status_update_errors(old_status: dict[str, Any], new_status: dict[str, Any],
                                    want: list[tuple[str, str]]) -> None:
    old = _stored("ResourceClaim", claim())
    old["status"] = old_status
    new = copy.deepcopy(old)
    new["status"] = new_status
    if not want:
        assert default_and_validate("ResourceClaim", new, namespace="default", old=old, subresource="status")[
            "status"] == new_status
        return
    assert causes("ResourceClaim", new, old, "status") == want


def test_claim_status_update_keeps_the_spec_and_main_update_keeps_the_status() -> None:
    old = _stored("ResourceClaim", claim())
    new = copy.deepcopy(old)
    new["status"] = {"allocation": ALLOCATION, "reservedFor": [POD_REF]}
    out = default_and_validate("ResourceClaim", new, namespace="default", old=old, subresource="status")
    assert out["status"]["reservedFor"] == [POD_REF] and out["spec"] == old["spec"]
    again = copy.deepcopy(out)
    again["status"] = {}
    assert default_and_validate("ResourceClaim", again, namespace="default", old=out)["status"] == out["status"]


# ---- pods ------------------------------------------------------------------------------------------------

def pod(claims: list[Any], container_claims: list[Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    if container_claims is not None:
        container["resources"] = {"claims": container_claims}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"resourceClaims": claims, "containers": [container]}}


PC = "spec.resourceClaims"
CC = "spec.containers[0].resources.claims"
POD_ROWS: list[tuple[str, list[Any], list[Any] | None, list[tuple[str, str]]]] = [
    ("both-sources", [{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}], None,
     [(f"{PC}[0]", 'Invalid value: {"Name":"gpu","ResourceClaimName":"a","ResourceClaimTemplateName":"b"}: at most '
       "one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")]),
    ("no-source", [{"name": "gpu"}], None,
     [(f"{PC}[0]", 'Invalid value: {"Name":"gpu","ResourceClaimName":null,"ResourceClaimTemplateName":null}: must '
       "specify one of: `resourceClaimName`, `resourceClaimTemplateName`")]),
    ("duplicate-name", [{"name": "gpu", "resourceClaimName": "a"}, {"name": "gpu", "resourceClaimName": "b"}], None,
     [(f"{PC}[1].name", 'Duplicate value: "gpu"')]),
    ("name-required", [{"resourceClaimName": "a"}], None, [(f"{PC}[0].name", "Required value")]),
    ("claim-name-subdomain", [{"name": "gpu", "resourceClaimName": "A_b"}], None,
     [(f"{PC}[0].resourceClaimName", 'Invalid value: "A_b": a lowercase RFC 1123 subdomain must consist of lower '
       "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
       "'example.com', regex used for validation is "
       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]),
    ("container-unknown-claim", [{"name": "gpu", "resourceClaimName": "a"}], [{"name": "tpu"}],
     [(f"{CC}[0]", 'Not found: "tpu": must be one of the names in pod.spec.resourceClaims: gpu')]),
    ("container-claim-no-pod-claims", [], [{"name": "tpu"}],
     [(f"{CC}[0]", 'Not found: "tpu": must be one of the names in pod.spec.resourceClaims which is empty')]),
    ("container-duplicate", [{"name": "gpu", "resourceClaimName": "a"}], [{"name": "gpu"}, {"name": "gpu"}],
     [(f"{CC}[1]", 'Duplicate value: "gpu"')]),
    ("container-claim-and-request-overlap", [{"name": "gpu", "resourceClaimName": "a"}],
     [{"name": "gpu", "request": "r"}, {"name": "gpu"}], [(f"{CC}[1]", 'Duplicate value: "gpu"')]),
    ("container-claim-name-required", [{"name": "gpu", "resourceClaimName": "a"}], [{}], [(f"{CC}[0]",
                                                                                           "Required value")]),
]


@pytest.mark.parametrize(("claims", "container_claims", "want"), [r[1:] for r in POD_ROWS],
                         ids=[r[0] for r in POD_ROWS])
def test_pod_claim_errors(claims: list[Any], container_claims: list[Any] | None, want: list[tuple[str, str]]) -> None:
    assert causes("Pod", pod(claims, container_claims)) == want


def test_pod_with_claims_is_accepted_and_status_records_are_checked() -> None:
    p = pod([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}], [{"name": "gpu"}])
    stored = default_and_validate("Pod", p, namespace="default")
    stored["metadata"].update(uid="u", resourceVersion="1", creationTimestamp="2026-01-01T00:00:00Z")
    ok = copy.deepcopy(stored)
    ok["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]
    out = default_and_validate("Pod", ok, namespace="default", old=stored, subresource="status")
    assert out["status"]["resourceClaimStatuses"] == ok["status"]["resourceClaimStatuses"]
    bad = copy.deepcopy(stored)
    bad["status"]["resourceClaimStatuses"] = [{"name": "tpu", "resourceClaimName": "x"},
                                              {"name": "tpu", "resourceClaimName": "Bad_Name"}]
    got = causes("Pod", bad, stored, "status")
    assert got[:3] == [
        ("status.resourceClaimStatuses[0].name", 'Invalid value: "tpu": must match the name of an entry in '
                                                 "`spec.resourceClaims`"),
        ("status.resourceClaimStatuses[1].name", 'Invalid value: "tpu": must match the name of an entry in '
                                                 "`spec.resourceClaims`"),
        ("status.resourceClaimStatuses[1].name", 'Duplicate value: "tpu"')]
    assert got[3][0] == "status.resourceClaimStatuses[1].resourceClaimName"
    changed = copy.deepcopy(stored)  # the spec's claims are immutable like the rest of the pod spec
    changed["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "two-gpus"
    assert causes("Pod", changed, stored)[0][0] == "spec"


# ---- tables and field selectors --------------------------------------------------------------------------

STATE_ROWS = [
    ("pending", {}, {}, "pending"),
    ("allocated", {}, {"allocation": ALLOCATION}, "allocated"),
    ("allocated-reserved", {}, {"allocation": ALLOCATION, "reservedFor": [POD_REF]}, "allocated,reserved"),
    ("deleted-pending", {"deletionTimestamp": "2026-01-01T00:00:00Z"}, {}, "deleted"),
    ("deleted-allocated", {"deletionTimestamp": "2026-01-01T00:00:00Z"}, {"allocation": ALLOCATION},
     "deleted,allocated"),
]


@pytest.mark.parametrize(("meta", "status", "state"), [r[1:] for r in STATE_ROWS], ids=[r[0] for r in STATE_ROWS])
def test_claim_table_state(meta: dict[str, Any], status: dict[str, Any], state: str) -> None:
    c = {"metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z", **meta}, "status": status}
    table = tables.to_table("resourceclaims", [c])
    assert [col["name"] for col in table["columnDefinitions"]] == ["Name", "State", "Age"]
    assert table["rows"][0]["cells"][:2] == ["c", state]


@pytest.mark.parametrize(("plural", "columns"), [
    ("resourceslices", ["Name", "Node", "Driver", "Pool", "Age"]), ("deviceclasses", ["Name", "Age"]),
    ("resourceclaimtemplates", ["Name", "Age"])])
def test_table_columns(plural: str, columns: list[str]) -> None:
    assert [c["name"] for c in tables.to_table(plural, [])["columnDefinitions"]] == columns


@pytest.mark.parametrize(("selector", "matches"), [
    ("spec.nodeName=node-1", True), ("spec.nodeName=node-2", False), ("spec.driver=gpu.mockgpu.io", True),
    ("spec.pool.name=node-1,spec.driver!=gpu.mockgpu.io", False), ("metadata.name=node-1-gpus", True)])
def test_slice_field_selectors(selector: str, matches: bool) -> None:
    assert parse_field_selector(selector, "resourceslices.resource.k8s.io").matches(resource_slice()) is matches


def test_unsupported_field_selector_is_a_400() -> None:
    with pytest.raises(StatusError) as info:
        parse_field_selector("spec.nodeName=x", "resourceclaims.resource.k8s.io")
    assert info.value.code == 400
    assert info.value.status["message"] == "field label not supported: spec.nodeName"


@pytest.mark.parametrize(("kind", "labels", "want"), [
    ("ResourceClaim", {}, [("spec.devices.requests[0].adminAccess", "Forbidden: admin access to devices requires the "
                                                                    "`resource.kubernetes.io/admin-access: true` label "
                                                                    "on the containing namespace")]),
    ("ResourceClaimTemplate", {"resource.kubernetes.io/admin-access": "false"},
     [("spec.devices.requests[0].adminAccess", "Forbidden: admin access to devices requires the "
                                               "`resource.kubernetes.io/admin-access: true` label on the containing "
                                               "namespace")]),
    ("ResourceClaim", {"resource.kubernetes.io/admin-access": "true"}, []),
])
def test_admin_access_needs_the_namespace_label(kind: str, labels: dict[str, str], want: list) -> None:
    """upstream's AuthorizedForAdmin, before validation; the path is the claim's for a template too."""
    from mockgpu.control.apiserver.registry import by_kind

    obj = claim() if kind == "ResourceClaim" else template()
    devices = obj["spec"]["devices"] if kind == "ResourceClaim" else obj["spec"]["spec"]["devices"]
    devices["requests"][0]["exactly"]["adminAccess"] = True
    admission = by_kind(kind).admission  # the kind's record: resourcev1's claim_/template_admin_access
    got = [(e.field, f"{e.type}: {e.detail}") for e in admission(obj, labels)]
    assert got == want
