"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge follows ``k8s.io/apimachinery/pkg/util/strategicpatch`` for the fields of the kinds the
kit serves: lists merged by their ``patchMergeKey`` (containers by name, ports by containerPort,
conditions by type, ownerReferences by uid, ...), other lists replaced, primitive ``merge`` lists unioned,
and the directives ``$patch`` (replace/delete/merge), ``$deleteFromPrimitiveList/<f>``,
``$setElementOrder/<f>`` and ``$retainKeys`` that ``kubectl apply`` sends. Simplified: with
``$setElementOrder`` the listed elements come first in the given order and server-only elements follow.
Errors become 400/422 StatusErrors with the texts kube-apiserver uses. Server-side apply
(``application/apply-patch+yaml``) is not a patch of this module: ``managedfields.apply`` serves it.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from mockgpu.apimachinery.unstructured import without_nulls
from mockgpu.control.apiserver import limits
from mockgpu.control.apiserver.status import StatusError, bad_request, too_large, unsupported_media_type

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)

_C = "spec.containers"
#: field path (list elements as ``[]``) → merge key; "" marks a primitive list merged as a set.
MERGE_KEYS: dict[str, str] = {
    "metadata.ownerReferences": "uid", "metadata.finalizers": "",
    **{f"spec.{c}": "name" for c in ("containers", "initContainers", "ephemeralContainers")},
    **{f"spec.{c}[].{f}": k for c in ("containers", "initContainers", "ephemeralContainers")
       for f, k in (("ports", "containerPort"), ("env", "name"), ("volumeMounts", "mountPath"),
                    ("volumeDevices", "devicePath"), ("resizePolicy", "resourceName"))},
    "spec.volumes": "name", "spec.imagePullSecrets": "name", "spec.hostAliases": "ip",
    "spec.topologySpreadConstraints": "topologyKey", "spec.schedulingGates": "name", "spec.resourceClaims": "name",
    "spec.podCIDRs": "", "status.conditions": "type", "status.podIPs": "ip", "status.hostIPs": "ip",
    "status.addresses": "type", "secrets": "name",
    "status.resourceClaimStatuses": "name", "status.reservedFor": "uid",  # pods; resource.k8s.io ResourceClaims
}
# the pod spec inside the templates of Deployments, ReplicaSets, DaemonSets, Jobs and CronJobs merges as a pod's does
MERGE_KEYS.update({f"{prefix}{k}": v for k, v in list(MERGE_KEYS.items()) if k.startswith("spec.")
                   for prefix in ("spec.template.", "spec.jobTemplate.spec.template.")}
                  | {"spec.template.metadata.ownerReferences": "uid", "spec.template.metadata.finalizers": "",
                     "status.conditions": "type"})
_INVALID_MSG = "the server rejected our request due to an error in our request"


def apply_patch(obj: dict[str, Any], body: bytes | str | dict | list, content_type: str) -> dict[str, Any]:
    """``obj`` with the patch applied (a new dict); StatusError for bad patches or unknown patch types."""
    ctype = content_type.split(";")[0].strip().lower()
    if ctype not in PATCH_TYPES or ctype == APPLY_PATCH:
        raise unsupported_media_type(content_type, PATCH_TYPES[:3])
    patch = _decode(body)
    if ctype == JSON_PATCH:
        return json_patch(obj, [] if patch is None else patch)  # Go decodes null as an empty patch
    if ctype == MERGE_PATCH and patch is None:
        raise bad_request("Invalid JSON Patch")  # evanphx/json-patch MergePatch: ErrBadJSONPatch
    if ctype == MERGE_PATCH and not isinstance(patch, dict):  # the strict decode (fieldValidation=Warn) comes first
        raise bad_request(f"error decoding patch: json: cannot unmarshal {_jtype(patch)} into Go value of type "
                          "map[string]interface {}")
    if patch is None:  # strategic: null decodes to an empty map, a patch that changes nothing
        return copy.deepcopy(obj)
    if not isinstance(patch, dict):
        raise bad_request(f"json: cannot unmarshal {_jtype(patch)} into Go value of type map[string]interface {{}}")
    if ctype == MERGE_PATCH:
        return merge_patch(obj, patch)
    return strategic_merge_patch(obj, patch)


def _jtype(v: Any) -> str:
    return {list: "array", str: "string", bool: "bool", int: "number", float: "number"}.get(type(v), "object")


def _decode(body: Any) -> Any:
    """Patch bytes or text, or an already decoded patch (the server decodes bodies first)."""
    if not isinstance(body, bytes | str):
        return copy.deepcopy(body)
    try:
        return limits.load_json(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"error decoding patch: {exc}") from None


def invalid_patch(detail: str) -> StatusError:
    """422 as kube-apiserver answers a JSON patch that does not apply.

    Upstream wraps the patch library's error with ``NewGenericServerResponse``, which drops it: clients
    only see the generic message. ``detail`` is kept on the exception (``.detail``) for logs and tests.
    """
    err = bad_request(_INVALID_MSG)
    err.status.update(code=422, reason="Invalid")
    err.code = 422
    err.detail = detail  # type: ignore[attr-defined]
    return err


