"""Structured merge and diff of the built-in kinds' objects: field sets, comparison, merge and removal.

A Python rendering of ``sigs.k8s.io/structured-merge-diff/v6`` (``typed/tofieldset.go``, ``compare.go``,
``merge.go``, ``remove.go``; ``fieldpath/`` for paths, sets and their ``fieldsV1`` serialization) over the schema
``scripts/gen-smd-schema`` converts from upstream's OpenAPI (``smdschema.json``), as kube-openapi's schemaconv does
for kube-apiserver. Objects are plain JSON values (dicts, lists, scalars).

A field set is a Python set of paths; a path is a tuple of path elements:

* ``("f", name)``: a field of a struct or a key of a map (``f:<name>``);
* ``("k", ((key, json), ...))``: an item of an associative list by its key fields (``k:{"name":"x"}``);
* ``("v", json)``: an item of a set (``v:"a"``);
* ``("i", n)``: an item by position (``i:3``; only read from stored fieldsV1, never computed here).

Values in keys are kept as canonical JSON text so that paths hash and compare as upstream's do.
Simplified: a value whose type does not match its schema is a leaf (upstream reports a validation error), a field a
struct does not declare is deduced (upstream: "field not declared in schema"), and there is one version per kind
(no conversion between API versions).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path as _FilePath
from typing import Any

PathElement = tuple[str, Any]
FieldPath = tuple[PathElement, ...]
FieldSet = set[FieldPath]

_DATA: dict[str, Any] = json.loads(_FilePath(__file__).with_name("smdschema.json").read_text())
DEFS: dict[str, Any] = _DATA["defs"]
GVK: dict[str, str] = _DATA["gvk"]

ABSENT: Any = object()  # a missing value (a JSON null is None)
_LEAF, _LIST, _MAP = "leaf", "list", "map"
_DEDUCED: dict[str, Any] = {"e": "d"}


class SchemaError(ValueError):
    """An object that does not fit its list semantics (upstream's typed-value validation errors)."""


def root_type(api_version: str, kind: str) -> str | None:
    """The schema definition of ``kind`` in ``api_version`` (``apps/v1``, ``v1``), or None if upstream has none."""
    group, _, version = api_version.rpartition("/")
    return GVK.get(f"{group}/{version}/{kind}")


# ---- schema resolution -----------------------------------------------------------------------------------------

@functools.cache
def _named(name: str) -> Any:
    t: Any = name
    while isinstance(t, str):
        if t in ("s", "u", "d"):
            return _DEDUCED if t == "d" else t
        t = DEFS.get(t, "d")
    return _atom(t)


def _atom(t: Any) -> Any:
    """A type reference resolved: ``"s"``/``"u"``/``"d"``, a list (``{"l": ...}``) or an object (fields...)."""
    while True:
        if isinstance(t, str):
            return _named(t)
        if "r" in t:
            base = _atom(t["r"])
            return {**base, "m": t["m"]} if isinstance(base, dict) and "l" not in base else base
        if "o" in t:
            return t["o"]
        return t


def _shape(atom: Any, v: Any) -> str:
    """What the walkers do with ``v`` under ``atom`` (upstream's deduceAtom and the atomic relationships)."""
    if isinstance(atom, str):
        return _LEAF
    if "l" in atom:  # a null list is an empty one (deduceAtom keeps the list type)
        return _LIST if (v is ABSENT or v is None or isinstance(v, list)) and atom.get("t") != "atomic" else _LEAF
    if v is ABSENT or v is None or isinstance(v, dict):
        return _LEAF if atom.get("m") == "atomic" else _MAP
    return _LEAF


def _field_type(atom: dict[str, Any], name: str) -> tuple[Any, bool]:
    """(type of ``name`` in a map/struct, whether the struct declares it)."""
    fields = atom.get("f") or {}
    if name in fields:
        return fields[name], True
    return atom.get("e", "d"), False


def canonical(value: Any) -> str:
    """JSON as Go's encoder writes it (compact, HTML characters escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def canonical_sorted(value: Any) -> str:
    """JSON as Go encodes a map (keys sorted)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def item_element(atom: dict[str, Any], item: Any) -> PathElement:
    """The path element of a list item (``listItemToPathElement``)."""
    keys = atom.get("k")
    if keys:
        if item is None:
            raise SchemaError("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise SchemaError("associative list with keys may not have non-map elements")
        defaults = (_atom(atom["l"]) or {}).get("d", {}) if isinstance(_atom(atom["l"]), dict) else {}
        pairs = []
        for k in keys:
            if k in item:
                pairs.append((k, canonical(item[k])))
            elif k in defaults:
                pairs.append((k, canonical(defaults[k])))
        if not pairs:
            raise SchemaError("associative list with keys has an element that omits all key fields "
                              f"{canonical(keys)} (and doesn't have default values for any key fields)")
        return ("k", tuple(sorted(pairs)))
    if isinstance(item, dict):
        raise SchemaError("associative list without keys has an element that's a map type")
    if isinstance(item, list):
        raise SchemaError("not supported: associative list with lists as elements")
    if item is None:
        raise SchemaError("associative list without keys has an element that's an explicit null")
    return ("v", canonical(item))


def _items(atom: dict[str, Any], items: Any, allow_duplicates: bool = True) -> list[tuple[PathElement, Any]]:
    out = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        try:
            out.append((item_element(atom, item), item))
        except SchemaError as exc:
            raise SchemaError(f"element {i}: {exc}") from None
    if not allow_duplicates:
        seen: set[PathElement] = set()
        for pe, _ in out:
            if pe in seen:
                raise SchemaError(f"duplicate entries for key {path_string((pe,))[0:]}")
            seen.add(pe)
    return out


def type_at(t: Any, path: FieldPath) -> Any:
    """The type reference at ``path`` below ``t`` (without a value)."""
    for pe in path:
        atom = _atom(t)
        if isinstance(atom, str):
            return "d"
        if pe[0] == "f":
            t = _field_type(atom, pe[1])[0] if "l" not in atom else "d"
        else:
            t = atom["l"] if "l" in atom else "d"
    return t


def zero(t: Any, depth: int = 0) -> Any:
    """Go's zero value of a type as the unstructured converter renders it: nested structs as objects, required
    lists, maps and pointers as null (the "live" object of a create, which upstream compares the new one with)."""
    atom = _atom(t)
    if not isinstance(atom, dict) or "l" in atom or depth > 32:
        return None
    out: dict[str, Any] = {}
    for name, struct in (atom.get("z") or {}).items():
        out[name] = zero((atom.get("f") or {}).get(name, "d"), depth + 1) if struct else None
        if struct and out[name] is None:
            out[name] = {}
    return out


def validate(t: Any, value: Any) -> list[str]:
    """``TypedValue`` validation of an applied configuration (``validatingObjectWalker``): fields a struct does not
    declare, list items without their keys, duplicate keys; each as ``<path>: <message>``. Scalar types are left to
    the API server's decoding."""
    errs: list[str] = []
    _validate(t, value, "", errs)
    return errs


def _validate(t: Any, v: Any, path: str, errs: list[str]) -> None:
    atom = _atom(t)
    if isinstance(atom, str) or v is None:
        return
    if "l" in atom:
        if not isinstance(v, list):
            return
        seen: set[PathElement] = set()
        for i, item in enumerate(v):
            if atom.get("t") == "atomic":
                sub = f"{path}[{i}]"
            else:
                try:
                    pe = item_element(atom, item)
                except SchemaError as exc:
                    errs.append(f"{path}: element {i}: {exc}" if path else f"element {i}: {exc}")
                    return
                if pe in seen:
                    errs.append(f"{path}: duplicate entries for key {path_string((pe,))}")
                seen.add(pe)
                sub = path + path_string((pe,))
            _validate(atom["l"], item, sub, errs)
        return
    if not isinstance(v, dict):
        return
    for key, child in v.items():
        fields = atom.get("f") or {}
        if key not in fields and "e" not in atom:
            errs.append(f"{path}.{key}: field not declared in schema")
            return
        _validate(fields.get(key, atom.get("e")), child, f"{path}.{key}", errs)


# ---- field sets ------------------------------------------------------------------------------------------------

def to_field_set(t: Any, value: Any) -> FieldSet:
    """Every path ``value`` sets (``TypedValue.ToFieldSet``): leaves, list items, nulls, empty maps and map keys."""
    out: FieldSet = set()
    _to_set(t, value, (), out)
    return out


def _to_set(t: Any, v: Any, path: FieldPath, out: FieldSet) -> None:
    atom = _atom(t)
    shape = _shape(atom, v)
    if shape == _LEAF:
        out.add(path)
    elif shape == _LIST:
        items = _items(atom, v)
        counts: dict[PathElement, int] = {}
        for pe, _ in items:
            counts[pe] = counts.get(pe, 0) + 1
        for pe, item in items:
            if counts[pe] > 1:
                out.add(path + (pe,))  # a duplicated item is owned whole
                continue
            _to_set(atom["l"], item, path + (pe,), out)
            out.add(path + (pe,))
    elif isinstance(v, dict):
        for key, child in v.items():
            ft, declared = _field_type(atom, key)
            sub = path + (("f", key),)
            _to_set(ft, child, sub, out)
            if child is None or child == {} or not declared:
                out.add(sub)


def filter_excluded(fields: FieldSet, excluded: Iterable[FieldPath]) -> FieldSet:
    """``fields`` without the paths at or below any of ``excluded`` (``NewExcludeSetFilter``)."""
    ex = set(excluded)
    if not ex:
        return set(fields)
    return {p for p in fields if not any(p[:i] in ex for i in range(1, len(p) + 1))}


def with_prefix(fields: Iterable[FieldPath], pe: PathElement) -> FieldSet:
    """The subtree below ``pe`` (``Set.WithPrefix``), relative to it."""
    return {p[1:] for p in fields if len(p) > 1 and p[0] == pe}


def ensure_named_fields(fields: FieldSet, t: Any) -> FieldSet:
    """``EnsureNamedFieldsAreMembers``: a struct field with children below it is a member too."""
    out = set(fields)
    for p in fields:
        for i in range(1, len(p)):
            prefix = p[:i]
            if prefix in out or prefix[-1][0] != "f":
                continue
            atom = _atom(type_at(t, prefix[:-1]))
            if isinstance(atom, dict) and "l" not in atom and prefix[-1][1] in (atom.get("f") or {}):
                out.add(prefix)
    return out


# ---- comparison ----------------------------------------------------------------------------------------------

class Comparison:
    """Paths added, modified (leaves whose value changed) and removed from one object to another."""

    def __init__(self) -> None:
        self.added: FieldSet = set()
        self.modified: FieldSet = set()
        self.removed: FieldSet = set()

    def filtered(self, excluded: Iterable[FieldPath]) -> Comparison:
        ex = list(excluded)
        out = Comparison()
        out.added = filter_excluded(self.added, ex)
        out.modified = filter_excluded(self.modified, ex)
        out.removed = filter_excluded(self.removed, ex)
        return out


def compare(t: Any, lhs: Any, rhs: Any) -> Comparison:
    """``TypedValue.Compare``: what changed from ``lhs`` to ``rhs``."""
    res = Comparison()
    _cmp(t, lhs, rhs, (), res)
    return res


def _empty(v: Any) -> bool:
    return v is ABSENT or v is None or v == {} or v == []


def _cmp(t: Any, lhs: Any, rhs: Any, path: FieldPath, res: Comparison) -> None:
    atom = _atom(t)
    ls = _shape(atom, lhs) if lhs is not ABSENT else None
    rs = _shape(atom, rhs) if rhs is not ABSENT else None
    shape = rs if ls is None else ls if rs is None else ls if ls == rs else _LEAF
    leaf = shape == _LEAF or (_empty(lhs) and _empty(rhs))
    if leaf:
        if lhs is ABSENT:
            res.added.add(path)
        elif rhs is ABSENT:
            res.removed.add(path)
        elif not _equal(lhs, rhs):
            res.modified.add(path)
        return
    if shape == _LIST:
        _cmp_list(atom, lhs, rhs, path, res)
    else:
        lm = lhs if isinstance(lhs, dict) else {}
        rm = rhs if isinstance(rhs, dict) else {}
        for key in {**lm, **rm}:
            ft = _field_type(atom, key)[0]
            _cmp(ft, lm.get(key, ABSENT), rm.get(key, ABSENT), path + (("f", key),), res)
    if lhs is ABSENT:
        res.added.add(path)
    elif rhs is ABSENT:
        res.removed.add(path)


def _equal(a: Any, b: Any) -> bool:
    """``value.Equals``: numbers by value (1 == 1.0), booleans apart from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _grouped(atom: dict[str, Any], items: Any) -> tuple[list[PathElement], dict[PathElement, list[Any]]]:
    order: list[PathElement] = []
    groups: dict[PathElement, list[Any]] = {}
    for pe, item in _items(atom, items):
        if pe not in groups:
            order.append(pe)
            groups[pe] = []
        groups[pe].append(item)
    return order, groups


def _cmp_list(atom: dict[str, Any], lhs: Any, rhs: Any, path: FieldPath, res: Comparison) -> None:
    lorder, lg = _grouped(atom, lhs)
    rorder, rg = _grouped(atom, rhs)
    for pe in lorder + [pe for pe in rorder if pe not in lg]:
        ll, rl = lg.get(pe, []), rg.get(pe, [])
        sub = path + (pe,)
        if len(ll) <= 1 and len(rl) <= 1:
            _cmp(atom["l"], ll[0] if ll else ABSENT, rl[0] if rl else ABSENT, sub, res)
        elif len(ll) >= 2 and len(rl) >= 2:
            if ll != rl:
                res.modified.add(sub)
        elif len(ll) >= 2:
            if rl:
                _cmp(atom["l"], ABSENT, rl[0], sub, res)
            res.removed.add(sub)
        else:
            if ll:
                _cmp(atom["l"], ll[0], ABSENT, sub, res)
            res.added.add(sub)


# ---- merge -----------------------------------------------------------------------------------------------------

def merge(t: Any, lhs: Any, rhs: Any) -> Any:
    """``TypedValue.Merge``: ``rhs`` merged into ``lhs`` (leaves from ``rhs``); ABSENT when nothing is left."""
    atom = _atom(t)
    ls = _shape(atom, lhs) if lhs is not ABSENT else None
    rs = _shape(atom, rhs) if rhs is not ABSENT else None
    shape = rs if ls is None else ls if rs is None else ls if ls == rs else _LEAF
    if shape == _LEAF or (_empty(lhs) and _empty(rhs)):
        return rhs if rhs is not ABSENT else lhs
    if shape == _LIST:
        out_list = _merge_list(atom, lhs if isinstance(lhs, list) else [], rhs if isinstance(rhs, list) else [])
        return out_list if out_list else ABSENT
    lm = lhs if isinstance(lhs, dict) else {}
    rm = rhs if isinstance(rhs, dict) else {}
    out: dict[str, Any] = {}
    for key in {**lm, **rm}:
        merged = merge(_field_type(atom, key)[0], lm.get(key, ABSENT), rm.get(key, ABSENT))
        if merged is not ABSENT:
            out[key] = merged
    return out if out else ABSENT


def _merge_list(atom: dict[str, Any], lhs: list[Any], rhs: list[Any]) -> list[Any]:
    """The item order upstream's mergingWalker.visitListItems gives: the live order, with the applied items
    placed where the applied list puts them relative to the items both share."""
    rpes = _items(atom, rhs, allow_duplicates=False)
    lpes = _items(atom, lhs)
    observed_r = dict(rpes)
    observed_l: dict[PathElement, Any] = {}
    for pe, item in lpes:
        observed_l[pe] = None if pe in observed_l else item  # a duplicated live item merges as nothing
    shared = [pe for pe, _ in rpes if pe in observed_l]
    next_shared = shared.pop(0) if shared else None
    merged_r: set[PathElement] = set()
    out: list[Any] = []
    li = ri = 0
    lpe_list = [pe for pe, _ in lpes]
    rpe_list = [pe for pe, _ in rpes]

    def add(lchild: Any, rchild: Any) -> None:
        value = merge(atom["l"], lchild, rchild)
        if value is not ABSENT:
            out.append(value)

    while li < len(lpe_list) or ri < len(rpe_list):
        if li < len(lpe_list) and ri < len(rpe_list):
            pe = lpe_list[li]
            if pe == rpe_list[ri]:
                merged_r.add(pe)
                lc = observed_l.get(pe)
                add(ABSENT if lc is None else lc, observed_r[pe])
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in observed_r and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(lpe_list):
            pe = lpe_list[li]
            if pe not in observed_r:
                add(lpes[li][1], ABSENT)
                li += 1
                continue
            if pe in merged_r:
                li += 1
        if ri < len(rpe_list):
            pe = rpe_list[ri]
            merged_r.add(pe)
            lc = observed_l.get(pe)
            add(ABSENT if lc is None else lc, observed_r[pe])
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out


# ---- removal ---------------------------------------------------------------------------------------------------

def remove_items(t: Any, value: Any, fields: FieldSet) -> Any:
    """``TypedValue.RemoveItems``: ``value`` without the members of ``fields``; a map or list left empty is None
    (a null, as upstream's walker leaves it)."""
    atom = _atom(t)
    shape = _shape(atom, value)
    if shape == _LEAF or _empty(value):
        return value
    if shape == _LIST:
        items = []
        for pe, item in _items(atom, value):
            if (pe,) in fields:
                continue
            sub = with_prefix(fields, pe)
            items.append(remove_items(atom["l"], item, sub) if sub else item)
        return items or None
    out: dict[str, Any] = {}
    for key, child in value.items():
        pe = ("f", key)
        if (pe,) in fields:
            continue
        sub = with_prefix(fields, pe)
        out[key] = remove_items(_field_type(atom, key)[0], child, sub) if sub else child
    return out or None


# ---- fieldsV1 --------------------------------------------------------------------------------------------------

def _value_order(v: Any) -> tuple[Any, ...]:
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, int | float):
        return (0, v)
    if isinstance(v, str):
        return (1, v)
    if v is None:
        return (5,)
    return (3 if isinstance(v, list) else 4, canonical(v))


def element_order(pe: PathElement) -> tuple[Any, ...]:
    """``PathElement.Compare``: field names, then keys, then values, then indexes."""
    kind, data = pe
    if kind == "f":
        return (0, data)
    if kind == "k":
        return (1, tuple((name, _value_order(json.loads(v))) for name, v in data))
    if kind == "v":
        return (2, _value_order(json.loads(data)))
    return (3, data)


def element_key(pe: PathElement) -> str:
    """The fieldsV1 key of a path element (``f:name``, ``k:{...}``, ``v:...``, ``i:n``)."""
    kind, data = pe
    if kind == "f":
        return f"f:{data}"
    if kind == "k":
        return "k:{" + ",".join(f"{canonical(name)}:{v}" for name, v in data) + "}"
    if kind == "v":
        return f"v:{data}"
    return f"i:{data}"


def parse_element(key: str) -> PathElement | None:
    """A fieldsV1 key as a path element; None for an unknown kind (skipped as upstream does); ValueError if bad."""
    kind, sep, rest = key.partition(":")
    if not sep:
        return None
    if kind == "f":
        return ("f", rest)
    if kind == "k":
        keys = json.loads(rest)
        if not isinstance(keys, dict):
            raise ValueError(f"expected a map for a key path element, got {rest}")
        return ("k", tuple(sorted((name, canonical(v)) for name, v in keys.items())))
    if kind == "v":
        return ("v", canonical(json.loads(rest)))
    if kind == "i":
        return ("i", int(rest))
    return None


def _trie(fields: Iterable[FieldPath]) -> dict[PathElement, Any]:
    """path element → (is member, children trie)."""
    root: dict[PathElement, Any] = {}
    for p in fields:
        node = root
        for i, pe in enumerate(p):
            entry = node.setdefault(pe, [False, {}])
            if i == len(p) - 1:
                entry[0] = True
            node = entry[1]
    return root


def to_fields_v1(fields: Iterable[FieldPath]) -> dict[str, Any]:
    """The ``fieldsV1`` object of a set, in upstream's key order (``Set.ToJSON``)."""
    def emit(node: dict[PathElement, Any], include_self: bool) -> dict[str, Any]:
        out: dict[str, Any] = {".": {}} if include_self and node else {}
        for pe in sorted(node, key=element_order):
            member, children = node[pe]
            out[element_key(pe)] = emit(children, member) if children else {}
        return out
    return emit(_trie(p for p in fields if p), False)


def from_fields_v1(doc: Any) -> FieldSet:
    """The set a ``fieldsV1`` object names (``Set.FromJSON``); ValueError when it is malformed."""
    out: FieldSet = set()

    def walk(node: Any, path: FieldPath) -> None:
        if not isinstance(node, dict):
            raise ValueError("expected an object")
        for key, child in node.items():
            if key == ".":
                if path:
                    out.add(path)
                continue
            pe = parse_element(key)
            if pe is None:
                continue
            sub = path + (pe,)
            if isinstance(child, dict) and not child:
                out.add(sub)
            else:
                walk(child, sub)
    walk(doc, ())
    return out


def iterate(fields: Iterable[FieldPath]) -> Iterator[FieldPath]:
    """Paths in ``Set.Iterate`` order: at each level the members, then each child's subtree, all sorted."""
    def walk(node: dict[PathElement, Any], prefix: FieldPath) -> Iterator[FieldPath]:
        ordered = sorted(node, key=element_order)
        for pe in ordered:
            if node[pe][0]:
                yield prefix + (pe,)
        for pe in ordered:
            if node[pe][1]:
                yield from walk(node[pe][1], prefix + (pe,))
    yield from walk(_trie(fields), ())


def path_string(path: FieldPath) -> str:
    """``fieldpath.Path.String``: ``.spec.containers[name="app"].image``, ``[=value]``, ``[3]``."""
    parts = []
    for kind, data in path:
        if kind == "f":
            parts.append(f".{data}")
        elif kind == "k":
            parts.append("[" + ",".join(f"{name}={v}" for name, v in data) + "]")
        elif kind == "v":
            parts.append(f"[={data}]")
        else:
            parts.append(f"[{data}]")
    return "".join(parts)
