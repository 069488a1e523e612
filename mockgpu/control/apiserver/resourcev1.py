"""resource.k8s.io/v1 (Dynamic Resource Allocation): DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate.

Follows kube-apiserver v1.37's registry strategies and validation (``pkg/registry/resource/*/strategy.go``,
``pkg/apis/resource/validation``, ``pkg/apis/resource/v1/defaults.go``) for the GA fields, with upstream's field
paths and texts:

- defaults: ``exactly.allocationMode: ExactCount`` and ``count: 1`` (also on ``firstAvailable`` sub-requests),
  a device taint's ``timeAdded`` (now), a toleration's ``operator`` (``Equal``);
  ``metadata.generation`` 1 on create and bumped on every spec change of DeviceClasses and ResourceSlices;
- ResourceClaim: status reset on create, kept on main-resource updates and the only thing ``/status`` changes;
  the spec is immutable (``spec: Invalid value: null: field is immutable``, v1.37's declarative wording); status
  updates check ``reservedFor`` (entries, uniqueness, at most 256, only with an allocation, no additions while deleted),
  ``devices`` (the drivers' per-device status: names, an allocated device, conditions, data, network data),
  an allocation being immutable once set and new allocation results (request names of the claim, driver, pool
  and device names);
- ResourceClaim and ResourceClaimTemplate creates: ``exactly.adminAccess: true`` needs the namespace label
  ``resource.kubernetes.io/admin-access: "true"`` (``admin_access_errors``, upstream's AuthorizedForAdmin, first);
- ResourceClaimTemplate: the spec is immutable; ``spec.metadata`` labels and annotations are validated;
- requests (``exactly`` or ``firstAvailable``, names, class names, allocation mode and count, selectors whose CEL
  is compiled by ``celcompile``), constraints (``matchAttribute`` a fully qualified name, request references),
  opaque configs (driver name, ``parameters`` present), and list limits (``Too many: N: must have at most M items``);
- ResourceSlice: driver and pool names, ``resourceSliceCount`` > 0, exactly one of ``nodeName``/``nodeSelector``/
  ``allNodes``/``perDeviceNodeSelection``, ``sharedCounters`` XOR ``devices``, device names (DNS labels, unique),
  attribute/capacity names (C identifiers, optionally domain-qualified), exactly one attribute value, semver
  versions, 64-byte strings, the per-device attribute limits, counter sets and counter consumption, and
  ``pool.name``/``driver``/``nodeName`` immutable.

v1.37 checks some of these rules through declarative validation, which replaces the handwritten error; where
its wording differs (the attribute union: ``must specify one of: `int`, ...``) this module uses it. Upstream
appends those declarative errors after the handwritten ones; here every error comes in field order.

Device taints in slices and tolerations in requests are defaulted and validated by ``devicetaint``.

Simplified: binding conditions, consumable capacity (request policies), derived
attributes and node-allocatable mappings (alpha/beta features) are stored but not validated; the bad value of
the immutable-spec error is printed as the v1 JSON, not Go's dump of the internal struct; CEL type and cost
checks are left out (see ``celcompile``).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from mockgpu.control.apiserver import devicetaint, names
from mockgpu.control.apiserver.celcompile import compile_error
from mockgpu.control.apiserver.status import (
    FieldError,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    field_too_long,
)

# limits of k8s.io/api/resource/v1/types.go
REQUESTS_MAX = 32  # DeviceRequestsMaxSize = AllocationResultsMaxSize
CONSTRAINTS_MAX = 32
CONFIG_MAX = 32
SELECTORS_MAX = 32
FIRST_AVAILABLE_MAX = 8
RESULTS_MAX = 32
RESERVED_FOR_MAX = 256
SLICE_MAX_DEVICES = 128
SLICE_MAX_DEVICES_ADVANCED = 64  # with taints, counter consumption or list attributes
SLICE_MAX_COUNTER_SETS = 8
COUNTERS_PER_SET_MAX = 32
CONSUMPTIONS_PER_DEVICE_MAX = 2
COUNTERS_PER_CONSUMPTION_MAX = 32
ATTRIBUTES_AND_CAPACITIES_MAX = 32
ATTRIBUTE_VALUES_MAX = 48
ATTRIBUTE_STRING_MAX = 64
DRIVER_NAME_MAX = 63
ID_MAX = 32
CEL_MAX_LENGTH = 10 * 1024
OPAQUE_PARAMETERS_MAX = 10 * 1024
POOL_NAME_MAX = 253

DEVICE_STATUS_CONDITIONS_MAX = 8
DEVICE_STATUS_DATA_MAX = 10 * 1024
NETWORK_IPS_MAX = 16

ALLOCATION_MODES = ("All", "ExactCount")
IMMUTABLE = "field is immutable"
_REQUEST_REF_MSG = ("must be the name of a request in the claim or the name of a request and a subrequest separated "
                    "by '/'")
_C_IDENTIFIER_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by a string of "
                     "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
                     "validation is '[A-Za-z_][A-Za-z0-9_]*')")
_C_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NUM = r"(0|[1-9]\d*)"
_PRE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
SEMVER_RE = re.compile(rf"^{_NUM}\.{_NUM}\.{_NUM}(-{_PRE}(\.{_PRE})*)?(\+{_BUILD}(\.{_BUILD})*)?$")
_NODE_SELECTOR_OPS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")
_SLICE_NODE_FIELDS = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"


class GoValue:
    """A bad value printed verbatim in a field error (JSON for structs, as apimachinery's ``ErrorBody``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _json(value: Any) -> GoValue:
    return GoValue(json.dumps(value, separators=(",", ":"), sort_keys=True))


def too_many(path: str, actual: int, limit: int) -> FieldError:
    return field_invalid_typed(path, "TooMany", actual, f"must have at most {limit} item{'' if limit == 1 else 's'}")


def field_invalid_typed(path: str, typ: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, typ, detail, value)


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


# ---- defaulting and the strategies ------------------------------------------------------------------------

def _default_request(req: dict[str, Any]) -> None:
    if not req.get("allocationMode"):
        req["allocationMode"] = "ExactCount"
    if req["allocationMode"] == "ExactCount" and not req.get("count"):
        req["count"] = 1
    devicetaint.default_tolerations(req)


def default_claim_spec(spec: Any) -> None:
    """``SetDefaults_ExactDeviceRequest`` and ``SetDefaults_DeviceSubRequest`` over a claim spec."""
    for req in _l(_d(_d(spec).get("devices")).get("requests")):
        if not isinstance(req, dict):
            continue
        if isinstance(req.get("exactly"), dict):
            _default_request(req["exactly"])
        for sub in _l(req.get("firstAvailable")):
            if isinstance(sub, dict):
                _default_request(sub)


def _spec(obj: dict[str, Any]) -> Any:
    """The spec, ``{}`` when absent or null (Go always encodes the struct)."""
    return obj.setdefault("spec", {}) if obj.get("spec") is None else obj["spec"]


def _keep_other_half(obj: dict[str, Any], old: dict[str, Any] | None, subresource: str) -> None:
    """Status reset on create; on update only ``/status`` changes the status, and only the status."""
    if old is None:
        obj["status"] = {}
    elif subresource == "status":
        obj["spec"] = copy.deepcopy(old.get("spec", {}))
    else:
        obj["status"] = copy.deepcopy(old.get("status", {}))


def _bump_generation(obj: dict[str, Any], old: dict[str, Any] | None, spec: Any) -> None:
    meta = obj.setdefault("metadata", {})
    if old is None:
        meta["generation"] = 1
    else:
        generation = old["metadata"].get("generation") or 1
        meta["generation"] = generation + 1 if spec != old.get("spec") else generation


def prepare_claim(obj: dict[str, Any], old: dict[str, Any] | None, subresource: str) -> dict[str, Any]:
    """ResourceClaim: defaults, then the strategy's PrepareForCreate/PrepareForUpdate (status kept apart). Struct
    fields Go always encodes (``spec``, its ``devices``) are filled with ``{}`` as upstream returns them."""
    spec = _spec(obj)
    if isinstance(spec, dict) and spec.get("devices") is None:
        spec["devices"] = {}
    default_claim_spec(spec)
    _keep_other_half(obj, old, subresource)
    return obj


def prepare_claim_template(obj: dict[str, Any], old: dict[str, Any] | None, subresource: str) -> dict[str, Any]:
    """ResourceClaimTemplate: defaults of the claim spec inside; ``spec.metadata`` and ``spec.spec.devices``
    filled with ``{}`` as upstream returns them."""
    spec = _spec(obj)
    if isinstance(spec, dict):
        if spec.get("metadata") is None:
            spec["metadata"] = {}
        inner = spec.setdefault("spec", {}) if spec.get("spec") is None else spec["spec"]
        if isinstance(inner, dict) and inner.get("devices") is None:
            inner["devices"] = {}
    default_claim_spec(_d(spec).get("spec"))
    return obj


def prepare_device_class(obj: dict[str, Any], old: dict[str, Any] | None, subresource: str) -> dict[str, Any]:
    """DeviceClass: generation 1 on create, bumped on every spec change."""
    _bump_generation(obj, old, _spec(obj))
    return obj


def prepare_slice(obj: dict[str, Any], old: dict[str, Any] | None, subresource: str) -> dict[str, Any]:
    """ResourceSlice: ``SetDefaults_DeviceTaint`` (``timeAdded``: now), and the generation as DeviceClass's."""
    spec = _spec(obj)
    for device in _l(_d(spec).get("devices")):
        for taint in _l(_d(device).get("taints")):
            devicetaint.default_taint(taint)
    _bump_generation(obj, old, spec)
    return obj


# ---- names -------------------------------------------------------------------------------------------------

def _label(value: str, path: str) -> list[FieldError]:
    return [field_invalid(path, value, m) for m in names.dns1123_label(value)]


def _subdomain(value: str, path: str) -> list[FieldError]:
    return [field_invalid(path, value, m) for m in names.dns1123_subdomain(value)]


def validate_driver_name(value: Any, path: str) -> list[FieldError]:
    """``ValidateCSIDriverName``: required, at most 63 bytes, a DNS subdomain (compared lower-cased)."""
    value = _s(value)
    if not value:
        return [field_required(path)]
    errs = [field_too_long(path, DRIVER_NAME_MAX)] if len(value) > DRIVER_NAME_MAX else []
    return errs + [field_invalid(path, value, m) for m in names.dns1123_subdomain(value.lower())]


def _c_identifier(value: str, path: str) -> list[FieldError]:
    errs = [field_too_long(path, ID_MAX)] if len(value) > ID_MAX else []
    if not _C_IDENTIFIER_RE.match(value):
        errs.append(field_invalid(path, value, _C_IDENTIFIER_MSG))
    return errs


def validate_qualified_name(value: str, path: str) -> list[FieldError]:
    """An attribute or capacity name: a C identifier, or ``<driver domain>/<C identifier>``."""
    parts = value.split("/")
    if len(parts) == 1:
        return _c_identifier(parts[0], path)
    errs: list[FieldError] = []
    if len(parts) == 2:
        errs += [field_invalid(path, "", "the domain must not be empty")] if not parts[0] else \
            validate_driver_name(parts[0], path)
        errs += [field_invalid(path, "", "the name must not be empty")] if not parts[1] else \
            _c_identifier(parts[1], path)
    return errs  # upstream accepts more than one slash too (a TODO in its validation)


def validate_fully_qualified_name(value: str, path: str) -> list[FieldError]:
    errs = validate_qualified_name(value, path)
    if "/" not in value:
        errs.append(field_invalid(path, value, "a fully qualified name must be a domain and a name separated by a "
                                               "slash"))
    return errs


def _pool_name(value: Any, path: str) -> list[FieldError]:
    value = _s(value)
    if not value:
        return [field_required(path)]
    errs = [field_too_long(path, POOL_NAME_MAX)] if len(value) > POOL_NAME_MAX else []
    for part in value.split("/"):
        errs += [field_invalid(path, part, m) for m in names.dns1123_subdomain(part)]
    return errs


# ---- claims --------------------------------------------------------------------------------------------------

def _request_names(devices: dict[str, Any]) -> dict[str, set[str] | None]:
    out: dict[str, set[str] | None] = {}
    for req in _l(devices.get("requests")):
        req = _d(req)
        subs = _l(req.get("firstAvailable"))
        out[_s(req.get("name"))] = {_s(_d(s).get("name")) for s in subs} if subs else None
    return out


def _has_request(request_names: dict[str, set[str] | None], ref: str) -> bool:
    parts = ref.split("/")
    if len(parts) > 2 or parts[0] not in request_names:
        return False
    return len(parts) == 1 or parts[1] in (request_names[parts[0]] or set())


def _request_ref(ref: Any, path: str, request_names: dict[str, set[str] | None]) -> list[FieldError]:
    ref = _s(ref)
    parts = ref.split("/")
    if len(parts) > 2:
        return [field_invalid(path, ref, _REQUEST_REF_MSG)]
    errs = [e for p in parts for e in _label(p, path)]
    if not _has_request(request_names, ref):
        errs.append(field_invalid(path, ref, _REQUEST_REF_MSG))
    return errs


_GO_ORDER = {  # v1 struct field order, as Go's encoding/json writes a duplicate list item
    "request": ("name", "exactly", "firstAvailable"),
    "exactly": ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity"),
}


def _go_request(req: Any) -> GoValue:
    """A duplicate request as v1.37's declarative list-map uniqueness prints it: the item's JSON in field order."""
    def ordered(value: Any, order: tuple[str, ...]) -> Any:
        if not isinstance(value, dict):
            return value
        return {**{k: value[k] for k in order if k in value}, **{k: v for k, v in value.items() if k not in order}}

    r = ordered(copy.deepcopy(req), _GO_ORDER["request"])
    if isinstance(r.get("exactly"), dict):
        r["exactly"] = ordered(r["exactly"], _GO_ORDER["exactly"])
    return GoValue(json.dumps(r, separators=(",", ":")))


def _set(items: list[Any], limit: int, path: str, check: Any, key: Any, shown: Any = None) -> list[FieldError]:
    """upstream ``validateSet``: too many short-circuits; each item checked; duplicates by key (printed as
    ``shown(item)`` when given, else the key)."""
    if limit >= 0 and len(items) > limit:
        return [too_many(path, len(items), limit)]
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        errs += check(item, f"{path}[{i}]")
    if key is not None:
        seen: set[Any] = set()
        for i, item in enumerate(items):
            k = key(item)
            if k in seen:
                errs.append(field_duplicate(f"{path}[{i}]", shown(item) if shown is not None else k))
            seen.add(k)
    return errs


def validate_selector(selector: Any, path: str, stored: bool = False) -> list[FieldError]:
    cel = _d(selector).get("cel")
    if not isinstance(cel, dict):
        return [field_required(f"{path}.cel")]
    if stored:
        return []
    expr_path, expression = f"{path}.cel.expression", _s(cel.get("expression"))
    if len(expression) > CEL_MAX_LENGTH:
        return [field_too_long(expr_path, CEL_MAX_LENGTH)]
    if not expression.strip():
        return [field_required(expr_path, "expression is empty")]  # cel.ErrorTypeRequired from the compiler
    detail = compile_error(expression)
    return [field_invalid(expr_path, expression, detail)] if detail else []


def _selectors(selectors: Any, path: str, stored: bool = False) -> list[FieldError]:
    return _set(_l(selectors), SELECTORS_MAX, path, lambda s, p: validate_selector(s, p, stored), None)


def _allocation_mode(req: dict[str, Any], path: str) -> list[FieldError]:
    mode, count = req.get("allocationMode"), req.get("count") or 0
    if mode == "All":
        return [field_invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")] \
            if count != 0 else []
    if mode == "ExactCount":
        return [field_invalid(f"{path}.count", count, "must be greater than zero")] \
            if not isinstance(count, int) or count <= 0 else []
    return [field_not_supported(f"{path}.allocationMode", mode or "", ALLOCATION_MODES)]


def _device_class(value: Any, path: str) -> list[FieldError]:
    value = _s(value)
    return [field_required(path)] if not value else _subdomain(value, path)


def _exact(req: dict[str, Any], path: str) -> list[FieldError]:
    errs = _device_class(req.get("deviceClassName"), f"{path}.deviceClassName")
    errs += _selectors(req.get("selectors"), f"{path}.selectors")
    errs += _allocation_mode(req, path)
    errs += devicetaint.validate_tolerations(req, path)
    return errs


def _sub_request(sub: Any, path: str) -> list[FieldError]:
    sub = _d(sub)
    return _label(_s(sub.get("name")), f"{path}.name") + _exact(sub, path)


def validate_request(req: Any, path: str) -> list[FieldError]:
    req = _d(req)
    errs = _label(_s(req.get("name")), f"{path}.name")  # ValidateDNS1123Label: an empty name is Invalid
    first, exactly = _l(req.get("firstAvailable")), req.get("exactly")
    if first and exactly is not None:
        errs.append(field_invalid(path, None, "exactly one of `exactly` or `firstAvailable` is required, but "
                                              "multiple fields are set"))
    elif first:
        errs += _set(first, FIRST_AVAILABLE_MAX, f"{path}.firstAvailable", _sub_request,
                     lambda s: _s(_d(s).get("name")))
    elif exactly is not None:
        errs += _exact(_d(exactly), f"{path}.exactly")
    else:
        errs.append(field_required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    return errs


def _constraint(constraint: Any, path: str, request_names: dict[str, set[str] | None]) -> list[FieldError]:
    constraint = _d(constraint)
    errs = _set(_l(constraint.get("requests")), REQUESTS_MAX, f"{path}.requests",
                lambda r, p: _request_ref(r, p, request_names), lambda r: r)
    if constraint.get("matchAttribute") is not None:
        errs += validate_fully_qualified_name(_s(constraint["matchAttribute"]), f"{path}.matchAttribute")
    elif constraint.get("distinctAttribute") is not None:
        errs += validate_fully_qualified_name(_s(constraint["distinctAttribute"]), f"{path}.distinctAttribute")
    else:  # v1.37 with DRAConsumableCapacity (beta, on), its wording verbatim
        errs.append(field_required(path, 'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                                         "but multiple fields are set"))
    return errs


def _opaque(config: Any, path: str) -> list[FieldError]:
    opaque = _d(config).get("opaque")
    if not isinstance(opaque, dict):
        return [field_required(f"{path}.opaque")]
    errs = validate_driver_name(opaque.get("driver"), f"{path}.opaque.driver")
    params = opaque.get("parameters")
    if params is None:
        errs.append(field_required(f"{path}.opaque.parameters"))
    elif len(json.dumps(params)) > OPAQUE_PARAMETERS_MAX:
        errs.append(field_too_long(f"{path}.opaque.parameters", OPAQUE_PARAMETERS_MAX))
    return errs


def validate_claim_spec(spec: Any, path: str) -> list[FieldError]:
    devices = _d(_d(spec).get("devices"))
    dpath = f"{path}.devices"
    request_names = _request_names(devices)
    errs = _set(_l(devices.get("requests")), REQUESTS_MAX, f"{dpath}.requests", validate_request,
                lambda r: _s(_d(r).get("name")), _go_request)
    errs += _set(_l(devices.get("constraints")), CONSTRAINTS_MAX, f"{dpath}.constraints",
                 lambda c, p: _constraint(c, p, request_names), None)

    def config(c: Any, p: str) -> list[FieldError]:
        return _set(_l(_d(c).get("requests")), REQUESTS_MAX, f"{p}.requests",
                    lambda r, rp: _request_ref(r, rp, request_names), lambda r: r) + _opaque(c, p)

    errs += _set(_l(devices.get("config")), CONFIG_MAX, f"{dpath}.config", config, None)
    return errs


def _consumer(ref: Any, path: str) -> list[FieldError]:
    ref = _d(ref)
    return [field_required(f"{path}.{k}") for k in ("resource", "name", "uid") if not ref.get(k)]


def _result(result: Any, path: str, request_names: dict[str, set[str] | None]) -> list[FieldError]:
    result = _d(result)
    errs = _request_ref(result.get("request"), f"{path}.request", request_names)
    errs += validate_driver_name(result.get("driver"), f"{path}.driver")
    errs += _pool_name(result.get("pool"), f"{path}.pool")
    return errs + _label(_s(result.get("device")), f"{path}.device")


def validate_node_selector(selector: Any, path: str) -> list[FieldError]:
    """``ValidateNodeSelector`` (terms required; keys qualified names; operators; matchFields on metadata.name)."""
    terms = _l(_d(selector).get("nodeSelectorTerms"))
    if not terms:
        return [field_required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        tpath = f"{path}.nodeSelectorTerms[{i}]"
        for j, req in enumerate(_l(_d(term).get("matchExpressions"))):
            rpath, req = f"{tpath}.matchExpressions[{j}]", _d(req)
            op, values = req.get("operator"), _l(req.get("values"))
            if op not in _NODE_SELECTOR_OPS:
                errs.append(field_invalid(f"{rpath}.operator", op, "not a valid selector operator"))
            elif op in ("In", "NotIn") and not values:
                errs.append(field_required(f"{rpath}.values", "must be specified when `operator` is 'In' or "
                                                              "'NotIn'"))
            errs += [field_invalid(f"{rpath}.key", req.get("key"), m) for m in names.qualified_name(_s(req.get("key")))]
        for j, req in enumerate(_l(_d(term).get("matchFields"))):
            rpath, req = f"{tpath}.matchFields[{j}]", _d(req)
            if req.get("key") != "metadata.name":
                errs.append(field_invalid(f"{rpath}.key", req.get("key"), "not a valid field selector key"))
            if req.get("operator") not in ("In", "NotIn"):
                errs.append(field_invalid(f"{rpath}.operator", req.get("operator"), "not a valid selector operator"))
            elif len(_l(req.get("values"))) != 1:
                errs.append(field_required(f"{rpath}.values", "must be only one value when `operator` is 'In' or "
                                                              "'NotIn' for node field selector"))
    return errs


def _device_status(entry: Any, path: str, allocated: set[str]) -> list[FieldError]:
    """``validateDeviceStatus``: names, an allocated device, at most 8 conditions, ``data`` a JSON object,
    network data lengths. (The bad value of "must be an allocated device" is printed ``driver/pool/device``.)"""
    entry = _d(entry)
    errs = validate_driver_name(entry.get("driver"), f"{path}.driver")
    errs += _pool_name(entry.get("pool"), f"{path}.pool")
    errs += _label(_s(entry.get("device")), f"{path}.device")
    key = "/".join(_s(entry.get(k)) for k in ("driver", "pool", "device")) + (
        f"/{entry['shareID']}" if entry.get("shareID") else "")
    if key not in allocated:
        errs.append(field_invalid(path, GoValue(key), "must be an allocated device in the claim"))
    conditions = _l(entry.get("conditions"))
    if len(conditions) > DEVICE_STATUS_CONDITIONS_MAX:
        errs.append(too_many(f"{path}.conditions", len(conditions), DEVICE_STATUS_CONDITIONS_MAX))
    data = entry.get("data")
    if data is not None:
        if len(json.dumps(data)) > DEVICE_STATUS_DATA_MAX:
            errs.append(field_too_long(f"{path}.data", DEVICE_STATUS_DATA_MAX))
        elif not isinstance(data, dict):
            errs.append(field_invalid(f"{path}.data", "<value omitted>", "must be a valid JSON object"))
    network = _d(entry.get("networkData"))
    for key, limit in (("interfaceName", 256), ("hardwareAddress", 128)):
        if len(_s(network.get(key))) > limit:
            errs.append(field_too_long(f"{path}.networkData.{key}", limit))
    ips = _l(network.get("ips"))
    if len(ips) > NETWORK_IPS_MAX:
        errs.append(too_many(f"{path}.networkData.ips", len(ips), NETWORK_IPS_MAX))
    return errs


def validate_claim_status(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """``ValidateResourceClaimStatusUpdate`` (``status`` of ``new`` against the stored ``old``)."""
    status, old_status = _d(new.get("status")), _d(old.get("status"))
    reserved = _l(status.get("reservedFor"))
    errs = _set(reserved, RESERVED_FOR_MAX, "status.reservedFor", _consumer, lambda r: _s(_d(r).get("uid")))
    allocation, old_allocation = status.get("allocation"), old_status.get("allocation")
    allocated = {"/".join(_s(_d(r).get(k)) for k in ("driver", "pool", "device"))
                 + (f"/{_d(r)['shareID']}" if _d(r).get("shareID") else "")
                 for r in _l(_d(_d(allocation).get("devices")).get("results"))}

    def device_status(entry: Any, path: str) -> list[FieldError]:
        return _device_status(entry, path, allocated)

    errs += _set(_l(status.get("devices")), -1, "status.devices", device_status,
                 lambda d: "/".join(_s(_d(d).get(k)) for k in ("driver", "pool", "device", "shareID")))
    if reserved:
        if allocation is None:
            errs.append(field_forbidden("status.reservedFor", "may not be specified when `allocated` is not set"))
        elif new["metadata"].get("deletionTimestamp"):
            old_set = {json.dumps(r, sort_keys=True) for r in _l(old_status.get("reservedFor"))}
            if any(json.dumps(r, sort_keys=True) not in old_set for r in reserved):
                errs.append(field_forbidden("status.reservedFor", "new entries may not be added while "
                                                                  "`deallocationRequested` or `deletionTimestamp` "
                                                                  "are set"))
    if old_allocation is not None and allocation is not None:
        if allocation != old_allocation:
            errs.append(field_invalid("status.allocation", _json(allocation), IMMUTABLE))
    elif allocation is not None:
        request_names = _request_names(_d(_d(new.get("spec")).get("devices")))
        devices = _d(_d(allocation).get("devices"))
        errs += _set(_l(devices.get("results")), RESULTS_MAX, "status.allocation.devices.results",
                     lambda r, p: _result(r, p, request_names), None)
        selector = _d(allocation).get("nodeSelector")
        if selector is not None:
            errs += validate_node_selector(selector, "status.allocation.nodeSelector")
    return errs


# ---- slices ----------------------------------------------------------------------------------------------

def _attribute(attr: Any, path: str) -> list[FieldError]:
    attr = _d(attr)
    errs: list[FieldError] = []
    lists = [k for k in ("bools", "ints", "strings", "versions") if attr.get(k) is not None]
    if attr.get("string") is not None and len(_s(attr["string"])) > ATTRIBUTE_STRING_MAX:
        errs.append(field_too_long(f"{path}.string", ATTRIBUTE_STRING_MAX))
    if attr.get("version") is not None and not SEMVER_RE.match(_s(attr["version"])):
        errs.append(field_invalid(f"{path}.version", attr["version"], "must be a string compatible with semver.org "
                                                                     "spec 2.0.0"))
    for key in lists:
        if not _l(attr[key]):
            errs.append(field_invalid(f"{path}.{key}", GoValue("[]"), "must not be empty if specified"))
    for i, item in enumerate(_l(attr.get("strings"))):
        if len(_s(item)) > ATTRIBUTE_STRING_MAX:
            errs.append(field_too_long(f"{path}.strings[{i}]", ATTRIBUTE_STRING_MAX))
    for i, item in enumerate(_l(attr.get("versions"))):
        if not SEMVER_RE.match(_s(item)):
            errs.append(field_invalid(f"{path}.versions[{i}]", item, "must be a string compatible with semver.org "
                                                                     "spec 2.0.0"))
    # the union is checked by declarative validation in v1.37 (``validate.Union``), which words it so
    members = ", ".join(f"`{m}`" for m in _ATTRIBUTE_MEMBERS)
    given = [m for m in _ATTRIBUTE_MEMBERS if attr.get(m) is not None]
    if not given:
        errs.append(field_invalid(path, "", f"must specify one of: {members}"))
    elif len(given) > 1:
        errs.append(field_invalid(path, "{" + ", ".join(given) + "}", f"must specify exactly one of: {members}"))
    return errs


_ATTRIBUTE_MEMBERS = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")


def _counters(counters: Any, limit: int, path: str) -> list[FieldError]:
    counters = _d(counters)
    if not counters:
        return [field_required(path)]
    if len(counters) > limit:
        return [too_many(path, len(counters), limit)]
    errs: list[FieldError] = []
    for key in sorted(counters):
        errs += _label(key, path)
        if not isinstance(counters[key], dict) or counters[key].get("value") is None:
            errs.append(field_required(f"{path}[{key}].value"))
    return errs


def _counter_set(cs: Any, path: str) -> list[FieldError]:
    cs = _d(cs)
    name = _s(cs.get("name"))
    errs = _label(name, f"{path}.name") if name else [field_required(f"{path}.name")]
    return errs + _counters(cs.get("counters"), COUNTERS_PER_SET_MAX, f"{path}.counters")


def _consumption(c: Any, path: str) -> list[FieldError]:
    c = _d(c)
    name = _s(c.get("counterSet"))
    errs = _label(name, f"{path}.counterSet") if name else [field_required(f"{path}.counterSet")]
    return errs + _counters(c.get("counters"), COUNTERS_PER_CONSUMPTION_MAX, f"{path}.counters")


def _attribute_values(device: dict[str, Any]) -> int:
    n = 0
    for attr in _d(device.get("attributes")).values():
        lists = [_l(_d(attr).get(k)) for k in ("bools", "ints", "strings", "versions")]
        n += sum(len(x) for x in lists) or 1
    return n


def _device(device: Any, path: str, per_device: bool, old_device: Any = None) -> list[FieldError]:
    device = _d(device)
    errs = _label(_s(device.get("name")), f"{path}.name")
    attributes, capacity = _d(device.get("attributes")), _d(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > ATTRIBUTES_AND_CAPACITIES_MAX:
        errs.append(field_invalid(path, total, "the total number of attributes and capacities must not exceed "
                                               f"{ATTRIBUTES_AND_CAPACITIES_MAX}"))
    values = _attribute_values(device)
    if values > ATTRIBUTE_VALUES_MAX:
        errs.append(field_invalid(path, values, f"the total number of attribute values must not exceed "
                                                f"{ATTRIBUTE_VALUES_MAX}"))
    for key in sorted(attributes):
        errs += validate_qualified_name(key, f"{path}.attributes")
        errs += _attribute(attributes[key], f"{path}.attributes[{key}]")
    for key in sorted(capacity):
        errs += validate_qualified_name(key, f"{path}.capacity")
        if not isinstance(capacity[key], dict) or capacity[key].get("value") is None:
            errs.append(field_required(f"{path}.capacity[{key}].value"))
    errs += devicetaint.validate_taints(device.get("taints"), None if old_device is None else
                                        _d(old_device).get("taints"), f"{path}.taints")
    errs += _set(_l(device.get("consumesCounters")), CONSUMPTIONS_PER_DEVICE_MAX, f"{path}.consumesCounters",
                 _consumption, lambda c: _s(_d(c).get("counterSet")))
    node_fields = [k for k in ("nodeName", "nodeSelector", "allNodes") if device.get(k) is not None]
    if per_device:
        set_fields = []
        if device.get("nodeName") is not None:
            if device["nodeName"]:
                set_fields.append("`nodeName`")
                errs += _subdomain(_s(device["nodeName"]), f"{path}.nodeName")
            else:
                errs.append(field_invalid(f"{path}.nodeName", "", "must not be empty"))
        if device.get("nodeSelector") is not None:
            set_fields.append("`nodeSelector`")
            errs += validate_node_selector(device["nodeSelector"], f"{path}.nodeSelector")
        if device.get("allNodes") is not None:
            if device["allNodes"] is True:
                set_fields.append("`allNodes`")
            else:
                errs.append(field_invalid(f"{path}.allNodes", device["allNodes"], "must be either unset or set to "
                                                                                   "true"))
        msg = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
               "is set to true in the ResourceSlice spec")
        if not set_fields:
            errs.append(field_required(path, msg))
        elif len(set_fields) > 1:
            errs.append(field_invalid(path, "{" + ", ".join(set_fields) + "}", msg))
    elif node_fields:
        errs.append(field_invalid(path, None, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                                              "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
    return errs


def _advanced(spec: dict[str, Any]) -> bool:
    for device in _l(spec.get("devices")):
        device = _d(device)
        if device.get("taints") or device.get("consumesCounters"):
            return True
        if any(_d(a).get(k) is not None for a in _d(device.get("attributes")).values()
               for k in ("bools", "ints", "strings", "versions")):
            return True
    return False


def validate_slice_spec(spec: Any, old_spec: Any) -> list[FieldError]:
    spec = _d(spec)
    pool = _d(spec.get("pool"))
    errs = validate_driver_name(spec.get("driver"), "spec.driver")
    errs += _pool_name(pool.get("name"), "spec.pool.name")
    count, generation = pool.get("resourceSliceCount") or 0, pool.get("generation") or 0
    if not isinstance(count, int) or count <= 0:
        errs.append(field_invalid("spec.pool.resourceSliceCount", count, "must be greater than zero"))
    if isinstance(generation, int) and generation < 0:
        errs.append(field_invalid("spec.pool.generation", generation, "must be greater than or equal to zero"))
    if old_spec is not None:
        old_spec = _d(old_spec)
        for path, new_v, old_v in (("spec.pool.name", pool.get("name"), _d(old_spec.get("pool")).get("name")),
                                   ("spec.driver", spec.get("driver"), old_spec.get("driver")),
                                   ("spec.nodeName", spec.get("nodeName"), old_spec.get("nodeName"))):
            if new_v != old_v:
                errs.append(field_invalid(path, new_v, IMMUTABLE))
    set_fields: list[str] = []
    if spec.get("nodeName") is not None:
        if spec["nodeName"]:
            set_fields.append("`nodeName`")
            errs += _subdomain(_s(spec["nodeName"]), "spec.nodeName")
        else:
            errs.append(field_invalid("spec.nodeName", "", "must be either unset or set to a non-empty string"))
    if spec.get("nodeSelector") is not None:
        set_fields.append("`nodeSelector`")
        errs += validate_node_selector(spec["nodeSelector"], "spec.nodeSelector")
        terms = _l(_d(spec["nodeSelector"]).get("nodeSelectorTerms"))
        if len(terms) != 1:
            errs.append(field_invalid("spec.nodeSelector.nodeSelectorTerms", _json(terms),
                                      "must have exactly one node selector term"))
    for key in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(key) is not None:
            if spec[key] is True:
                set_fields.append(f"`{key}`")
            else:
                errs.append(field_invalid(f"spec.{key}", spec[key], "must be either unset or set to true"))
    if not set_fields:
        errs.append(field_required("spec", _SLICE_NODE_FIELDS))
    elif len(set_fields) > 1:
        errs.append(field_invalid("spec", "{" + ", ".join(set_fields) + "}",
                                  _SLICE_NODE_FIELDS + ", but multiple fields are set"))
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(field_invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    per_device = spec.get("perDeviceNodeSelection") is True
    limit = SLICE_MAX_DEVICES_ADVANCED if _advanced(spec) else SLICE_MAX_DEVICES
    old_devices = {_s(_d(d).get("name")): d for d in _l(_d(old_spec).get("devices"))} if old_spec is not None else {}
    errs += _set(_l(spec.get("devices")), limit, "spec.devices",
                 lambda d, p: _device(d, p, per_device, old_devices.get(_s(_d(d).get("name")))),
                 lambda d: _s(_d(d).get("name")))
    errs += _set(_l(spec.get("sharedCounters")), SLICE_MAX_COUNTER_SETS, "spec.sharedCounters", _counter_set,
                 lambda c: _s(_d(c).get("name")))
    return errs


def extended_resource_name(val: str) -> list[str]:
    """v1.37's declarative ``format=k8s-extended-resource-name`` (authoritative over the handwritten check,
    which says only "must be a valid extended resource name"): its messages, in its order."""
    msgs = []
    if "/" not in val:
        msgs.append("a name must be a domain-prefixed path, such as 'example.com/my-prop'")
    elif "kubernetes.io/" in val:
        msgs.append('must not have "kubernetes.io/" domain')
    if val.startswith("requests."):
        msgs.append('must not have "requests." prefix')
    return msgs + names.qualified_name("requests." + val)


ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"


def admin_access_errors(devices: dict[str, Any], namespace_labels: dict[str, str]) -> list[FieldError]:
    """upstream ``AuthorizedForAdmin`` (registry/resource/utils.go), run by the claim and template strategies
    before validation on create: the first request of a claim spec's ``devices`` with ``exactly.adminAccess: true``
    is forbidden unless the namespace has the label ``resource.kubernetes.io/admin-access: "true"``. The path is
    ``spec.devices.requests[i].adminAccess`` for a template too, as upstream writes it."""
    for i, req in enumerate(_l(devices.get("requests"))):
        exactly = _d(_d(req).get("exactly"))
        if exactly.get("adminAccess") is True:
            if namespace_labels.get(ADMIN_NAMESPACE_LABEL) == "true":
                return []
            return [field_forbidden(f"spec.devices.requests[{i}].adminAccess",
                                    f"admin access to devices requires the `{ADMIN_NAMESPACE_LABEL}: true` label "
                                    "on the containing namespace")]
    return []


def claim_admin_access(obj: dict[str, Any], namespace_labels: dict[str, str]) -> list[FieldError]:
    """``admin_access_errors`` of a ResourceClaim (``spec.devices``)."""
    return admin_access_errors(_d(_d(obj.get("spec")).get("devices")), namespace_labels)


def template_admin_access(obj: dict[str, Any], namespace_labels: dict[str, str]) -> list[FieldError]:
    """``admin_access_errors`` of a ResourceClaimTemplate (``spec.spec.devices``)."""
    return admin_access_errors(_d(_d(_d(obj.get("spec")).get("spec")).get("devices")), namespace_labels)


# ---- the kinds ------------------------------------------------------------------------------------------

def validate_device_class(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """DeviceClass: selectors (CEL compiled unless unchanged from the stored class), configs, the extended
    resource name."""
    spec = obj.get("spec")
    old_spec = _d(old.get("spec")) if old is not None else None
    stored = old_spec is not None and _d(spec).get("selectors") == old_spec.get("selectors")
    errs = _selectors(_d(spec).get("selectors"), "spec.selectors", stored)
    errs += _set(_l(_d(spec).get("config")), CONFIG_MAX, "spec.config", _opaque, None)
    ext = _d(spec).get("extendedResourceName")
    if ext is not None:
        errs += [field_invalid("spec.extendedResourceName", ext, m) for m in extended_resource_name(_s(ext))]
    return errs


def validate_slice(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """ResourceSlice: ``validate_slice_spec`` (with the immutable fields on update)."""
    return validate_slice_spec(obj.get("spec"), old.get("spec") if old is not None else None)


def validate_claim(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """ResourceClaim (main resource): the spec on create; on update the spec is immutable."""
    spec = obj.get("spec")
    if old is None:
        return validate_claim_spec(spec, "spec")
    # v1.37's declarative ``+k8s:immutable`` on ResourceClaim.spec (authoritative, beta) prints no value
    return [field_invalid("spec", GoValue("null"), IMMUTABLE)] if spec != old.get("spec") else []


def validate_claim_template(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """ResourceClaimTemplate: ``spec.metadata`` and the claim spec on create; the spec is immutable."""
    spec = obj.get("spec")
    if old is not None:
        return [field_invalid("spec", _json(spec), IMMUTABLE)] if spec != old.get("spec") else []
    meta = _d(_d(spec).get("metadata"))
    errs = names.validate_labels(_d(meta.get("labels")), "spec.metadata.labels")
    for key in _d(meta.get("annotations")):
        errs += [field_invalid("spec.metadata.annotations", key, m) for m in names.qualified_name(key.lower())]
    return errs + validate_claim_spec(_d(spec).get("spec"), "spec.spec")