# ---- RFC 7386 ----------------------------------------------------------------------------------------------

def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


# ---- RFC 6902 ----------------------------------------------------------------------------------------------

def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise invalid_patch(f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]] if path else []


def _parent(doc: Any, parts: list[str], op: str, path: str) -> tuple[Any, str]:
    cur = doc
    for p in parts[:-1]:
        if isinstance(cur, dict) and p in cur:
            cur = cur[p]
        elif isinstance(cur, list) and p.isdigit() and int(p) < len(cur):
            cur = cur[int(p)]
        else:
            raise invalid_patch(f"{op} operation does not apply: doc is missing path: \"{path}\": missing value")
    return cur, parts[-1]


def _get(doc: Any, path: str, op: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent, key = _parent(doc, parts, op, path)
    if isinstance(parent, dict) and key in parent:
        return parent[key]
    if isinstance(parent, list) and key.isdigit() and int(key) < len(parent):
        return parent[int(key)]
    raise invalid_patch(f"{op} operation does not apply: doc is missing key: {path}: missing value")


def _remove(doc: Any, path: str, op: str) -> Any:
    parts = _pointer(path)
    parent, key = _parent(doc, parts, op, path) if parts else (None, "")
    if isinstance(parent, dict) and key in parent:
        return parent.pop(key)
    if isinstance(parent, list) and key.isdigit() and int(key) < len(parent):
        return parent.pop(int(key))
    raise invalid_patch(f"{op} operation does not apply: doc is missing path: \"{path}\": missing value")


def _add(doc: Any, path: str, value: Any, op: str, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, key = _parent(doc, parts, op, path)
    if isinstance(parent, dict):
        if replace and key not in parent:
            raise invalid_patch(f"replace operation does not apply: doc is missing key: {path}: missing value")
        parent[key] = value
    elif isinstance(parent, list):
        if key == "-" and not replace:
            parent.append(value)
        elif key.isdigit() and int(key) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(key)] = value
            else:
                parent.insert(int(key), value)
        else:
            raise invalid_patch(f"{op} operation does not apply: doc is missing path: \"{path}\": missing value")
    else:
        raise invalid_patch(f"{op} operation does not apply: doc is missing path: \"{path}\": missing value")
    return doc


def _copy_source(doc: Any, path: Any) -> Any:
    """What a ``copy`` duplicates. As evanphx/json-patch v4 (``gopkg.in/evanphx/json-patch.v4``, which
    kube-apiserver uses): the parent of ``from`` must exist, but a missing key in an object reads as null (its
    ``partialDoc.get`` returns nil without an error), so copying from nowhere adds a null."""
    parts = _pointer(path)
    if parts:
        parent, key = _parent(doc, parts, "copy", path)
        if isinstance(parent, dict):
            return parent.get(key)
    return _get(doc, path, "copy")


def json_patch(obj: dict[str, Any], ops: Any) -> dict[str, Any]:
    """RFC 6902 on a copy of ``obj``; a malformed patch is 400, one that does not apply 422."""
    if not isinstance(ops, list):
        raise bad_request(f"error decoding patch: json: cannot unmarshal {_jtype(ops)} into Go value of type "
                          "[]handlers.jsonPatchOp")
    if len(ops) > limits.MAX_JSON_PATCH_OPS:
        raise too_large(f"Request entity too large: The allowed maximum operations in a JSON patch is "
                        f"{limits.MAX_JSON_PATCH_OPS}, "
                        f"got {len(ops)}")
    doc: Any = copy.deepcopy(obj)
    copied = 0  # bytes duplicated by copy operations (jsonpatch.AccumulatedCopySizeLimit)
    for op in ops:
        if op is None:  # decodes as an empty operation, whose kind evanphx/json-patch reads as "unknown"
            op = {}
        if not isinstance(op, dict):
            raise bad_request(f"error decoding patch: json: cannot unmarshal {_jtype(op)} into Go value of type "
                              "handlers.jsonPatchOp")
        if op.get("op") is not None and not isinstance(op["op"], str):
            raise bad_request(f"error decoding patch: json: cannot unmarshal {_jtype(op['op'])} into Go struct field "
                              "jsonPatchOp.op of type string")
        kind, path = op.get("op") or "unknown", op.get("path")
        if kind in ("add", "replace", "test") and "value" not in op:
            raise invalid_patch(f"{kind} operation does not apply: missing value")
        if kind in ("add", "replace", "test", "move") and limits.exceeds_depth(
                _get(doc, op.get("from"), "move") if kind == "move" else op["value"],
                limits.MAX_DEPTH - len(_pointer(path))):
            raise invalid_patch(f"{kind} operation does not apply: the result would exceed the max depth")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]), "add")
        elif kind == "remove":
            _remove(doc, path, "remove")
        elif kind == "replace":
            doc = _add(doc, path, copy.deepcopy(op["value"]), "replace", replace=True)
        elif kind == "move":
            doc = _add(doc, path, _remove(doc, op.get("from"), "move"), "move")
        elif kind == "copy":
            value = _copy_source(doc, op.get("from"))
            copied += limits.encoded_size(value)
            if copied > limits.JSON_PATCH_MAX_COPY_BYTES:
                raise invalid_patch(f"Unable to complete the copy, the accumulated size increase of copy is {copied}, "
                                    f"exceeding the limit {limits.JSON_PATCH_MAX_COPY_BYTES}")
            if limits.exceeds_depth(value, limits.MAX_DEPTH - len(_pointer(path))):
                raise invalid_patch("copy operation does not apply: the result would exceed the max depth")
            doc = _add(doc, path, copy.deepcopy(value), "copy")
        elif kind == "test":
            if _get(doc, path, "test") != op["value"]:
                raise invalid_patch(f"testing value {path} failed: test failed")
        else:  # Apply's error, which upstream answers 422 like any other (patch.go applyJSPatch)
            raise invalid_patch(f"Unexpected kind: {kind}")
    if not isinstance(doc, dict):
        raise invalid_patch("the patched object is not a JSON object")
    if limits.exceeds_depth(doc):  # moves and adds can nest values deeper than any body was
        raise invalid_patch("the patched object exceeds the max depth")
    return doc


