"""The HTTP face of the API server: kube-apiserver's URL layout, verbs, content types and responses.

Routes ``/api/v1/[watch/][namespaces/<ns>/]<plural>[/<name>[/<subresource>]]`` plus discovery
(``/api``, ``/api/v1``, ``/apis``, ``/version``), ``/openapi/v3`` and health checks. Request bodies may be
JSON or YAML; responses are JSON, or a ``meta.k8s.io/v1`` Table when the Accept header asks for one
(kubectl get). The verbs themselves are in ``handlers``; watches in ``watch``; logs in ``podlogs``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from mockgpu.control.apiserver import discovery, openapi, protobuf
from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.auth import MAX_BODY_BYTES, guard
from mockgpu.control.apiserver.discovery import RESOURCES, ResourceInfo
from mockgpu.control.apiserver.handlers import DeleteOptions, ResourceAPI
from mockgpu.control.apiserver.podlogs import serve_log
from mockgpu.control.apiserver.store import Obj, Store
from mockgpu.control.apiserver.watch import WatchHub, serve_watch

_NOT_FOUND = "the server could not find the requested resource"
_JSON = "application/json"
_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json")


def not_found_path() -> st.StatusError:
    err = st.not_found("", "")
    err.status.update(message=_NOT_FOUND, details={})
    return err


@dataclass(frozen=True)
class Target:
    """What a resource URL names."""

    info: ResourceInfo
    namespace: str | None  # None: all namespaces, or a cluster-scoped resource
    name: str | None
    sub: str | None
    watch: bool  # the legacy /watch/ prefix


def parse_path(parts: list[str]) -> Target:
    """``parts`` after ``/api/v1``; a 404 Status for anything that is not a served resource."""
    watch = bool(parts) and parts[0] == "watch"
    if watch:
        parts = parts[1:]
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] in RESOURCES and RESOURCES[parts[2]].namespaced:
        ns, rest = parts[1], parts[2:]
    else:
        ns, rest = None, parts
    if not rest or rest[0] not in RESOURCES or len(rest) > 3 or any(p == "" for p in parts):
        raise not_found_path()
    info = RESOURCES[rest[0]]
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and sub not in {s.name for s in info.subresources}:
        raise not_found_path()
    if info.plural == "namespaces" and name is not None:
        ns = None
    return Target(info, ns, name, sub, watch)


def encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def json_response(obj: Any, status: int = 200, content_type: str = _JSON) -> web.Response:
    return web.Response(body=encode(obj), status=status, content_type=content_type)


def wants_table(accept: str) -> str | None:
    """The Table version asked for by the Accept header (kubectl get), or None for plain JSON."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params:
            return "v1" if "v=v1" in params else "v1beta1"
        if part.split(";")[0].strip() in (_JSON, "*/*", "application/yaml"):
            return None
    return None


def decode_body(raw: bytes, content_type: str) -> Any:
    """JSON or YAML request body; 400 with the parser's message when malformed, 415 for other formats."""
    ctype = content_type.split(";")[0].strip().lower() or _JSON
    if ctype == protobuf.CONTENT_TYPE:
        return protobuf.decode(raw)
    if ctype in ("application/yaml", "application/apply-patch+yaml", "text/yaml"):
        try:
            return yaml.safe_load(raw.decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise st.bad_request(f"error converting YAML to JSON: {exc}") from None
    if ctype not in (_JSON, *_PATCH_TYPES):
        raise st.unsupported_media_type(content_type)
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise st.bad_request(f"couldn't get version/kind; json parse error: {exc}") from None


TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})  # Go's strconv.ParseBool


def _int_param(q: Any, name: str) -> int | None:
    value = q.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise st.bad_request(f'invalid value for {name}: "{value}"') from None


