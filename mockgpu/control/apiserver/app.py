"""The HTTP face of the API server: kube-apiserver's URL layout, verbs, content types and responses.

Routes ``/api/v1/[watch/][namespaces/<ns>/]<plural>[/<name>[/<subresource>]]``, the same under
``/apis/<group>/<version>`` for the named groups of ``registry``, plus discovery
(``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>[/<version>]``, ``/version``), ``/openapi/v3`` and health
checks. Request bodies may be JSON, YAML or protobuf; responses are JSON, protobuf when the client prefers it
(``protobuf.negotiate``), or a ``meta.k8s.io/v1`` Table when the Accept header asks for one (kubectl get).
Reading requests is ``request``; the verbs are in ``handlers``; watches in ``watch``; logs in ``podlogs``.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from aiohttp import web

from mockgpu.config.featuregates import DEFAULT as DEFAULT_GATES
from mockgpu.config.featuregates import FeatureGates
from mockgpu.control.apiserver import (
    discovery,
    fieldvalidation,
    limits,
    listoptions,
    managedfields,
    openapi,
    protobuf,
    rbacauthz,
    registry,
    workloads,
)
from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.auth import guard
from mockgpu.control.apiserver.handlers import ResourceAPI
from mockgpu.control.apiserver.patch import APPLY_PATCH, apply_patch
from mockgpu.control.apiserver.podlogs import log_options, serve_log
from mockgpu.control.apiserver.registry.core import POD
from mockgpu.control.apiserver.registry.kind import Kind
from mockgpu.control.apiserver.request import (
    INCONSISTENT_CONTINUE,
    JSON,
    PATCH_TYPES,
    Target,
    check_accept,
    check_namespace_segment,
    check_type_meta_types,
    decode_continue,
    delete_options,
    dry_run_of,
    encode,
    encode_continue,
    json_response,
    not_found_path,
    parse_path,
    read_body,
    sort_key,
    verb_of,
    wants_table,
)
from mockgpu.control.apiserver.selectors import field_selector, parse_label_selector
from mockgpu.control.apiserver.store import Obj, Store
from mockgpu.control.apiserver.tables import to_table
from mockgpu.control.apiserver.validation import default_and_validate
from mockgpu.control.apiserver.watch import WatchHub, serve_watch

#: a ``%`` not followed by two hex digits (Go's ``url.unescape``: "invalid URL escape")
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
#: paths kube-apiserver's NonGoRestfulMux serves for any method (the index, /apis, health checks)
_ANY_METHOD = frozenset({"/", "/apis", "/healthz", "/readyz", "/livez"})


class APIApp:
    """The aiohttp application over one store."""

    def __init__(self, store: Store, state_dir: Path, token: str, *, bookmark_interval: float = 5.0,
                 root_ca: str | None = None, gates: FeatureGates = DEFAULT_GATES) -> None:
        limits.ensure_recursion_headroom()
        limits.return_freed_buffers()
        self.store = store
        self.state_dir = Path(state_dir)
        self.hub = WatchHub(store)
        self.gates = gates  # which gated kinds are served, and their fields
        self.api = ResourceAPI(store, root_ca, gates)
        self.bookmark_interval = bookmark_interval
        self.address = "127.0.0.1:0"
        self._openapi: dict[str, bytes] = {}
        self._openapi_lock = asyncio.Lock()
        self.app = web.Application(middlewares=[web.middleware(protobuf.negotiate), guard(token),
                                                fieldvalidation.warnings_middleware],
                                   client_max_size=limits.MAX_BODY_BYTES)
        self.app.router.add_route("*", r"/{tail:[\s\S]*}", self.dispatch)  # any path, newlines (%0a) too

    # ---- routing -----------------------------------------------------------------------------------------

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        if _STRAY_PERCENT.search(request.raw_path.partition("?")[0]):
            # Go's url.ParseRequestURI refuses an escape that is not %XX: net/http answers before any handler
            return web.Response(status=400, text="400 Bad Request", headers={"Connection": "close"})
        path = request.path.rstrip("/") or "/"
        user = self._authorize(request, path)
        accept = request.headers.get("Accept", "")
        # kube-apiserver's non-REST handlers (the index, discovery of /apis and its groups, health checks)
        # answer whatever the method; the REST routes below check theirs
        if request.method == "GET" or path in _ANY_METHOD or (path.startswith("/apis/") and path.count("/") == 2):
            simple = self._simple_get(path, accept)
            if simple is not None:
                return simple
            if path == "/openapi/v3" or path.removeprefix("/openapi/v3/") in map(openapi.document_path,
                                                                                   openapi.documented(self.gates)):
                return await self._openapi_v3(path)
        if path.startswith("/api/v1/"):
            return await self._resource(request, parse_path(path[len("/api/v1/"):].split("/")), user)
        parts = path.split("/")[2:]  # /apis/<group>/<version>/...
        resources = registry.served("/".join(parts[:2]), self.gates) if len(parts) > 2 else None
        if path.startswith("/apis/") and resources:
            return await self._resource(request, parse_path(parts[2:], resources), user)
        raise not_found_path()

    def _authorize(self, request: web.Request, path: str) -> rbacauthz.User:
        """The user the request runs as (the admin, or whom it impersonates), refused with upstream's 403 when
        RBAC does not allow it the request (the admin, in ``system:masters``, is allowed everything)."""
        try:
            user = rbacauthz.impersonated(request.headers, request.headers.items())
        except rbacauthz.ImpersonationError as exc:
            raise st.bad_request(str(exc)) from None
        if not user.privileged:
            attrs = rbacauthz.request_attributes(request.method, path, request.query)
            allowed, reason = rbacauthz.authorize(self.store, user, attrs)
            if not allowed:
                raise rbacauthz.denial(user, attrs, reason)
        return user

    def _simple_get(self, path: str, accept: str) -> web.StreamResponse | None:
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok")
        if path == "/":
            return json_response({"paths": discovery.root_paths(self.gates)})
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
                return json_response(discovery.aggregated_group_discovery(self.gates),
                                     content_type=discovery.AGGREGATED_CONTENT_TYPE)
            return json_response(discovery.api_group_list(gates=self.gates))
        if path.startswith("/apis/"):
            parts = path.split("/")[2:]
            doc = discovery.api_group(parts[0], self.gates) if len(parts) == 1 else \
                discovery.group_resource_list("/".join(parts), self.gates) if len(parts) == 2 else None
            if doc is not None:
                return json_response(doc)
        if path == "/openapi/v2":
            if "proto-openapi.spec.v2" in accept:
                body = protobuf.openapi_v2_document("Kubernetes", discovery.GIT_VERSION)
                return web.Response(body=body, content_type=protobuf.OPENAPI_V2_CONTENT_TYPE)
            return json_response({"swagger": "2.0", "info": {"title": "Kubernetes", "version": discovery.GIT_VERSION},
                                  "paths": {}, "definitions": {}})
        return None

    async def _openapi_v3(self, path: str) -> web.Response:
        """The OpenAPI v3 documents, built once off the event loop (building them imports the official client's
        models, which takes a second; other requests and watches keep being served meanwhile)."""
        async with self._openapi_lock:
            if not self._openapi:
                loop = asyncio.get_running_loop()
                self._openapi = await loop.run_in_executor(None, lambda: {
                    "/openapi/v3": encode(openapi.openapi_v3_root(self.gates)),
                    **{f"/openapi/v3/{openapi.document_path(gv)}": encode(openapi.openapi_v3_document(gv))
                       for gv in openapi.documented(self.gates)}})
        return web.Response(body=self._openapi[path], content_type=JSON)

    async def _resource(self, request: web.Request, t: Target, user: rbacauthz.User = rbacauthz.ADMIN
                        ) -> web.StreamResponse:
        method, q = request.method, request.query
        if t.sub in t.info.connect:
            return self._connect(request, t)
        verb = verb_of(method, t, q)
        if t.namespace == "":  # /namespaces//<plural>: upstream lists every namespace, and refuses the rest
            if verb not in ("list", "watch"):
                raise st.bad_request("Namespace parameter required.")
            t = replace(t, namespace=None)
        if t.sub != "log":  # a log is text/plain whatever the Accept
            check_accept(request.headers.get("Accept", ""), table=t.info.review is None)
        allowed = {s.name: s.verbs for s in t.info.subresources}.get(t.sub or "", t.info.verbs) if t.sub \
            else t.info.verbs
        if verb not in allowed and not (t.sub == "log" and verb == "get"):
            raise st.method_not_allowed(verb, f"{t.info.plural}/{t.sub}" if t.sub else t.info.plural, t.info.group)
        if t.info.namespaced and t.namespace is None and verb not in ("list", "watch"):
            raise not_found_path()
        check_namespace_segment(t, verb)
        ns = t.namespace or ""
        if verb in ("list", "watch", "deletecollection"):
            opts = listoptions.decode(q, verb == "watch")
        if verb == "watch":
            return await serve_watch(request, self, t.info, opts, t.namespace, t.name)
        if verb == "list":
            return self._list(request, t.info, opts, t.namespace)
        if t.sub == "scale":
            return await self._scale(request, t, verb)
        if verb == "get":
            # PodLogOptions are decoded and validated before the pod is looked up (upstream's LogREST.Get)
            log_opts = log_options(q, t.name or "") if t.sub == "log" else None
            obj = self.api.get(t.info, ns, t.name or "")
            if log_opts is not None:
                return await serve_log(request, self.state_dir, obj,
                                       lambda: self.store.get("pods", ns, t.name or ""), log_opts)
            return self._object_response(request, t.info, obj)
        dry_run = dry_run_of(q.getall("dryRun", []), verb)
        strict = verb in ("create", "update", "patch") and fieldvalidation.directive(q, verb) == "Strict"
        kind = None if verb == "patch" else {"binding": "Binding", "eviction": "Eviction"}.get(t.sub or "", t.info.kind)
        # what the route refuses is refused before the body is read, as upstream's router and patch handler do
        if verb == "create" and t.name is not None and t.sub not in ("binding", "eviction"):
            raise st.method_not_allowed("POST", t.info.kind)
        if verb == "patch":
            patch_type = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if patch_type not in SERVED_PATCH_TYPES:
                raise st.unsupported_media_type(patch_type, accepted=SERVED_PATCH_TYPES)
        manager, force = self._manager(request, verb, t, patch_type if verb == "patch" else "")
        if verb == "patch" and patch_type == APPLY_PATCH:
            return await self._apply(request, t, dry_run, strict, manager or "", bool(force), user)
        body = await self._body(request, kind) if method in ("POST", "PUT", "PATCH") else None
        if verb == "create":
            return await self._create(request, t, body, dry_run, strict, user, manager)
        if verb in ("update", "patch"):
            name = t.name or ""
            if verb == "update":
                if not isinstance(body, dict):
                    raise st.bad_request("the object provided is unrecognized (must be an object)")
                new = self._stored_form(t.info, body, strict)
                self._check_event_update(t.info, ns, name, new)
                obj = self.api.update(t.info, ns, name, new, sub=t.sub, dry_run=dry_run, strict=strict,
                                      manager=manager)
            else:
                obj = self._patch(patch_type, t, body, dry_run, strict, manager)
            return self._object_response(request, t.info, obj)
        if verb == "delete":
            return await self._delete(request, t)
        if verb == "deletecollection":
            return await self._delete_collection(request, t)
        raise st.method_not_allowed(method, t.info.kind)

    def _connect(self, request: web.Request, t: Target) -> web.StreamResponse:
        """``pods/exec``, ``attach``, ``portforward`` and ``proxy``: upstream's connect subresources take GET and
        POST (a streaming upgrade) and answer every other method 405. The embedded kubelets serve no streams:
        an existing pod's GET/POST is a 400 as upstream's for a request without an upgrade."""
        if request.method not in ("GET", "POST"):
            raise st.method_not_allowed()
        self.api.get(t.info, t.namespace or "", t.name or "")  # 404 for a pod that does not exist
        raise st.bad_request("Upgrade request required")

    async def _body(self, request: web.Request, kind: str | None) -> Any:
        body = await read_body(request, kind=kind)
        if request.method != "PATCH":
            check_type_meta_types(body)
            if body is None and kind is not None:  # JSON null: Go decodes it into the empty object
                body = {}
        return body

    # ---- verbs -------------------------------------------------------------------------------------------

    async def _create(self, request: web.Request, t: Target, body: Any, dry_run: bool, strict: bool,
                      user: rbacauthz.User = rbacauthz.ADMIN, manager: str | None = None) -> web.Response:
        ns = t.namespace or ""
        if t.sub in ("binding", "eviction") or t.info.route_to is not None:
            if not isinstance(body, dict) or not isinstance(body.get("metadata", {}), dict | None):
                raise st.bad_request("the object provided is unrecognized (must be an object)")
            given = (body.get("metadata") or {}).get("name")
            if t.sub and given not in (None, "", t.name):
                raise st.bad_request(f"name in URL does not match name in {t.sub.capitalize()} object")
            name = t.name if t.sub else given
            if not isinstance(name, str) or not name:
                raise st.bad_request("name is required in the Binding object")
            if t.sub == "eviction":
                options = body.get("deleteOptions") or {}
                if not isinstance(options, dict):
                    raise st.bad_request("json: cannot unmarshal into Go struct field Eviction.deleteOptions of type "
                                         "v1.DeleteOptions")
                if not dry_run:
                    self.api.delete(POD, ns, name, delete_options(request.query, options))
            else:
                binding = default_and_validate("Binding", {**body, "metadata": {**(body.get("metadata") or {}),
                                                                                "name": name}},
                                               namespace=ns, strict=strict)
                if not dry_run:
                    self.api.bind(ns, name, binding)
            return json_response(st.success_status(), 201)
        if t.name is not None:
            raise st.method_not_allowed("POST", t.info.kind)
        if t.info.review is not None:
            return json_response(t.info.review(body, user, self.store), 201)
        if not isinstance(body, dict):
            raise st.bad_request("the object provided is unrecognized (must be an object)")
        if t.info.view is not None:
            errs = t.info.view.validate_create(body)
            if errs:
                meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
                raise st.invalid(t.info.kind, meta.get("name") or meta.get("generateName") or "", errs, t.info.group)
        obj = self.api.create(t.info, ns, self._stored_form(t.info, body, strict), dry_run=dry_run, strict=strict,
                              manager=manager)
        return self._object_response(request, t.info, obj, 201)

    @staticmethod
    def _manager(request: web.Request, verb: str, t: Target, patch_type: str) -> tuple[str | None, bool | None]:
        """(the manager a create/update/patch records, ``force``) after upstream's validation of the options'
        ``fieldManager`` and ``force`` (422); (None, None) for other verbs and subresources that record none."""
        if verb not in ("create", "update", "patch") or t.sub in ("binding", "eviction"):
            return None, None
        q = request.query
        force = _go_bool(q["force"]) if "force" in q else None
        field_manager = q.get("fieldManager", "")
        managedfields.validate_options(field_manager, _OPTIONS_KIND[verb], patch_type == APPLY_PATCH, force)
        return managedfields.manager_of(field_manager, request.headers.get("User-Agent", "")), force

    async def _apply(self, request: web.Request, t: Target, dry_run: bool, strict: bool, manager: str,
                     force: bool, user: rbacauthz.User = rbacauthz.ADMIN) -> web.Response:
        """Server-side apply (``application/apply-patch+yaml``): create the object when it is absent (201; the user
        must also be allowed to create it, as upstream's ``withAuthorization``), else merge the applied
        configuration into it (``managedfields.apply``), then store it as any patch is."""
        info, ns, name = t.info, t.namespace or "", t.name or ""
        try:
            config = await read_body(request)
        except st.StatusError as err:  # validateAndTranscodePatch: yaml.ToJSON's error
            raise st.bad_request(f"error encoding patch: {err.status['message']}") from None
        if config is None:
            config = {}
        if not isinstance(config, dict):
            raise st.bad_request(f"error decoding patch: json: cannot unmarshal {_json_type(config)} into Go value "
                                 "of type map[string]interface {}")
        current = self.store.get(info.plural, ns if info.namespaced else "", name)
        scope = managedfields.Scope(info.api_version, info.kind, t.sub or "", info.has("status"))
        new = managedfields.apply(scope, self.present(info, current) if current else None, config, manager, force)
        meta = new.setdefault("metadata", {})
        if info.namespaced:  # EnsureObjectNamespaceMatchesRequestNamespace
            if meta.get("namespace") not in (None, "", ns):
                raise st.bad_request("the namespace of the provided object does not match the namespace sent on "
                                     "the request")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if meta.get("name", "") != name:  # checkName
            raise st.bad_request(f"the name of the object ({meta.get('name', '')}) does not match the name on the "
                                 f"URL ({name})")
        if current is None:
            if t.sub:
                raise st.not_found(info.plural, name, info.group)
            if meta.get("uid"):  # patcher.applyPatch: a uid names an object that must exist
                raise st.conflict(info.plural, name, info.group, f"uid mismatch: the provided object specified uid "
                                                                 f"{meta['uid']}, and no existing object was found")
            if not user.privileged:
                attrs = replace(rbacauthz.request_attributes(request.method, request.path, request.query),
                                verb="create")
                allowed, reason = rbacauthz.authorize(self.store, user, attrs)
                if not allowed:
                    raise rbacauthz.denial(user, attrs, reason)
            obj = self.api.create(info, ns, self._stored_form(info, new, strict), dry_run=dry_run, strict=strict)
            return self._object_response(request, info, obj, 201)
        uid = meta.get("uid")
        if uid and uid != current["metadata"].get("uid"):  # ValidateObjectMetaUpdate, on the applied object
            raise st.invalid(info.kind, name, [st.field_invalid("metadata.uid", uid, "field is immutable")],
                             info.group)
        new = self._stored_form(info, new, strict)
        self._check_event_update(info, ns, name, new)
        obj = self.api.patched(info, ns, name, new, sub=t.sub, dry_run=dry_run, strict=strict)
        return self._object_response(request, info, obj)

    def _patch(self, ctype: str, t: Target, body: Any, dry_run: bool, strict: bool,
               manager: str | None = None) -> Obj:
        """``ctype``: one of ``PATCH_TYPES`` (checked by ``_resource`` before the body is read)."""
        ns, name = t.namespace or "", t.name or ""
        current = self.present(t.info, self.api.get(t.info, ns, name))
        patched = apply_patch(current, body, ctype)
        check_type_meta_types(patched)
        if isinstance(patched, dict) and patched.get("kind", current.get("kind")) != current.get("kind"):
            if ctype == "application/strategic-merge-patch+json":
                # upstream converts the patched map into the typed object, whose kind the URL fixed: ignored
                patched["kind"] = current.get("kind")
            else:  # the patched JSON is decoded into the URL's type: a 422 on the patch (patch.go)
                version = "/".join(filter(None, (t.info.group, t.info.version)))
                raise fieldvalidation.patch_invalid(patched, body, ctype, (
                    f'{patched["kind"]} in version "{version}" cannot be handled as a {t.info.kind}'))
        fieldvalidation.check_patched(t.info.group, t.info.kind, patched, body, ctype, strict)
        new = self._stored_form(t.info, patched, strict)
        self._check_event_update(t.info, ns, name, new)
        return self.api.patched(t.info, ns, name, new, sub=t.sub, dry_run=dry_run, strict=strict, manager=manager)

    async def _scale(self, request: web.Request, t: Target, verb: str) -> web.Response:
        """``<workload>/<name>/scale`` (Deployments, ReplicaSets, StatefulSets, ReplicationControllers): an
        autoscaling/v1 Scale over ``spec.replicas``."""
        ns, name = t.namespace or "", t.name or ""
        current = self.api.get(t.info, ns, name)
        if verb == "get":
            return json_response(workloads.to_scale(current, t.info.label_selector))
        dry_run = dry_run_of(request.query.getall("dryRun", []), verb)
        body = await self._body(request, None if verb == "patch" else "Scale")
        if verb == "patch":
            ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if ctype not in PATCH_TYPES:
                raise st.unsupported_media_type(ctype, accepted=PATCH_TYPES)
            body = apply_patch(workloads.to_scale(current, t.info.label_selector), body, ctype)
        if not isinstance(body, dict) or not isinstance(body.get("metadata") or {}, dict) \
                or not isinstance(body.get("spec") or {}, dict):
            raise st.bad_request("the object provided is unrecognized (must be of type Scale)")
        replicas = (body.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise st.bad_request("Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal "
                                 f"{_json_type(replicas)} into Go struct field ScaleSpec.spec.replicas of type int32")
        errs = workloads.scale_errors(body)
        if errs:
            raise st.invalid("Scale", name, errs, "autoscaling")
        rv = (body.get("metadata") or {}).get("resourceVersion")
        if rv not in (None, "") and str(rv) != current["metadata"]["resourceVersion"]:
            raise st.conflict(t.info.plural, name, t.info.group)
        new = {**current, "spec": {**current.get("spec", {}), "replicas": replicas}}
        manager, _ = self._manager(request, verb, t, "")
        if manager is not None:
            entries = managedfields.scale_update(t.info.api_version, current["metadata"].get("managedFields"),
                                                 current.get("spec", {}).get("replicas"), replicas, manager)
            new["metadata"] = {k: v for k, v in current["metadata"].items() if k != "managedFields"}
            if entries:
                new["metadata"]["managedFields"] = entries
        obj = self.api.update(t.info, ns, name, new, dry_run=dry_run)
        return json_response(workloads.to_scale(obj, t.info.label_selector))

    # ---- views: a kind served as another group's conversion of a stored kind (events.k8s.io Events) ------------

    @staticmethod
    def present(info: Kind, obj: Obj) -> Obj:
        """An object as ``info``'s group serves it (a view converts the stored object)."""
        return info.view.from_stored(obj) if info.view is not None else obj

    def _check_event_update(self, info: Kind, ns: str, name: str, new: Any) -> None:
        if info.view is not None and isinstance(new, dict):
            errs = info.view.validate_update(new, self.api.get(info, ns, name))
            if errs:
                raise st.invalid(info.kind, name, errs, info.group)

    @staticmethod
    def _stored_form(info: Kind, body: Any, strict: bool) -> Any:
        if info.view is None or not isinstance(body, dict):
            return body
        fieldvalidation.check_body(info.group, info.kind, body, strict)
        return info.view.to_stored(body)

    async def _delete(self, request: web.Request, t: Target) -> web.Response:
        body = await read_body(request, empty={})
        opts = delete_options(request.query, body if isinstance(body, dict) else {})
        obj, removed = self.api.delete(t.info, t.namespace or "", t.name or "", opts)
        if t.info.returns_deleted or not removed:
            return json_response(self.present(t.info, obj))
        meta = obj["metadata"]
        return json_response(st.success_status({"name": meta["name"], "kind": t.info.plural, "uid": meta.get("uid")}))

    async def _delete_collection(self, request: web.Request, t: Target) -> web.Response:
        body = await read_body(request, empty={})
        opts = delete_options(request.query, body if isinstance(body, dict) else {})
        for obj in list(self.select(request.query, t.info, t.namespace)):
            meta = obj["metadata"]
            try:
                self.api.delete(t.info, meta.get("namespace", ""), meta["name"], opts)
            except st.StatusError as err:
                if err.code != 404:  # deleted meanwhile: gone is what was asked (as upstream's DeleteCollection)
                    raise
            # one delete (one committed transaction) at a time, then the other requests get their turn: a
            # large collection must not hold /readyz and every other client (upstream deletes in workers)
            await asyncio.sleep(0)
        return json_response(st.success_status())

    # ---- reads -------------------------------------------------------------------------------------------

    def matcher(self, q: Any, info: Kind) -> Any:
        """A predicate for the request's labelSelector and fieldSelector (400 when malformed)."""
        labels = parse_label_selector(q.get("labelSelector", ""))
        text = q.get("fieldSelector", "")
        if info.view is not None:
            text = info.view.field_selector(text)
        fields = field_selector(text, info.field_labels)

        def matches(obj: Obj) -> bool:
            return labels.matches(obj["metadata"].get("labels") or {}) and fields.matches(obj)

        return matches

    def select(self, q: Any, info: Kind, ns: str | None) -> list[Obj]:
        matches = self.matcher(q, info)
        return [o for o in self.store.list(info.plural, ns) if matches(o)]

    def _list(self, request: web.Request, info: Kind, opts: listoptions.ListOptions,
              ns: str | None) -> web.Response:
        q = request.query
        rv = self._check_list_rv(q)
        limit = opts.limit
        token = q.get("continue")
        snapshot = None
        if token:
            start, token_rv = decode_continue(token)
            self._check_continue_rv(q, token_rv, start)
            snapshot = self.store.list_at(info.plural, ns, token_rv) if token_rv > 0 else None
            if snapshot is not None:  # every page at the first page's version, as etcd serves them
                rv = token_rv
        matches = self.matcher(q, info)
        items = [o for o in (snapshot if snapshot is not None else self.store.list(info.plural, ns)) if matches(o)]
        if token:
            items = [o for o in items if sort_key(o) > start]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if limit and limit > 0 and len(items) > limit:
            rest = len(items) - limit
            items = items[:limit]
            meta["continue"] = encode_continue(rv, sort_key(items[-1]))
            if not q.get("labelSelector") and not q.get("fieldSelector"):  # upstream counts only then
                meta["remainingItemCount"] = rest
        table = wants_table(request.headers.get("Accept", ""))
        if table:
            out = self.table(info, items, q, table)
            out.setdefault("metadata", {}).update(meta)
            return json_response(out)
        return json_response({"kind": info.list_kind, "apiVersion": info.api_version, "metadata": meta,
                              "items": [_without_type_meta(self.present(info, o)) for o in items]})

    def _check_continue_rv(self, q: Any, token_rv: int, start: tuple[str, str]) -> None:
        """A continued list is served at the version of its first page, as upstream (``Store.list_at``; from the
        current objects where the watch history no longer reaches back that far); versions that cannot be served
        at all are refused: newer than the store (504, as the watch cache after its wait), compacted in etcd's
        sense (``list_compacted``: older than kube-apiserver's last compaction interval; 410 with a token to go
        on)."""
        if q.get("resourceVersion") not in (None, "", "0"):
            raise st.bad_request("specifying resource version is not allowed when using continue")
        if token_rv > self.store.rv:
            raise st.too_large_resource_version(token_rv, self.store.rv)
        if 0 < token_rv <= self.store.list_compacted:
            err = st.gone(INCONSISTENT_CONTINUE)
            err.status["metadata"] = {"continue": encode_continue(-1, start)}
            raise err

    def _check_list_rv(self, q: Any) -> int:
        """List semantics of resourceVersion: unset/"0" → now; NotOlderThan a future version → 504;
        Exact → only the current version can be served (older snapshots are not kept)."""
        rv = self.store.rv
        given = q.get("resourceVersion", "")
        if given in ("", "0"):
            return rv
        try:
            wanted = int(given)
            if wanted < 0:
                raise ValueError(given)
        except ValueError:
            raise st.bad_request(f'invalid resource version "{given}"') from None
        if wanted > rv:
            raise st.too_large_resource_version(wanted, rv)
        if q.get("resourceVersionMatch") == "Exact" and wanted != rv:
            raise st.too_old_resource_version(wanted, rv)
        return rv

    def table(self, info: Kind, items: list[Obj], q: Any, version: str = "v1") -> dict[str, Any]:
        # printers read the stored form (one Event printer serves both groups, as upstream's internal type does)
        out = to_table(info.plural, items, include_object=q.get("includeObject", "Metadata"))
        if info.view is not None and q.get("includeObject") == "Object":
            for row, obj in zip(out["rows"], items, strict=True):
                row["object"] = self.present(info, obj)
        if version != "v1":
            out["apiVersion"] = f"meta.k8s.io/{version}"
        return out

    def _object_response(self, request: web.Request, info: Kind, obj: Obj, status: int = 200) -> web.Response:
        table = wants_table(request.headers.get("Accept", ""))
        if table:
            out = self.table(info, [obj], request.query, table)
            out.setdefault("metadata", {})["resourceVersion"] = obj["metadata"].get("resourceVersion", "")
            return json_response(out, status)
        return json_response(self.present(info, obj), status)


#: the patch types kube-apiserver accepts on a resource (installer.go; no apply-patch+cbor: CBOR is not served)
SERVED_PATCH_TYPES = (*PATCH_TYPES, APPLY_PATCH)
_OPTIONS_KIND = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}


def _go_bool(value: str) -> bool:
    """A boolean query parameter as Go's ``strconv.ParseBool`` reads it; 400 otherwise."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise st.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def _json_type(value: object) -> str:
    return {bool: "bool", str: "string", list: "array", dict: "object", float: "number"}.get(type(value), "value")


def _without_type_meta(obj: Obj) -> Obj:
    """List items as kube-apiserver encodes them: the list carries kind and apiVersion, its items do not."""
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
