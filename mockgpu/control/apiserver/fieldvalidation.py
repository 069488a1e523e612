"""Field validation of written objects as kube-apiserver's decoder does it: wrong types, unknown and duplicate fields.

Upstream decodes a request body into the kind's Go struct (sigs.k8s.io/json, case-sensitive). A value of the wrong
JSON type is an error worded by ``encoding/json`` (``json: cannot unmarshal string into Go struct field
PodSpec.spec.volumes of type v1.Volume``): 400 on create and update, 422 ``patch: Invalid value`` on a patch's
result. A field the struct lacks is dropped and a field given twice keeps its last value; what the server says
about them is the request's ``fieldValidation`` (k8s.io/apiserver ``pkg/endpoints/handlers/{create,update,patch,
rest}.go``): ``Warn`` (the default, what kubectl and client libraries get when they send nothing) answers with one
``Warning: 299 - "unknown field \\"spec.foo\\""`` header per field, ``Strict`` fails the write (``strict decoding
error: unknown field "spec.foo"``), ``Ignore`` says nothing; any other value is 422 on the request's
``CreateOptions``/``UpdateOptions``/``PatchOptions`` (apimachinery ``ValidateFieldValidation``), before the body is
decoded.

Each kind's schema is compiled once (then cached) from the official Python client's models: ``openapi_types`` and
``attribute_map`` give every field's JSON name and shape (``List[V1Volume]``, ``Dict[str, str]``, ``int``,
``bool``, ``float``, ``datetime``, ``object``), and ``fieldformats.json`` (generated from upstream's OpenAPI by
``scripts/gen-field-formats``) what the models lose: int32 vs int64, ``resource.Quantity`` (a string or a number),
``intstr.IntOrString`` (an integer or a string) and ``metav1.MicroTime``. Every kind the server stores has a model
in the client the project requires (``kubernetes>=34``); a kind whose model the installed client lacks is not
checked (:func:`schema_of` returns None). Not stored, so not checked here: the access reviews
(``access.answer`` reads them), ``Scale`` and ``Eviction`` bodies (``app`` checks the fields it reads).

Simplified against upstream: free-form fields (``object`` that is not an IntOrString: ``RawExtension``, opaque
driver parameters) are stored as sent, unchecked; ``[]byte`` fields must be standard base64 as Go decodes it;
Go names a number it could not fit by its literal text, here by Python's (``1e3`` reads as ``1000.0``); duplicate
keys are found in JSON bodies (YAML ones keep the last value silently); the strict errors come in document order,
as Go's decoder meets the keys, but a field given twice is checked once, with the value kept (its last). Protobuf bodies
(``protobuf.py``) cannot carry unknown fields or wrongly typed values: the wire format names fields by number,
and numbers the schema does not know are skipped without a word, as upstream's protobuf decoder does.
"""

from __future__ import annotations

import base64
import contextvars
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from mockgpu.apimachinery.quantity import QuantityError, parse_quantity
from mockgpu.control.apiserver import microtime, registry
from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.auth import status_response
from mockgpu.control.apiserver.gojson import json_kind
from mockgpu.control.apiserver.schemas import schema_name

DIRECTIVES = ("Ignore", "Strict", "Warn")
_SMP = "application/strategic-merge-patch+json"
_OPTIONS = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}
QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_FORMATS: dict[str, dict[str, str]] = json.loads(
    (Path(__file__).with_name("fieldformats.json")).read_text())["formats"]


# ---- the request's directive and its warnings ------------------------------------------------------------------

@dataclass
class _Request:
    directive: str = "Warn"
    warnings: list[str] = field(default_factory=list)
    body_problems: list[str] = field(default_factory=list)  # found while decoding the body (YAML duplicates)


_CURRENT: contextvars.ContextVar[_Request | None] = contextvars.ContextVar("fieldvalidation", default=None)


def directive(query: Any, verb: str) -> str:
    """The request's ``fieldValidation`` (``Warn`` when absent), remembered for :func:`warn`; 422 on the
    request's options for any other value, as upstream validates them before decoding the body."""
    value = query.get("fieldValidation", "")
    if value not in ("", *DIRECTIVES):
        raise st.invalid(_OPTIONS.get(verb, "CreateOptions"), "", [
            st.field_not_supported("fieldValidation", value, ("", *DIRECTIVES))], "meta.k8s.io")
    current = _CURRENT.get()
    if current is not None:
        current.directive = value or "Warn"
    return value or "Warn"