class APIApp:
    """The aiohttp application over one store."""

    def __init__(self, store: Store, state_dir: Path, token: str, *, bookmark_interval: float = 5.0) -> None:
        self.store = store
        self.state_dir = Path(state_dir)
        self.hub = WatchHub(store)
        self.api = ResourceAPI(store)
        self.bookmark_interval = bookmark_interval
        self.address = "127.0.0.1:0"
        self.app = web.Application(middlewares=[guard(token)], client_max_size=MAX_BODY_BYTES)
        self.app.router.add_route("*", "/{tail:.*}", self.dispatch)

    # ---- routing -----------------------------------------------------------------------------------------

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        accept = request.headers.get("Accept", "")
        if request.method == "GET":
            simple = self._simple_get(path, accept)
            if simple is not None:
                return simple
        if path.startswith("/api/v1/"):
            return await self._resource(request, parse_path(path[len("/api/v1/"):].split("/")))
        raise not_found_path()

    def _simple_get(self, path: str, accept: str) -> web.StreamResponse | None:
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok")
        if path == "/version":
            return json_response(discovery.version_info())
        if path == "/api":
            if discovery.wants_aggregated(accept):
                return json_response(discovery.aggregated_core_discovery(),
                                     content_type=discovery.AGGREGATED_CONTENT_TYPE)
            return json_response(discovery.api_versions(self.address))
        if path == "/api/v1":
            return json_response(discovery.api_resource_list_v1())
        if path == "/apis":
            if discovery.wants_aggregated(accept):
                return json_response(discovery.aggregated_group_discovery(),
                                     content_type=discovery.AGGREGATED_CONTENT_TYPE)
            return json_response(discovery.api_group_list())
        if path == "/openapi/v3":
            return json_response(openapi.openapi_v3_root())
        if path == "/openapi/v3/api/v1":
            return json_response(openapi.openapi_v3_core())
        return None

    async def _resource(self, request: web.Request, t: Target) -> web.StreamResponse:
        method, q = request.method, request.query
        verb = _verb(method, t, q)
        allowed = {s.name: s.verbs for s in t.info.subresources}.get(t.sub or "", t.info.verbs) if t.sub \
            else t.info.verbs
        if verb not in allowed and not (t.sub == "log" and verb == "get"):
            raise st.method_not_allowed(method, t.info.kind)
        if t.info.namespaced and t.namespace is None and verb not in ("list", "watch"):
            raise not_found_path()
        ns = t.namespace or ""
        if verb == "watch":
            return await serve_watch(request, self, t.info, t.namespace, t.name)
        if verb == "list":
            return self._list(request, t.info, t.namespace)
        if verb == "get":
            obj = self.api.get(t.info, ns, t.name or "")
            if t.sub == "log":
                return await serve_log(request, self.state_dir, obj,
                                       lambda: self.store.get("pods", ns, t.name or ""))
            return self._object_response(request, t.info, obj)
        body = await self._body(request) if method in ("POST", "PUT", "PATCH") else None
        dry_run = "All" in q.getall("dryRun", [])
        strict = q.get("fieldValidation") == "Strict"
        if verb == "create":
            return await self._create(request, t, body, dry_run, strict)
        if verb in ("update", "patch"):
            name = t.name or ""
            if verb == "update":
                if not isinstance(body, dict):
                    raise st.bad_request("the object provided is unrecognized (must be an object)")
                obj = self.api.update(t.info, ns, name, body, sub=t.sub, dry_run=dry_run, strict=strict)
            else:
                obj = self._patch(request, t, body, dry_run, strict)
            return self._object_response(request, t.info, obj)
        if verb == "delete":
            return await self._delete(request, t)
        if verb == "deletecollection":
            return await self._delete_collection(request, t)
        raise st.method_not_allowed(method, t.info.kind)

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        if len(raw) > MAX_BODY_BYTES:
            raise st.too_large()
        return decode_body(raw, request.headers.get("Content-Type", _JSON))

    # ---- verbs -------------------------------------------------------------------------------------------

    async def _create(self, request: web.Request, t: Target, body: Any, dry_run: bool, strict: bool) -> web.Response:
        ns = t.namespace or ""
        if t.sub in ("binding", "eviction") or t.info.plural == "bindings":
            if not isinstance(body, dict):
                raise st.bad_request("the object provided is unrecognized (must be an object)")
            name = t.name if t.sub else (body.get("metadata") or {}).get("name", "")
            if t.sub == "eviction":
                opts = _delete_options(request.query, body.get("deleteOptions") or {})
                self.api.delete(RESOURCES["pods"], ns, name, opts)
            else:
                self.api.bind(ns, name, body)
            return json_response(st.success_status(), 201)
        if t.name is not None:
            raise st.method_not_allowed("POST", t.info.kind)
        if not isinstance(body, dict):
            raise st.bad_request("the object provided is unrecognized (must be an object)")
        obj = self.api.create(t.info, ns, body, dry_run=dry_run, strict=strict)
        return self._object_response(request, t.info, obj, 201)

    def _patch(self, request: web.Request, t: Target, body: Any, dry_run: bool, strict: bool) -> Obj:
        from mockgpu.control.apiserver.patch import apply_patch

        ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype not in _PATCH_TYPES:
            raise st.unsupported_media_type(ctype, accepted=_PATCH_TYPES)
        ns, name = t.namespace or "", t.name or ""
        current = self.api.get(t.info, ns, name)
        patched = apply_patch(current, body, ctype)
        return self.api.patched(t.info, ns, name, patched, sub=t.sub, dry_run=dry_run, strict=strict)

    async def _delete(self, request: web.Request, t: Target) -> web.Response:
        raw = await request.read()
        body = decode_body(raw, request.headers.get("Content-Type", _JSON)) if raw.strip() else {}
        opts = _delete_options(request.query, body if isinstance(body, dict) else {})
        obj, removed = self.api.delete(t.info, t.namespace or "", t.name or "", opts)
        if t.info.plural in ("pods", "namespaces") or not removed:
            return json_response(obj)
        meta = obj["metadata"]
        return json_response(st.success_status({"name": meta["name"], "kind": t.info.plural, "uid": meta.get("uid")}))

    async def _delete_collection(self, request: web.Request, t: Target) -> web.Response:
        raw = await request.read()
        body = decode_body(raw, request.headers.get("Content-Type", _JSON)) if raw.strip() else {}
        opts = _delete_options(request.query, body if isinstance(body, dict) else {})
        for obj in list(self.select(request.query, t.info, t.namespace)):
            meta = obj["metadata"]
            self.api.delete(t.info, meta.get("namespace", ""), meta["name"], opts)
        return json_response(st.success_status())

    # ---- reads -------------------------------------------------------------------------------------------

    def matcher(self, q: Any, info: ResourceInfo) -> Any:
        """A predicate for the request's labelSelector and fieldSelector (400 when malformed)."""
        from mockgpu.control.apiserver.selectors import parse_field_selector, parse_label_selector

        labels = parse_label_selector(q.get("labelSelector", ""))
        fields = parse_field_selector(q.get("fieldSelector", ""), info.kind)

        def matches(obj: Obj) -> bool:
            return labels.matches(obj["metadata"].get("labels") or {}) and fields.matches(obj)

        return matches

    def select(self, q: Any, info: ResourceInfo, ns: str | None) -> list[Obj]:
        matches = self.matcher(q, info)
        return [o for o in self.store.list(info.plural, ns) if matches(o)]

    def _list(self, request: web.Request, info: ResourceInfo, ns: str | None) -> web.Response:
        q = request.query
        rv = self._check_list_rv(q)
        items = self.select(q, info, ns)
        limit = _int_param(q, "limit")
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        token = q.get("continue")
        if token:
            start = _decode_continue(token)
            items = [o for o in items if _sort_key(o) > start]
        if limit and limit > 0 and len(items) > limit:
            rest = len(items) - limit
            items = items[:limit]
            meta["continue"] = _encode_continue(rv, _sort_key(items[-1]))
            meta["remainingItemCount"] = rest
        table = wants_table(request.headers.get("Accept", ""))
        if table:
            out = self.table(info, items, q, table)
            out.setdefault("metadata", {}).update(meta)
            return json_response(out)
        return json_response({"kind": info.list_kind, "apiVersion": info.api_version, "metadata": meta,
                              "items": items})

    def _check_list_rv(self, q: Any) -> int:
        """List semantics of resourceVersion: unset/"0" → now; NotOlderThan a future version → 504;
        Exact → only the current version can be served (older snapshots are not kept)."""
        rv = self.store.rv
        given = q.get("resourceVersion", "")
        if given in ("", "0"):
            return rv
        try:
            wanted = int(given)
        except ValueError:
            raise st.bad_request(f'invalid resource version "{given}"') from None
        if wanted > rv:
            raise st.server_timeout(f"Too large resource version: {wanted}, current: {rv}")
        if q.get("resourceVersionMatch") == "Exact" and wanted != rv:
            raise st.too_old_resource_version(wanted, rv)
        return rv

    def table(self, info: ResourceInfo, items: list[Obj], q: Any, version: str = "v1") -> dict[str, Any]:
        from mockgpu.control.apiserver.tables import to_table

        out = to_table(info.kind, items, include_object=q.get("includeObject", "Metadata"))
        if version != "v1":
            out["apiVersion"] = f"meta.k8s.io/{version}"
        return out

    def _object_response(self, request: web.Request, info: ResourceInfo, obj: Obj, status: int = 200) -> web.Response:
        table = wants_table(request.headers.get("Accept", ""))
        if table:
            out = self.table(info, [obj], request.query, table)
            out.setdefault("metadata", {})["resourceVersion"] = obj["metadata"].get("resourceVersion", "")
            return json_response(out, status)
        return json_response(obj, status)


def _verb(method: str, t: Target, q: Any) -> str:
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


def _delete_options(q: Any, body: dict[str, Any]) -> DeleteOptions:
    grace = _int_param(q, "gracePeriodSeconds")
    if grace is None and body.get("gracePeriodSeconds") is not None:
        try:
            grace = int(body["gracePeriodSeconds"])
        except (TypeError, ValueError):
            raise st.bad_request("gracePeriodSeconds must be an integer") from None
    pre = body.get("preconditions") if isinstance(body.get("preconditions"), dict) else {}
    dry = "All" in q.getall("dryRun", []) or "All" in (body.get("dryRun") or [])
    return DeleteOptions(grace_period=grace, uid=pre.get("uid"), resource_version=pre.get("resourceVersion"),
                         dry_run=dry)


def _sort_key(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace") or "", meta["name"]


def _encode_continue(rv: int, key: tuple[str, str]) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": "/".join(key)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        ns, _, name = str(data["start"]).partition("/")
        return ns, name
    except (ValueError, KeyError, TypeError):
        raise st.bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                             "(version meta.k8s.io/v1)") from None

