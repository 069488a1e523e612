"""Reading a request the way kube-apiserver does: which resource a URL names, the verb, the body's format,
query parameters (booleans as Go parses them), delete options, Accept negotiation and continue tokens."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from mockgpu.control.apiserver import fieldvalidation, limits, listoptions, names, protobuf, registry
from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.handlers import DeleteOptions
from mockgpu.control.apiserver.registry.kind import Kind
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

    info: Kind
    namespace: str | None  # None: all namespaces, or a cluster-scoped resource
    name: str | None
    sub: str | None
    watch: bool  # the legacy /watch/ prefix


def parse_path(parts: list[str], resources: dict[str, Kind] | None = None) -> Target:
    """``parts`` after ``/api/v1`` (or ``/apis/<group>/<version>`` with that group's ``resources``); a 404
    Status for anything that is not a served resource."""
    resources = (registry.served("v1") or {}) if resources is None else resources
    watch = bool(parts) and parts[0] == "watch"
    if watch:
        parts = parts[1:]
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] in resources and resources[parts[2]].namespaced:
        ns, rest = parts[1], parts[2:]  # '' for /namespaces//<plural>: the caller answers as upstream does
    else:
        ns, rest = None, parts
    if not rest or rest[0] not in resources or len(rest) > 3 or any(p == "" for p in rest):
        raise not_found_path()
    info = resources[rest[0]]
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and sub not in {s.name for s in info.subresources} and sub not in info.connect:
        raise not_found_path()
    if name is not None and names.path_segment_name(name, False):  # '.', '..', '%' (store.go NamespaceKeyFunc)
        raise st.bad_request(f"Name parameter invalid: {json.dumps(name)}: "
                             + ";".join(names.path_segment_name(name, False)))
    return Target(info, ns, name, sub, watch)


def check_namespace_segment(t: Target, verb: str) -> None:
    """A namespace '.' or '..' in the URL: upstream's storage refuses the key it would make with an error it does
    not convert, so the client gets a 500 (``etcd3/store.go`` ``prepareKey``: "invalid key"; on create the
    namer's "invalid resource name")."""
    ns = t.namespace
    if ns not in (".", ".."):
        return
    if verb == "create":
        text = f"invalid resource name {json.dumps(ns)}: [may not be '{ns}']"
        err = st.internal_error(text)
        err.status["details"] = {"causes": [{"message": text}]}
        raise err
    err = st.internal_error("")
    key = f"/{t.info.plural}/{ns}" + (f"/{t.name}" if t.name else "")
    err.status.update(message=f"invalid key: {json.dumps(key)}")
    err.status.pop("reason", None)
    raise err


def encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def json_response(obj: Any, status: int = 200, content_type: str = JSON) -> web.Response:
    """A JSON response, or protobuf for a client that prefers it (``protobuf.negotiate``)."""
    return protobuf.response(obj, status) or web.Response(body=encode(obj), status=status, content_type=content_type)


def wants_table(accept: str) -> str | None:
    """The Table version asked for by the Accept header (kubectl get), or None for plain JSON."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params:
            return "v1" if "v=v1" in params else "v1beta1"
        if part.split(";")[0].strip() in (JSON, "*/*", "application/yaml"):
            return None
    return None


async def read_body(request: web.Request, empty: Any = None, kind: str | None = None) -> Any:
    """The decoded body within ``limits.MAX_BODY_BYTES`` (413 beyond). Large and YAML bodies are decoded on a
    worker thread, so other requests (``/readyz``, watches) are served meanwhile. With ``empty``, an empty
    body decodes to it (DELETE); with ``kind``, a body that does not decode is reported as upstream's
    serializer reports it for that kind."""
    limits.ensure_recursion_headroom()  # again: celpy lowers the limit whenever a CEL environment is made
    raw = await request.read()  # aiohttp stops reading past client_max_size (413 then)
    limits.TRIMMER.note(len(raw))
    if len(raw) > limits.MAX_BODY_BYTES:
        raise limits.too_large()
    if empty is not None and not raw.strip():
        return empty
    ctype = request.headers.get("Content-Type", JSON)
    if len(raw) <= limits.INLINE_DECODE_BYTES and "yaml" not in ctype:
        return decode_body(raw, ctype, kind)
    # to_thread, not run_in_executor: the request's context (its field-validation warnings) goes along
    return await asyncio.to_thread(decode_body, raw, ctype, kind)


#: Go's ``mime`` token and quoted-string, for :func:`media_type`
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_MEDIA_TYPE = re.compile(rf"\s*({_TOKEN}/{_TOKEN})\s*")
_MEDIA_PARAMS = re.compile(rf'(?:\s*;\s*{_TOKEN}\s*=\s*(?:{_TOKEN}|"(?:[^"\\]|\\.)*"))*\s*(?:;\s*)?')


def media_type(content_type: str) -> str | None:
    """The media type of a Content-Type header, lower-cased, as Go's ``mime.ParseMediaType`` reads it; None when
    the header does not parse (no ``type/subtype``, or a malformed parameter list such as ``;;;``: Go's
    ``ErrInvalidMediaParameter``; one trailing ``;`` is allowed), which upstream answers with 415."""
    head, sep, params = content_type.partition(";")
    match = _MEDIA_TYPE.fullmatch(head)
    if match is None or (sep and not _MEDIA_PARAMS.fullmatch(sep + params)):
        return None
    return match.group(1).lower()


#: what a resource endpoint can answer (``runtime.SerializerInfo`` of kube-apiserver's codec factory)
_SERVED_MEDIA = frozenset({JSON, "application/yaml", protobuf.CONTENT_TYPE})
#: ``as=`` targets a resource endpoint converts to (``negotiation.go`` ``acceptMediaTypeOptions``)
_AS_TARGETS = frozenset({"Table", "PartialObjectMetadata", "PartialObjectMetadataList"})


def _acceptable(clause: str, table: bool = True) -> bool:
    kind, *raw = (p.strip() for p in clause.split(";"))
    params = dict(p.split("=", 1) for p in raw if "=" in p)
    kind = kind.lower()
    if params.get("q", "").strip() in ("0", "0.0", "0.00", "0.000"):
        return False
    if kind not in ("*/*", "application/*") and kind not in _SERVED_MEDIA:
        return False
    if params.get("stream", "watch") != "watch":
        return False
    if "as" in params:
        if params["as"] == "Table" and not table:
            return False
        return (params["as"] in _AS_TARGETS and params.get("g") == "meta.k8s.io"
                and params.get("v") in ("v1", "v1beta1"))
    return "g" not in params and "v" not in params


def check_accept(accept: str, table: bool = True) -> None:
    """Content negotiation as upstream's ``NegotiateOutputMediaType``: an empty Accept means JSON; otherwise one
    clause must name a served media type (or a wildcard) with parameters the endpoint understands (``as=Table;
    g=meta.k8s.io;v=v1`` and the like); when none does, 406 NotAcceptable (e.g. ``text/html``,
    ``application/xml``, ``as=Bogus``). ``table``: whether the endpoint converts to a Table at all (upstream's
    ``AllowsMediaTypeTransform``: only a storage with a ``TableConvertor``; the self-reviews have
    none, so ``as=Table`` alone is 406 there)."""
    if accept.strip() and not any(_acceptable(c, table) for c in accept.split(",") if c.strip()):
        raise st.not_acceptable(", ".join(sorted(_SERVED_MEDIA)))


_BOM = b"\xef\xbb\xbf"


def decode_body(raw: bytes, content_type: str, kind: str | None = None) -> Any:
    """JSON or YAML request body; 400 with the parser's message when malformed, 415 for other formats. Bounded
    as upstream bounds it (``limits``: nesting depth, YAML aliases, the size of a YAML body's JSON form). With
    ``kind`` a decoding error reads as ``transformDecodeError`` words it (``handlers/rest.go``).

    Bytes as Go's decoder takes them: invalid UTF-8 inside a JSON string becomes U+FFFD (``encoding/json``),
    a UTF-8 byte-order mark is not JSON (``invalid character 'ï'``), and a YAML body's first document is read
    with unknown tags ignored (goyaml; ``limits.load_yaml``)."""
    parsed = media_type(content_type) if content_type.strip() else JSON
    if parsed is None:
        raise st.unsupported_media_type(content_type)
    ctype = parsed
    if ctype == protobuf.CONTENT_TYPE:
        return _decode_protobuf(raw, kind)
    if ctype in ("application/yaml", "application/apply-patch+yaml", "text/yaml"):
        try:  # as sigs.k8s.io/yaml: timestamps become strings, .inf/.nan cannot be JSON
            return limits.load_yaml(raw.decode("utf-8"), fieldvalidation.note_yaml_duplicates)
        except (yaml.YAMLError, UnicodeDecodeError, ValueError, TypeError, RecursionError) as exc:
            if kind is None:
                raise st.bad_request(f"error converting YAML to JSON: {exc}") from None
            raise unrecognized(kind, _yaml_error(exc), raw) from None
    if ctype not in (JSON, *PATCH_TYPES):
        raise st.unsupported_media_type(content_type)
    try:
        if raw.startswith(_BOM):
            raise ValueError("invalid character 'ï' looking for beginning of value")
        return limits.load_json(raw.decode("utf-8", "replace"), fieldvalidation.object_pairs)
    except (ValueError, UnicodeDecodeError) as exc:
        base = f"couldn't get version/kind; json parse error: {exc}"
        raise (st.bad_request(base) if kind is None else unrecognized(kind, base, raw)) from None
    except st.StatusError as err:  # nested too deep
        if kind is None:
            raise
        raise unrecognized(kind, err.status["message"], raw) from None


def _decode_protobuf(raw: bytes, kind: str | None) -> Any:
    """A protobuf body as upstream's protobuf serializer and the REST handler's ``transformDecodeError`` take it:
    an envelope without kind or version defaults to the URL's; errors are worded as upstream's."""
    info = registry.by_kind(kind) if kind is not None else None
    try:
        return protobuf.decode_object(raw, info.api_version if info is not None else "", kind or "")
    except protobuf.EnvelopeError as exc:
        raise (st.bad_request(str(exc)) if kind is None else unrecognized(kind, str(exc), raw)) from None
    except LookupError as exc:
        got_version, got_kind = exc.args
        error = f'no kind "{got_kind}" is registered for version "{got_version}" in scheme ' \
                f'"{protobuf.PROTOBUF_SCHEME}"'
        if kind is None or not got_kind:
            raise st.bad_request(error) from None
        raise st.bad_request(f'{got_kind} in version "{got_version.rsplit("/", 1)[-1]}" cannot be handled as a '
                             f'{kind}: {error}') from None
    except protobuf.ObjectError as exc:
        error = f'{exc.kind} in version "{exc.api_version.rsplit("/", 1)[-1]}" cannot be handled as a ' \
                f'{kind or exc.kind}: {exc}'
        raise st.bad_request(error) from None


def unrecognized(kind: str, base: str, raw: bytes) -> st.StatusError:
    """upstream ``transformDecodeError`` when the body's kind could not be read: the error and the body's start
    (``summarizeData``: 30 bytes, as text when it starts with '{', else hex)."""
    head = raw[:30]
    summary = head.decode("utf-8", "replace") if raw[:1] == b"{" else head.hex()
    if len(raw) > 30:
        summary += " ..."
    return st.bad_request(f"the object provided is unrecognized (must be of type {kind}): {base} "
                          f"({summary or '<empty>'})")


def _yaml_error(exc: Exception) -> str:
    """A YAML error as goyaml words it: ``yaml: line N: problem``."""
    if isinstance(exc, limits.YAMLLimitError):
        return str(exc)
    mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"yaml: line {mark.line + 1}: {problem}"
    return f"yaml: {exc}"


def _go_type(value: Any) -> str:
    return {bool: "bool", int: "number", float: "number", list: "array", dict: "object", str: "string"}.get(
        type(value), "object")


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
    if t.watch or (method == "GET" and listoptions.go_bool(q.get("watch"))):
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


#: the options object whose ``dryRun`` a verb reads (``k8s.io/apimachinery/pkg/apis/meta/v1/validation``)
_OPTIONS_KIND = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions",
                 "delete": "DeleteOptions", "deletecollection": "DeleteOptions"}
DRY_RUN_ALL = "All"


class _GoJSON:
    """A bad value that upstream's field error prints as JSON (``json.Marshal`` of a slice)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return json.dumps(self.value, separators=(",", ":"))


def dry_run_of(values: list[str], verb: str) -> bool:
    """Whether ``dryRun`` asks for a dry run: ``All`` is the only value (``ValidateDryRun``); anything else is
    a 422 on the verb's options object, e.g. ``CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported
    value: ["bogus"]: supported values: "All"``. A dry run validates, defaults and admits, and persists nothing."""
    if any(v != DRY_RUN_ALL for v in values):
        err = st.invalid(_OPTIONS_KIND.get(verb, "CreateOptions"), "", [st.FieldError(
            "dryRun", "NotSupported", f'supported values: "{DRY_RUN_ALL}"', _GoJSON(values))], "meta.k8s.io")
        err.status["details"].pop("name", None)  # Status details omit an empty name
        raise err
    return bool(values)


def delete_options(q: Any, body: dict[str, Any]) -> DeleteOptions:
    """DeleteOptions from the query and the body; wrong JSON types are 400 as Go's decoder makes them, and so is a
    body of another kind (upstream decodes it with the meta scheme, which knows only the options kinds)."""
    kind = body.get("kind")
    if kind not in (None, "", "DeleteOptions"):
        version = body.get("apiVersion") or "v1"
        raise st.bad_request(f'no kind "{kind}" is registered for version "{version}" in scheme '
                             '"k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:28"')
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
    dry = dry_run_of(q.getall("dryRun", []) or dry_body, "delete")  # the query's dryRun replaces the body's
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


_CONTINUE_VERSION = "meta.k8s.io/v1"
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
#: k8s.io/apiserver/pkg/storage/etcd3/errors.go ``inconsistentContinue``
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list.")


def encode_continue(rv: int, key: tuple[str, str]) -> str:
    """upstream ``EncodeContinue``: unpadded URL-safe base64 of ``{"v", "rv", "start"}`` (the last key served)."""
    raw = json.dumps({"v": _CONTINUE_VERSION, "rv": rv, "start": "/".join(key)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _invalid_continue(detail: str = "") -> st.StatusError:
    return st.bad_request("invalid continue token: continue key is not valid" + (f": {detail}" if detail else ""))


def decode_continue(token: str) -> tuple[tuple[str, str], int]:
    """(the last key served, the list's resourceVersion) from a token, checked as upstream ``DecodeContinue``
    checks it (``k8s.io/apiserver/pkg/storage/continue.go``); a forged or damaged token is a 400."""
    valid = _B64URL.match(token)
    end = valid.end() if valid else 0
    if end < len(token) or len(token) % 4 == 1:  # Go's RawURLEncoding: no padding, no other characters
        raise _invalid_continue(f"illegal base64 data at input byte {min(end, len(token) - 1)}")
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise _invalid_continue(str(exc)) from None
    if not isinstance(data, dict):
        raise _invalid_continue(f"json: cannot unmarshal {_go_type(data)} into Go value of type storage.continueToken")
    # Go leaves a field that is missing or null at its zero value
    version, rv, start = (z if data.get(k) is None else data[k] for k, z in (("v", ""), ("rv", 0), ("start", "")))
    for field, value, want in (("v", version, str), ("rv", rv, int), ("start", start, str)):
        if not isinstance(value, want) or isinstance(value, bool):
            raise _invalid_continue(f"json: cannot unmarshal {_go_type(value)} into Go struct field "
                                    f"continueToken.{field} of type {'int64' if want is int else 'string'}")
    if version != _CONTINUE_VERSION:
        raise _invalid_continue(f"server does not recognize this encoded version {version}".rstrip())
    if rv == 0:
        raise _invalid_continue("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if not start:
        raise _invalid_continue("encoded start key empty (version meta.k8s.io/v1)")
    key = start if start.startswith("/") else "/" + start
    if posixpath.normpath(key) != key or key.startswith("//"):  # path.Clean: no '..', '.', '//' or trailing '/'
        raise _invalid_continue(start)
    ns, _, name = start.partition("/")
    return (ns, name), rv
