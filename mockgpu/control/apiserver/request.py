"""Reading a request the way kube-apiserver does: which resource a URL names, the verb, the body's format,
query parameters (booleans as Go parses them), delete options, Accept negotiation and continue tokens."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from mockgpu.control.apiserver import fieldvalidation, protobuf
from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.discovery import RESOURCES, ResourceInfo
from mockgpu.control.apiserver.handlers import DeleteOptions
from mockgpu.control.apiserver.store import Obj

NOT_FOUND = "the server could not find the requested resource"
JSON = "application/json"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json")
TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})  # Go's strconv.ParseBool


def not_found_path() -> st.StatusError:
    err = st.not_found("", "")
    err.status.update(message=NOT_FOUND, details={})
    return err


@dataclass(frozen=True)
class Target:
    """What a resource URL names."""

    info: ResourceInfo
    namespace: str | None  # None: all namespaces, or a cluster-scoped resource
    name: str | None
    sub: str | None
    watch: bool  # the legacy /watch/ prefix


def parse_path(parts: list[str], resources: dict[str, ResourceInfo] | None = None) -> Target:
    """``parts`` after ``/api/v1`` (or ``/apis/<group>/<version>`` with that group's ``resources``); a 404
    Status for anything that is not a served resource."""
    resources = RESOURCES if resources is None else resources
    watch = bool(parts) and parts[0] == "watch"
    if watch:
        parts = parts[1:]
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] in resources and resources[parts[2]].namespaced:
        ns, rest = parts[1], parts[2:]
    else:
        ns, rest = None, parts
    if not rest or rest[0] not in resources or len(rest) > 3 or any(p == "" for p in parts):
        raise not_found_path()
    info = resources[rest[0]]
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and sub not in {s.name for s in info.subresources}:
        raise not_found_path()
    if info.plural == "namespaces" and name is not None:
        ns = None
    return Target(info, ns, name, sub, watch)


def encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def json_response(obj: Any, status: int = 200, content_type: str = JSON) -> web.Response:
    return web.Response(body=encode(obj), status=status, content_type=content_type)


def wants_table(accept: str) -> str | None:
    """The Table version asked for by the Accept header (kubectl get), or None for plain JSON."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params:
            return "v1" if "v=v1" in params else "v1beta1"
        if part.split(";")[0].strip() in (JSON, "*/*", "application/yaml"):
            return None
    return None


def decode_body(raw: bytes, content_type: str) -> Any:
    """JSON or YAML request body; 400 with the parser's message when malformed, 415 for other formats."""
    ctype = content_type.split(";")[0].strip().lower() or JSON
    if ctype == protobuf.CONTENT_TYPE:
        return protobuf.decode(raw)
    if ctype in ("application/yaml", "application/apply-patch+yaml", "text/yaml"):
        try:  # as sigs.k8s.io/yaml: timestamps become strings, .inf/.nan cannot be JSON
            data = yaml.safe_load(raw.decode("utf-8"))
            return json.loads(json.dumps(data, default=str, allow_nan=False))
        except (yaml.YAMLError, UnicodeDecodeError, ValueError, TypeError, RecursionError) as exc:
            raise st.bad_request(f"error converting YAML to JSON: {exc}") from None
        finally:
            fieldvalidation.note_yaml_duplicates(raw)
    if ctype not in (JSON, *PATCH_TYPES):
        raise st.unsupported_media_type(content_type)
    try:
        return json.loads(raw, parse_constant=_no_constants, object_pairs_hook=fieldvalidation.object_pairs)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise st.bad_request(f"couldn't get version/kind; json parse error: {exc}") from None


def _no_constants(name: str) -> Any:
    """NaN and Infinity are not JSON (Go's decoder refuses them; Python's would accept them)."""
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def _go_type(value: Any) -> str:
    return {bool: "bool", int: "number", float: "number", list: "array", dict: "object"}.get(type(value), "object")


def check_type_meta_types(obj: Any) -> None:
    """apiVersion and kind must be strings: the serializer reads them before anything else (400 otherwise)."""
    if not isinstance(obj, dict):
        return
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            raise st.bad_request(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                                 f"{_go_type(value)} into Go struct field .{key} of type string")


def int_param(q: Any, name: str) -> int | None:
    value = q.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise st.bad_request(f'invalid value for {name}: "{value}"') from None


def verb_of(method: str, t: Target, q: Any) -> str:
    collection = t.name is None
    if t.watch or (method == "GET" and q.get("watch") in TRUE):
        if method != "GET":
            raise st.method_not_allowed(method, t.info.kind)
        return "watch"
    verbs = {"GET": "list" if collection else "get", "POST": "create", "PUT": "update", "PATCH": "patch",
             "DELETE": "deletecollection" if collection else "delete"}
    if method not in verbs:
        raise st.method_not_allowed(method, t.info.kind)
    verb = verbs[method]
    if t.sub in ("binding", "eviction") and method == "POST":
        return "create"
    if collection and verb in ("update", "patch"):
        raise st.method_not_allowed(method, t.info.kind)
    return verb


def delete_options(q: Any, body: dict[str, Any]) -> DeleteOptions:
    """DeleteOptions from the query and the body; wrong JSON types are 400 as Go's decoder makes them."""
    grace = int_param(q, "gracePeriodSeconds")
    if grace is None and body.get("gracePeriodSeconds") is not None:
        grace = body["gracePeriodSeconds"]
        if not isinstance(grace, int) or isinstance(grace, bool):
            raise st.bad_request(f"json: cannot unmarshal {_go_type(grace)} into Go struct field "
                                 "DeleteOptions.gracePeriodSeconds of type int64")
    if grace is not None and not -(2**63) <= grace < 2**63:
        raise st.bad_request(f"gracePeriodSeconds {grace} is out of range for int64")
    pre = body.get("preconditions") if isinstance(body.get("preconditions"), dict) else {}
    dry_body = body.get("dryRun") or []
    if not isinstance(dry_body, list) or not all(isinstance(d, str) for d in dry_body):
        raise st.bad_request("json: cannot unmarshal into Go struct field DeleteOptions.dryRun of type []string")
    dry = "All" in q.getall("dryRun", []) or "All" in dry_body
    uid, rv = pre.get("uid"), pre.get("resourceVersion")
    policy = q.get("propagationPolicy") or body.get("propagationPolicy")
    orphan = q.get("orphanDependents") or body.get("orphanDependents")
    if policy is not None and orphan is not None:
        raise st.invalid("DeleteOptions", "", [st.field_invalid("propagationPolicy", policy, "orphanDependents and "
                                                                "deletionPropagation cannot be both set")],
                         "meta.k8s.io")
    if policy is not None and policy not in ("Foreground", "Background", "Orphan"):
        raise st.invalid("DeleteOptions", "", [st.field_not_supported("propagationPolicy", policy, (
            "Foreground", "Background", "Orphan", "nil"))], "meta.k8s.io")
    if orphan is not None:
        policy = "Orphan" if orphan in (True, *TRUE) else "Background"
    return DeleteOptions(grace_period=grace, uid=None if uid is None else str(uid),
                         resource_version=None if rv is None else str(rv), dry_run=dry, propagation=policy)


def sort_key(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace") or "", meta["name"]


def encode_continue(rv: int, key: tuple[str, str]) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": "/".join(key)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str) -> tuple[str, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        ns, _, name = str(data["start"]).partition("/")
        return ns, name
    except (ValueError, KeyError, TypeError):
        raise st.bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                             "(version meta.k8s.io/v1)") from None