def warn(problems: list[str]) -> None:
    """Strict decoding problems of a write that goes ahead: a ``Warning`` each when the request said ``Warn``
    (a YAML error's lines one each, as upstream's ``parseYAMLWarnings``)."""
    current = _CURRENT.get()
    if current is not None and current.directive == "Warn":
        for problem in problems:
            if problem.startswith(_YAML_PREFIX):
                current.warnings.extend(line.strip() for line in problem[len(_YAML_PREFIX):].split("\n"))
            else:
                current.warnings.append(problem)


def body_problems() -> list[str]:
    """The problems :func:`note_yaml_duplicates` found in the request's body, once (the first check takes them)."""
    current = _CURRENT.get()
    if current is None or not current.body_problems:
        return []
    taken, current.body_problems = current.body_problems, []
    return taken


@web.middleware
async def warnings_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Collect each request's warnings and send them as ``Warning`` headers, as upstream's ``warning.AddWarning``
    (code 299, agent ``-``, the text quoted as Go's ``strconv.Quote``)."""
    current = _Request()
    token = _CURRENT.set(current)
    try:
        try:
            response = await handler(request)
        except st.StatusError as err:  # a write refused after a warning still carries it, as upstream's
            if not current.warnings:
                raise
            response = status_response(err)
        if not response.prepared:
            for text in dict.fromkeys(current.warnings):  # upstream sends each text once
                response.headers.add("Warning", f"299 - {json.dumps(text)}")
        return response
    finally:
        _CURRENT.reset(token)


# ---- duplicate keys in JSON bodies ------------------------------------------------------------------------------

class _Duplicated(dict):  # type: ignore[type-arg]
    """A JSON object that named some keys twice (the last value is kept, as Go's decoder does); ``order`` is
    every key as the document gives it, repeats included (the strict errors follow it)."""

    __slots__ = ("duplicates", "order")


def object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook``: a plain dict, or one that remembers its duplicated keys."""
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    marked = _Duplicated(out)
    seen: set[str] = set()
    marked.duplicates = tuple(dict.fromkeys(k for k, _ in pairs if k in seen or seen.add(k)))  # type: ignore
    marked.order = tuple(k for k, _ in pairs)
    return marked


def _take_duplicates(obj: dict[str, Any]) -> tuple[str, ...]:
    dups = getattr(obj, "duplicates", ())
    if dups:
        obj.duplicates = ()  # type: ignore[attr-defined]  # reported once, not again when the object is rewritten
    return dups


def _occurrences(obj: dict[str, Any]) -> list[tuple[str, bool, bool]]:
    """``obj``'s keys in document order as the decoder meets them: (key, a repeat, its last occurrence). The
    value kept is the last one, so its fields are checked there; a repeat is reported where it stands (once)."""
    order = getattr(obj, "order", ())
    if not order:
        return [(k, False, True) for k in obj]
    obj.order = obj.duplicates = ()  # type: ignore[attr-defined]  # reported once
    last = {k: i for i, k in enumerate(order)}
    seen: set[str] = set()
    out = []
    for i, k in enumerate(order):
        if k in obj:
            out.append((k, k in seen, last[k] == i))
            seen.add(k)
    return out + [(k, False, True) for k in obj if k not in last]


def _problem(problems: list[str], text: str) -> None:
    """One strict error, as sigs.k8s.io/json saves them: each text once, at most 100."""
    if len(problems) < 100 and text not in problems:
        problems.append(text)


def body_duplicates(value: Any, path: str = "") -> list[str]:
    """``duplicate field`` problems anywhere in a decoded JSON body (a patch's, which is not checked by kind)."""
    out: list[str] = []
    if isinstance(value, dict):
        out += [f'duplicate field "{path}.{k}"' if path else f'duplicate field "{k}"' for k in _take_duplicates(value)]
        for key, sub in value.items():
            out += body_duplicates(sub, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            out += body_duplicates(sub, f"{path}[{i}]")
    return out


_YAML_PREFIX = "yaml: unmarshal errors:\n"


def note_yaml_duplicates(root: yaml.Node) -> None:
    """A YAML body's keys given twice in one mapping, as sigs.k8s.io/yaml's strict conversion reports them
    (``yaml: unmarshal errors:\n  line 5: key "name" already set in map``), kept for the request's check.
    ``root`` is the body's composed node graph (aliases not expanded; each node is visited once)."""
    current = _CURRENT.get()
    if current is None or current.directive == "Ignore":
        return
    errors, seen, todo = [], set(), [root] if root is not None else []
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in keys:
                        errors.append((key.start_mark.line + 1, key.value))
                    keys.add(key.value)
                todo += [key, value]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
    if errors:
        current.body_problems.append(_YAML_PREFIX + "\n".join(
            f"  line {line}: key {json.dumps(key)} already set in map" for line, key in sorted(errors)))


# ---- compiled schemas -------------------------------------------------------------------------------------------

STRUCT, LIST, MAP = "struct", "list", "map"
STRING, INT32, INT64, BOOL, FLOAT, BYTES = "string", "int32", "int64", "bool", "float64", "[]uint8"
QUANTITY, INT_OR_STRING, TIME, MICRO_TIME, ANY = "quantity", "intstr", "time", "microtime", "any"
_LEAVES = {"str": STRING, "int": INT64, "bool": BOOL, "float": FLOAT, "datetime": TIME, "date": TIME,
           "object": ANY, "bytes": BYTES, "bytearray": BYTES}
_FROM_FORMAT = {"int32": INT32, "quantity": QUANTITY, "int-or-string": INT_OR_STRING, "micro-time": MICRO_TIME}


@dataclass(eq=False)
class Node:
    """One field's type: a struct (``fields``), a list or map (``item``), or a leaf kind."""

    kind: str
    go: str  # the Go type as encoding/json names it in errors (v1.PodSpec, []v1.Volume, map[string]string, int32)
    fields: dict[str, Node] = field(default_factory=dict)
    item: Node | None = None
    embedded: dict[str, str] = field(default_factory=dict)  # field → the inlined Go struct that declares it


#: Go structs inlined into a served type (``json:",inline"``): encoding/json names them in an error's field path
#: (``spec.containers.livenessProbe.ProbeHandler.tcpSocket.port``); the client's models flatten them. Model →
#: (inlined struct, the fields it does *not* declare).
_EMBEDDED = {"V1Probe": ("ProbeHandler", frozenset({"failureThreshold", "initialDelaySeconds", "periodSeconds",
                                                     "successThreshold", "terminationGracePeriodSeconds",
                                                     "timeoutSeconds"})),
             "V1Volume": ("VolumeSource", frozenset({"name"})),
             "V1EphemeralContainer": ("EphemeralContainerCommon", frozenset({"targetContainerName"}))}


def _leaf(kind: str) -> Node:
    return Node(kind, {QUANTITY: "resource.Quantity", INT_OR_STRING: "intstr.IntOrString", TIME: "v1.Time",
                       MICRO_TIME: "v1.MicroTime", ANY: "interface {}"}.get(kind, kind))


def _compile_type(t: str, fmt: str | None, structs: dict[str, Node], models: Any) -> Node:
    t = t.strip()
    if t.startswith("List[") and t.endswith("]"):
        item = _compile_type(t[5:-1], fmt, structs, models)
        return Node(LIST, "[]" + item.go, item=item)
    if t.startswith("Dict[") and t.endswith("]"):
        value = _compile_type(t[5:-1].split(",", 1)[1], fmt, structs, models)
        return Node(MAP, "v1.ResourceList" if value.kind == QUANTITY else f"map[string]{value.go}", item=value)
    if fmt in _FROM_FORMAT and t in ("str", "int", "object", "datetime"):
        return _leaf(_FROM_FORMAT[fmt])
    if t in _LEAVES:
        return _leaf(_LEAVES[t])
    return _compile_model(t, structs, models) or _leaf(ANY)


def _compile_model(name: str, structs: dict[str, Node], models: Any) -> Node | None:
    if name in structs:
        return structs[name]
    model = getattr(models, name, None)
    if model is None:
        return None
    definition = schema_name(name)
    node = structs[name] = Node(STRUCT, "v1." + definition.rsplit(".", 1)[-1])
    formats = _FORMATS.get(definition, {})
    inlined, own = _EMBEDDED.get(name, ("", frozenset()))
    for attr, typ in model.openapi_types.items():
        json_name = model.attribute_map[attr]
        node.fields[json_name] = _compile_type(typ, formats.get(json_name), structs, models)
        if inlined and json_name not in own:
            node.embedded[json_name] = inlined
    return node


_SCHEMAS: dict[tuple[str, str], Node | None] = {}
_STRUCTS: dict[str, Node] = {}
_COMPILING = threading.Lock()  # compile_all runs in a worker thread while the event loop may ask for a kind


def schema_of(group: str, kind: str) -> Node | None:
    """The compiled schema of ``kind`` in ``group`` ("" for core), built on first use and cached; None for a kind
    the installed client has no model of (not checked)."""
    key = (group, kind)
    schema = _SCHEMAS.get(key, _SCHEMAS)
    if schema is not _SCHEMAS:
        return schema  # type: ignore[return-value]
    with _COMPILING:
        if key not in _SCHEMAS:
            # importing the client's models takes a second or two: on first use (or in compile_all's thread),
            # never at import time
            from kubernetes.client import models

            model = registry.model_of(group, kind)
            _SCHEMAS[key] = _compile_model(model, _STRUCTS, models) if model else None
        return _SCHEMAS[key]


def compile_all() -> None:
    """Compile every served kind's schema (the server runs this in a worker thread as it starts, so that the
    first writes do not wait for the client's models to import)."""
    for info in registry.KINDS:
        if info.model:
            schema_of(info.group, info.kind)


# ---- the check --------------------------------------------------------------------------------------------------

class DecodeError(ValueError):
    """A value the Go types cannot hold; the text is the decoder's (``json: cannot unmarshal ...``)."""


def check(group: str, kind: str, obj: dict[str, Any], *, converter: bool = False) -> list[str]:
    """Decode ``obj`` (a JSON object of ``kind``) as the Go types would: raise :class:`DecodeError` for the first
    value of the wrong type, drop unknown fields in place, and return the strict decoding problems (``unknown
    field "spec.foo"``, ``duplicate field "metadata.name"``) for the caller to warn about or refuse.
    ``converter``: word type errors as the unstructured converter does (a strategic merge patch's result)."""
    schema = schema_of(group, kind)
    problems: list[str] = []
    if schema is not None:
        try:
            _struct(schema, obj, "", "", problems)
        except _Mismatch as exc:
            raise DecodeError(exc.text(converter)) from None
    return problems


def strict_error(problems: list[str]) -> str:
    """upstream ``runtime.NewStrictDecodingError``'s text."""
    return "strict decoding error: " + ", ".join(problems)


def _struct(node: Node, obj: dict[str, Any], epath: str, spath: str, problems: list[str]) -> None:
    """A struct's fields in document order (sigs.k8s.io/json's): an unknown field, a repeated known one
    (``duplicate field``; an unknown field given twice is only unknown), then the field's own value."""
    unknown = []
    fields, owner = node.fields, node.go[3:]
    for key, repeat, last in _occurrences(obj):
        child = fields.get(key)
        sp = f"{spath}.{key}" if spath else key
        if child is None:
            if not repeat:
                unknown.append(key)
            _problem(problems, f'unknown field "{sp}"')
            continue
        if repeat:
            _problem(problems, f'duplicate field "{sp}"')
        value = obj[key]
        if last and value is not None:
            inlined = node.embedded.get(key)
            ep = f"{epath}.{inlined}.{key}" if inlined else f"{epath}.{key}" if epath else key
            _value(child, value, owner, ep, sp, problems)
            if child.kind == BYTES and isinstance(value, list):
                obj[key] = _bytes_of(value)
    for key in unknown:
        del obj[key]


def _zero(node: Node) -> Any:
    """What a JSON null becomes as a list item or map value: Go's zero value of the element type (a struct
    field that is null stays absent)."""
    return {STRING: "", BYTES: "", INT32: 0, INT64: 0, BOOL: False, FLOAT: 0, QUANTITY: "0", STRUCT: {},
            LIST: [], MAP: {}, INT_OR_STRING: 0}.get(node.kind)


class _Mismatch(Exception):
    """A value of the wrong type, worded by :meth:`text` as the decoder of the write's path words it."""

    def __init__(self, value: Any, owner: str, epath: str, go: str, kind: str, custom: bool = False) -> None:
        super().__init__(go)
        self.value, self.owner, self.epath, self.go, self.kind, self.custom = value, owner, epath, go, kind, custom

    def text(self, converter: bool) -> str:
        """encoding/json's ``UnmarshalTypeError``, or (``converter``: a strategic merge patch's result goes
        through apimachinery's unstructured converter, not JSON) the converter's error."""
        got = json_kind(self.value)
        if not converter or self.custom:  # custom unmarshalers decode JSON in both paths, without the context
            if got == "number" and self.kind in (INT32, INT64):  # encoding/json names the number it could not fit
                got = f"number {json.dumps(self.value)}"
            if converter:
                return f"json: cannot unmarshal {got} into Go value of type {self.go}"
            return f"json: cannot unmarshal {got} into Go struct field {self.owner}.{self.epath} of type {self.go}"
        source = {"string": "string", "bool": "bool", "array": "slice", "object": "map"}.get(got) or (
            "float64" if isinstance(self.value, float) else "int64")
        if self.kind == STRUCT:
            return f"cannot restore struct from: {source}"
        if self.kind in (LIST, BYTES):
            return f"cannot restore slice from {source}"
        if self.kind == MAP:
            return f"cannot restore map from {source}"
        if (source, self.kind) in (("int64", STRING), ("float64", INT32), ("float64", INT64), ("int64", INT32),
                                   ("int64", INT64)):  # Go can convert these kinds, just not these values
            return f"cannot convert {source} to {self.kind}"
        return f"unrecognized type: {self.kind}"


def _bytes_of(numbers: list[int]) -> str:
    """A ``[]byte`` sent as a JSON array of bytes, as the server stores and returns it: standard base64."""
    return base64.b64encode(bytes(numbers)).decode()


_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def base64_error_at(text: str) -> int | None:
    """Where Go's ``base64.StdEncoding`` finds ``text`` corrupt (``CorruptInputError``: the offset it reports),
    or None when it decodes. As ``decodeQuantum``: CR and LF are skipped, a character outside the alphabet is
    reported where it stands, ``=`` only closes a quantum of two or three characters, nothing may follow the
    padding, and a last quantum cut short is reported where it began."""
    i, n = 0, len(text)
    while i < n:
        start, j = i, 0
        while j < 4:
            if i == n:
                return None if j == 0 else start
            ch = text[i]
            i += 1
            if ch in "\r\n":
                continue
            if ch in _B64_ALPHABET:
                j += 1
                continue
            if ch != "=" or j < 2:
                return i - 1
            # padding: "xx==" or "xxx="
            while i < n and text[i] in "\r\n":
                i += 1
            if j == 2:  # "==" expected: not enough padding is reported at the end, a wrong one at its first "="
                if i == n or text[i] != "=":
                    return n if i == n else i - 1
                i += 1
                while i < n and text[i] in "\r\n":
                    i += 1
            return i if i < n else None
    return None


def _mismatch(value: Any, owner: str, epath: str, go: str, kind: str = "", custom: bool = False) -> _Mismatch:
    return _Mismatch(value, owner, epath, go, kind or go, custom)


def _value(node: Node, value: Any, owner: str, epath: str, spath: str, problems: list[str]) -> None:
    kind = node.kind
    if kind == STRUCT:
        if not isinstance(value, dict):
            raise _mismatch(value, owner, epath, node.go, STRUCT)
        _struct(node, value, epath, spath, problems)
    elif kind == BYTES and isinstance(value, list):  # a []byte is a slice: encoding/json also takes [n, ...]
        for n in value:
            if not (isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 256):
                raise _mismatch(n, owner, epath, "uint8", INT64)
    elif kind == STRING or kind == BYTES:
        if not isinstance(value, str):
            raise _mismatch(value, owner, epath, node.go, kind)
        if kind == BYTES:  # encoding/json decodes []byte from standard base64
            at = base64_error_at(value)
            if at is not None:
                raise DecodeError(f"illegal base64 data at input byte {at}")
    elif kind == LIST:
        if not isinstance(value, list):
            raise _mismatch(value, owner, epath, node.go, LIST)
        item = node.item
        assert item is not None
        if item.kind == STRING:
            for i, sub in enumerate(value):
                if not isinstance(sub, str):
                    if sub is not None:
                        raise _mismatch(sub, owner, epath, "string")
                    value[i] = ""
        else:
            for i, sub in enumerate(value):
                if sub is None:
                    value[i] = _zero(item)
                else:
                    _value(item, sub, owner, epath, f"{spath}[{i}]", problems)
    elif kind == MAP:
        if not isinstance(value, dict):
            raise _mismatch(value, owner, epath, node.go, MAP)
        item = node.item
        assert item is not None
        for key, repeat, last in _occurrences(value):
            if repeat:
                _problem(problems, f'duplicate field "{spath}.{key}"')
            sub = value[key]
            if not last:
                continue
            if sub is None:
                value[key] = _zero(item)
            else:
                _value(item, sub, owner, epath, f"{spath}.{key}", problems)
                if item.kind == BYTES and isinstance(sub, list):
                    value[key] = _bytes_of(sub)
    elif kind == INT32 or kind == INT64:
        bound = 2**31 if kind == INT32 else 2**63
        if not (isinstance(value, int) and not isinstance(value, bool) and -bound <= value < bound):
            raise _mismatch(value, owner, epath, kind)
    elif kind == BOOL:
        if not isinstance(value, bool):
            raise _mismatch(value, owner, epath, kind)
    elif kind == FLOAT:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _mismatch(value, owner, epath, kind)
    elif kind == QUANTITY:  # Quantity.UnmarshalJSON parses the text of whatever JSON value it is given
        try:
            parse_quantity(value if isinstance(value, str | int | float) else json.dumps(value))
        except (QuantityError, TypeError, ValueError):
            raise DecodeError(QUANTITY_MSG) from None
    # the custom unmarshalers decode again into an int32 or a string; encoding/json gives their type errors the
    # field's context (``Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32``)
    elif kind == INT_OR_STRING:  # IntOrString.UnmarshalJSON: a string, else an int32
        if not isinstance(value, str) and not (isinstance(value, int) and not isinstance(value, bool)
                                               and -2**31 <= value < 2**31):
            raise _mismatch(value, owner, epath, INT32, custom=True)
    elif kind == TIME or kind == MICRO_TIME:  # metav1.Time/MicroTime.UnmarshalJSON: a string, then time.Parse
        if not isinstance(value, str):
            raise _mismatch(value, owner, epath, STRING, custom=True)
        if kind == TIME:
            err = microtime.time_error(value)
        else:
            try:
                microtime.parse_micro_time(value)
                err = None
            except microtime.MicroTimeError as exc:
                err = str(exc)
        if err:
            raise DecodeError(err)


# ---- entry points for the write path ---------------------------------------------------------------------------

def check_body(group: str, kind: str, body: dict[str, Any], strict: bool) -> None:
    """A create or update body of ``kind``: 400 as the REST handler's decoder words it (``<Kind> in version "v1"
    cannot be handled as a <Kind>: ...``, "v1" in every group) for a wrong type, or for unknown/duplicate fields
    when ``strict``; otherwise those fields are dropped and warned about."""
    try:
        problems = check(group, kind, body)
    except DecodeError as exc:
        raise st.bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: {exc}') from None
    problems = body_problems() + problems
    if problems:
        if strict:
            raise st.bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: {strict_error(problems)}')
        warn(problems)


def check_patched(group: str, kind: str, patched: Any, patch: Any, content_type: str, strict: bool) -> None:
    """The result of applying a patch (upstream ``patch.go``): a wrong type or, when ``strict``, an unknown or
    duplicate field (in the result, or a key the patch body names twice) is 422 ``patch: Invalid value`` with the
    patched object (JSON and merge patches) or the patch (strategic merge, printed as Go prints a map)."""
    problems = body_duplicates(patch)
    if content_type == "application/json-patch+json":
        problems = [f"json patch {p}" for p in problems]
    try:
        problems += check(group, kind, patched, converter=content_type == _SMP) if isinstance(patched, dict) else []
    except DecodeError as exc:
        raise patch_invalid(patched, patch, content_type, str(exc)) from None
    if problems:
        if strict:
            raise patch_invalid(patched, patch, content_type, strict_error(problems))
        warn(problems)


def patch_invalid(patched: Any, patch: Any, content_type: str, detail: str) -> st.StatusError:
    """upstream's 422 on a patch whose result does not decode: ``patch: Invalid value: <shown>: <detail>``."""
    if content_type == _SMP:
        shown = _go_print(patch)
    else:  # the patched document as stored (upstream prints it in the Go structs' field order, with managedFields)
        shown = json.dumps(patched, separators=(",", ":"))
    return st.invalid("", "", [st.field_invalid("patch", shown, detail)])


def _go_print(value: Any) -> str:
    """A decoded JSON value as Go's ``fmt`` prints it with ``%+v`` (maps with sorted keys)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_print(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_print(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
