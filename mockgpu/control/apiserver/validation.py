"""Decode checks, defaulting and validation of written objects, with kube-apiserver's messages.

``default_and_validate`` is what the server runs on every create and update: the decoder's type checks (400)
and unknown/duplicate fields (dropped with a warning, or 400 when strict: ``fieldvalidation``), defaults, then
field validation collected into one 422
``Invalid`` Status whose causes carry upstream's field paths and texts (``pkg/apis/core/validation``),
including the "Schedule GPUs" rules for extended resources. Validation of sub-trees the kit never uses
(volumes, probes, affinity, security contexts) is left out. Pod spec updates are ``podupdate``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from mockgpu.apimachinery.quantity import QuantityError, canonical, parse_quantity
from mockgpu.config.featuregates import DEFAULT as DEFAULT_GATES
from mockgpu.config.featuregates import FeatureGates
from mockgpu.control.apiserver import fieldvalidation, microtime, names, registry
from mockgpu.control.apiserver.gojson import json_kind
from mockgpu.control.apiserver.registry.kind import Kind
from mockgpu.control.apiserver.status import (
    FieldError,
    bad_request,
    invalid,
)


def default_and_validate(kind: str, obj: dict[str, Any], *, namespace: str | None, old: dict[str, Any] | None = None,
                         strict: bool = False, subresource: str = "",
                         namespace_labels: dict[str, str] | None = None, store: Any = None,
                         admit: Callable[[dict[str, Any]], None] | None = None,
                         gates: FeatureGates = DEFAULT_GATES,
                         track: Callable[[dict[str, Any], dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The object to store for a create (``old`` None) or update, or a StatusError (400 or 422).
    ``namespace_labels``: the namespace's labels, for checks upstream's strategies make against the namespace
    (DRA admin access); None skips them. ``store``: the stored objects, for a kind whose storage allocates
    (``Kind.allocate``); None skips the allocation (a pure check). ``admit``: mutating admission (LimitRanger),
    which upstream runs after decoding and before the strategy's ``PrepareForCreate`` and validation. ``track``:
    records the writer's managedFields in the object to store, computed from the defaulted object
    (``managedfields.update``; upstream's field manager runs on the decoded, defaulted object, before admission and
    before the storage allocates): on a create, the kind's ``defaults`` of the body when it has them."""
    info = registry.by_kind(kind)
    if info is None:
        raise bad_request(f"no kind \"{kind}\" is registered for version \"v1\" in scheme \"mockgpu\"")
    if not isinstance(obj, dict):
        raise bad_request(f"the object provided is unrecognized (must be of type {kind})")
    check_type_meta(kind, obj)
    check_decode(kind, obj, strict)
    obj = copy.deepcopy(obj)
    obj["apiVersion"], obj["kind"] = info.api_version, kind
    for key in ("metadata", "spec", "status"):
        if key in obj and obj[key] is None:
            del obj[key]  # JSON null is an absent field
    meta = obj.setdefault("metadata", {})
    if info.namespaced:
        if meta.get("namespace") and namespace and meta["namespace"] != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        if namespace:
            meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    _normalize_quantities(info, obj)
    tracked = info.defaults(obj) if track is not None and info.defaults is not None and old is None else None
    if admit is not None:
        admit(obj)
        _normalize_quantities(info, obj)
    if info.gated_fields is not None and subresource != "status":
        info.gated_fields(obj, old, gates)
    if info.prepare is not None:
        obj = info.prepare(obj, old, subresource)
    microtime.normalize(info.micro_times, obj)
    if track is not None:
        track(obj, obj if tracked is None else tracked)
    if info.allocate is not None and store is not None and subresource != "status":
        errs = info.allocate(store, obj, old)  # upstream's BeginCreate/BeginUpdate answer before the strategy
        if errs:
            raise invalid(kind, meta.get("name") or meta.get("generateName") or "", errs, info.group)
    errs = validate(kind, obj, old, subresource)
    if old is None and namespace_labels is not None and info.admission is not None:
        errs = info.admission(obj, namespace_labels) + errs  # upstream's strategies check it first
    if errs:
        raise invalid(kind, meta.get("name") or meta.get("generateName") or "", errs, info.group)
    return obj


_SCHEME = "pkg/api/legacyscheme/scheme.go:30"


def check_type_meta(kind: str, obj: dict[str, Any]) -> None:
    """A body of another kind or group-version → 400 as the REST handler's decoder words it.

    Absent apiVersion/kind default to the URL's, as upstream does.
    """
    for key in ("apiVersion", "kind"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            got = json_kind(obj[key])
            raise bad_request(f"the object provided is unrecognized (must be of type {kind}): couldn't get "
                              f"version/kind; json parse error: json: cannot unmarshal {got} "
                              f"into Go struct field .{key} of type string")
    info = registry.by_kind(kind)
    served = info.api_version if info is not None else "v1"
    api_version, body_kind = obj.get("apiVersion") or served, obj.get("kind") or kind
    if api_version == served and body_kind == kind:
        return
    version = api_version.rsplit("/", 1)[-1]
    prefix = f'{body_kind} in version "{version}" cannot be handled as a {kind}: '
    if body_kind not in registry.SCHEME.get(api_version, set()):
        raise bad_request(prefix + f'no kind "{body_kind}" is registered for version "{api_version}" in scheme '
                                   f'"{_SCHEME}"')
    internal = served.split("/")[0].split(".")[0] if "/" in served else "core"
    raise bad_request(prefix + f"converting ({version}.{body_kind}) to ({internal}.{kind}): unknown conversion")


def check_decode(kind: str, obj: dict[str, Any], strict: bool = False) -> None:
    """What decoding into the Go types does (``fieldvalidation``): 400 for a value of the wrong JSON type or a
    malformed quantity or time; unknown fields dropped (in place) and, with duplicate fields, warned about, or
    400 when ``strict``."""
    info = registry.by_kind(kind)
    fieldvalidation.check_body(info.group if info is not None else "", kind, obj, strict)


def _normalize_quantities(info: Kind, obj: dict[str, Any]) -> None:
    """Quantities are stored and returned in canonical string form (``2`` → ``"2"``, ``1000m`` → ``"1"``); the
    kind's record says where they are."""
    for m in info.quantities(obj) if info.quantities is not None else []:
        for key, value in m.items():
            m[key] = _stored_quantity(value)


def _stored_quantity(value: Any) -> str:
    """The canonical text, unless ``mockgpu.apimachinery.quantity`` could not read it back (it has no ``n``/``u``
    suffixes and caps the length at 64), in which case the value is kept as written."""
    text = canonical(value if isinstance(value, str) else parse_quantity(value))
    try:
        parse_quantity(text)
    except QuantityError:
        return value if isinstance(value, str) else str(value)
    return text


def validate(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None,
             subresource: str = "") -> list[FieldError]:
    """Every field error of ``obj`` (after defaulting), in upstream's order: ObjectMeta, then the kind's
    strategy (its status strategy for a ``/status`` update where the kind has one)."""
    info = registry.by_kind(kind)
    if info is None:
        raise bad_request(f"no kind \"{kind}\" is registered for version \"v1\" in scheme \"mockgpu\"")
    errs = names.validate_object_meta(obj.get("metadata") or {}, info.namespaced, info.name_rule)
    if old is not None:
        errs += names.validate_meta_update(obj.get("metadata") or {}, old.get("metadata") or {})
    if old is not None and subresource == "status" and info.validate_status is not None:
        return errs + info.validate_status(obj, old)
    return errs + (info.validate(obj, old) if info.validate is not None else [])
