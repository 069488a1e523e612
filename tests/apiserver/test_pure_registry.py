"""The kind registry is the API server's one table of kinds: every served resource has exactly one record, every
record's printer, field labels, schema and protobuf message are what the server uses, and no server module keeps
a per-kind table or branches on a kind's name (an AST scan of ``mockgpu/control/apiserver`` outside
``registry/``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mockgpu.config.featuregates import FeatureGates
from mockgpu.control.apiserver import discovery, fieldvalidation, openapi, protobuf, registry, selectors, tables
from mockgpu.control.apiserver.registry.kind import META_FIELDS, Kind
from mockgpu.control.apiserver.status import guess_plural

APISERVER = Path(__file__).resolve().parents[2] / "mockgpu" / "control" / "apiserver"
RECORDS = registry.KINDS
#: every gate a record names switched on: the server then serves every record
ALL_GATES = FeatureGates({k.feature_gate: True for k in RECORDS if k.feature_gate})


def _id(info: Kind) -> str:
    return f"{info.group or 'core'}/{info.kind}"


# ---- one record per served resource ---------------------------------------------------------------------------

def _discovered() -> list[tuple[str, str]]:
    """(group-version, resource) of every top-level entry the discovery documents list."""
    core = [("v1", e["name"]) for e in discovery.api_resource_list_v1()["resources"] if "/" not in e["name"]]
    named = [(g["groupVersion"], e["name"])
             for g in (discovery.group_resource_list(gv, ALL_GATES) for gv in registry.group_versions())
             for e in (g or {})["resources"] if "/" not in e["name"]]
    return core + named


def test_every_served_resource_has_exactly_one_record():
    records = [(k.group_version, k.plural) for k in RECORDS]
    assert len(records) == len(set(records))
    assert sorted(_discovered()) == sorted(records)


def test_the_aggregated_documents_list_the_same_records():
    core = discovery.aggregated_core_discovery()["items"][0]["versions"][0]["resources"]
    named = [(f"{item['metadata']['name']}/{v['version']}", r["resource"])
             for item in discovery.aggregated_group_discovery(ALL_GATES)["items"] for v in item["versions"]
             for r in v["resources"]]
    assert sorted([("v1", r["resource"]) for r in core] + named) == sorted((k.group_version, k.plural)
                                                                          for k in RECORDS)


def test_a_gated_kind_is_served_only_with_its_gate():
    gated = [k for k in RECORDS if k.feature_gate]
    assert gated, "no record names a feature gate"
    for k in gated:
        off = FeatureGates({k.feature_gate: False})
        assert k.plural not in (registry.served(k.group_version, off) or {})
        assert k.group_version not in discovery.root_paths(off) and f"/apis/{k.group_version}" not in \
            discovery.root_paths(off)
        assert registry.served(k.group_version, ALL_GATES)[k.plural] is k
        assert f"/apis/{k.group_version}" in discovery.root_paths(ALL_GATES)


def test_discovery_tables_are_views_of_the_registry():
    assert discovery.RESOURCES is registry.served("v1")
    assert all(discovery.GROUP_RESOURCES[gv] is registry.served(gv) for gv in registry.group_versions())


@pytest.mark.parametrize("info", RECORDS, ids=_id)
def test_a_kind_is_found_by_its_names(info: Kind):
    """by kind (its storage's record for a kind served in two groups), by plural, by ``<plural>.<group>``."""
    qualified = f"{info.plural}.{info.group}" if info.group else info.plural
    assert registry.lookup(qualified) is info
    if info.view is None and info.review is None:
        assert registry.by_kind(info.kind) is info
        assert registry.lookup(info.kind) is info


@pytest.mark.parametrize("info", RECORDS, ids=_id)
def test_a_kinds_plural_is_upstreams_guess(info: Kind):
    """``status.method_not_allowed`` turns a kind into its resource with UnsafeGuessKindToResource."""
    assert guess_plural(info.kind) == info.plural


# ---- every record's rules are the ones the server uses ----------------------------------------------------------

@pytest.mark.parametrize("info", RECORDS, ids=_id)
def test_the_table_uses_the_records_printer(info: Kind):
    columns = [c["name"] for c in tables.to_table(info.kind, [])["columnDefinitions"]]
    assert columns == ([c["name"] for c in info.printer[0]] if info.printer else ["Name", "Created At"])


@pytest.mark.parametrize("info", RECORDS, ids=_id)
def test_field_selectors_use_the_records_labels(info: Kind):
    qualified = f"{info.plural}.{info.group}" if info.group else info.plural
    for label in info.field_labels:
        assert selectors.parse_field_selector(f"{label}=x", qualified).requirements[0].field == label
    with pytest.raises(Exception, match="field label not supported: spec.nope"):
        selectors.parse_field_selector("spec.nope=x", qualified)
    assert set(META_FIELDS) >= {"metadata.name"} <= set(info.field_labels)


@pytest.mark.parametrize("info", [k for k in RECORDS if k.model], ids=_id)
def test_the_schema_comes_from_the_records_model(info: Kind):
    assert fieldvalidation.schema_of(info.group, info.kind) is not None
    doc = openapi.openapi_v3_document(info.group_version)
    schemas = doc["components"]["schemas"]
    gvks = [g for s in schemas.values() for g in s.get("x-kubernetes-group-version-kind", [])]
    assert {"group": info.group, "kind": info.kind, "version": info.version} in gvks


def test_openapi_documents_the_group_versions_with_models():
    assert set(openapi.DOCUMENTED) == {k.group_version for k in RECORDS if k.model}


@pytest.mark.parametrize("info", RECORDS, ids=_id)
def test_every_record_has_its_protobuf_message(info: Kind):
    """The kind and its list are messages of k8s.io/api's generated.proto (the codec finds them by group-version
    and kind, not by a table of its own)."""
    for kind in (info.kind, info.list_kind) if "list" in info.verbs else (info.kind,):
        assert protobuf.schema().message_of(info.api_version, kind) is not None, kind


# ---- no other table of kinds ---------------------------------------------------------------------------------------

KIND_NAMES = frozenset(k.kind for k in RECORDS) | frozenset(k.plural for k in RECORDS)
#: the places left that name kinds: the self-reviews' own module, whose ``answer`` tests call (the server answers
#: a review through its record's ``review``); events.k8s.io's conversion checking the body's own type meta
ALLOWED = {("access.py", "answer"), ("eventsv1.py", "to_core")}
#: the names a served kind goes by in the server's code (``kind``, ``info.plural``, ``t.info.group``)
_KIND_VARIABLES = {"kind", "plural", "group", "resource"}


def kind_tables(source: str, names: frozenset[str] = KIND_NAMES) -> list[tuple[int, str]]:
    """(line, enclosing function) of each dict or set with two or more kind names or plurals as keys, and of each
    comparison of a kind variable with a kind's name or plural (``kind == "Pod"``, ``info.plural in ("pods",
    ...)``; not a body's field such as ``target["kind"]``)."""
    found: list[tuple[int, str]] = []

    def strings(nodes: list[ast.expr | None]) -> list[str]:
        return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]

    def visit(node: ast.AST, func: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            func = node.name
        keys: list[str] = []
        if isinstance(node, ast.Dict):
            keys = strings(node.keys)
        elif isinstance(node, ast.Set):
            keys = strings(node.elts)
        if len([k for k in keys if k in names]) >= 2:
            found.append((node.lineno, func))
        left = node.left if isinstance(node, ast.Compare) else None
        name = left.id if isinstance(left, ast.Name) else left.attr if isinstance(left, ast.Attribute) else ""
        if isinstance(node, ast.Compare) and name in _KIND_VARIABLES:
            for op, right in zip(node.ops, node.comparators, strict=True):
                values = strings(right.elts) if isinstance(right, ast.Tuple | ast.List | ast.Set) else strings([right])
                if isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) and any(v in names for v in values):
                    found.append((node.lineno, func))
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(ast.parse(source), "")
    return found


def test_the_scan_sees_a_per_kind_table_and_a_kind_branch():
    source = ('PRINTERS = {"pods": 1, "nodes": 2}\n'
              'def f(kind):\n    if kind == "Pod":\n        return 1\n'
              'def g(info):\n    return info.plural in ("pods", "namespaces")\n'
              'OK = {"pods": 1, "foo": 2}\n')
    assert kind_tables(source) == [(1, ""), (3, "f"), (6, "g")]


@pytest.mark.parametrize("path", sorted(p for p in APISERVER.glob("*.py")), ids=lambda p: p.name)
def test_no_module_outside_the_registry_keeps_a_table_of_kinds(path: Path):
    found = [(line, func) for line, func in kind_tables(path.read_text()) if (path.name, func) not in ALLOWED]
    assert not found, f"{path.name} keeps kinds of its own at lines {[line for line, _ in found]}: give the rule " \
                      "to the kind's record (mockgpu/control/apiserver/registry/)"