# ---- strategic merge patch -----------------------------------------------------------------------------------

def strategic_merge_patch(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Strategic merge of ``patch`` into ``obj`` (a copy) using :data:`MERGE_KEYS`."""
    try:
        merged = _merge_map(copy.deepcopy(obj), copy.deepcopy(patch), "")
    except _SMPError as exc:
        raise bad_request(str(exc)) from None
    return merged if merged is not None else {}


class _SMPError(ValueError):
    pass


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _merge_map(original: Any, patch: dict[str, Any], path: str) -> Any:
    directive = patch.pop("$patch", None)
    if directive == "delete":
        return None
    if directive == "replace":
        return _strip(patch)
    if directive not in (None, "merge"):
        raise _SMPError(f"Unknown patch type: {directive} in map: {json.dumps(patch)}")
    out = original if isinstance(original, dict) else {}
    retain = patch.pop("$retainKeys", None)
    if retain is not None and not isinstance(retain, list):  # mergepatch.ErrBadPatchFormatForRetainKeys
        raise _SMPError("invalid patch format of retainKeys")
    orders = {k.split("/", 1)[1]: patch.pop(k) for k in list(patch) if k.startswith("$setElementOrder/")}
    deletes = {k.split("/", 1)[1]: patch.pop(k) for k in list(patch) if k.startswith("$deleteFromPrimitiveList/")}
    for key, value in patch.items():
        child = _child(path, key)
        if value is None:
            out.pop(key, None)
        elif key not in out:  # mergeMap: a key the original lacks takes the patch value as sent, nulls discarded
            out[key] = without_nulls(value)  # (directives in it are not read: they stay, as unknown fields)
        elif isinstance(value, dict):
            merged = _merge_map(out.get(key), value, child)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, child)
        else:
            out[key] = value
    for key, values in deletes.items():
        if isinstance(out.get(key), list):
            out[key] = [v for v in out[key] if v not in values]
    for key, order in orders.items():
        if isinstance(out.get(key), list):
            out[key] = _reorder(out[key], order, MERGE_KEYS.get(_child(path, key), ""))
    if isinstance(retain, list):
        for key in [k for k in out if k not in retain]:
            out.pop(key)
    return out


def _strip(value: Any) -> Any:
    """A replacement value without directives."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and "$patch" in v)]
    return value


def _merge_list(original: Any, patch: list[Any], path: str) -> list[Any]:
    key = MERGE_KEYS.get(path)
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return _strip(patch)
    if key is None or not isinstance(original, list):
        return _strip([p for p in patch if not (isinstance(p, dict) and p.get("$patch") == "delete")])
    if key == "":
        return original + [p for p in patch if p not in original]
    out = list(original)
    item_path = path + "[]"
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise _SMPError(f"map: {json.dumps(item)} does not contain declared merge key: {key}")
        idx = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_merge_map({}, item, item_path))
        else:
            out[idx] = _merge_map(out[idx], item, item_path)
    return out


def _reorder(items: list[Any], order: list[Any], key: str) -> list[Any]:
    def ident(v: Any) -> Any:
        return json.dumps(v.get(key) if key and isinstance(v, dict) else v, sort_keys=True)
    rank = {ident(o): i for i, o in enumerate(order)}
    listed = sorted((v for v in items if ident(v) in rank), key=lambda v: rank[ident(v)])
    return listed + [v for v in items if ident(v) not in rank]
