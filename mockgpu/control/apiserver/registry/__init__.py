"""Every served kind, one record each (``kind.Kind``), one module per API group: the one table the server reads.

As kube-apiserver keeps one ``pkg/registry/<group>/<kind>`` per kind and installs them group by group, the
embedded server's routing (``app``, ``request``), verbs (``handlers``), discovery, tables, field selectors,
OpenAPI, schemas, decoding and ``validation.default_and_validate`` look kinds up here; none of them keeps a
per-kind table or branches on a kind's name. Adding a kind is one record in its group's module (a new group: one
module and one line in :data:`GROUPS`); ``docs/ARCHITECTURE.md`` works an example through.
"""

from __future__ import annotations

from types import ModuleType

from mockgpu.config.featuregates import FeatureGates
from mockgpu.control.apiserver.registry import (
    apps,
    authentication,
    authorization,
    batch,
    coordination,
    core,
    events,
    flowcontrol,
    rbac,
    resource,
    scheduling,
)
from mockgpu.control.apiserver.registry.kind import Kind

#: the served group-versions in discovery's order (``/apis`` lists the named groups in this order)
GROUPS: tuple[ModuleType, ...] = (core, coordination, events, authorization, apps, batch, rbac, resource,
                                  authentication, scheduling, flowcontrol)

KINDS: tuple[Kind, ...] = tuple(k for g in GROUPS for k in g.KINDS)
_SERVED: dict[str, dict[str, Kind]] = {g.GROUP_VERSION: {k.plural: k for k in g.KINDS} for g in GROUPS}
#: kinds kube-apiserver's scheme knows per group-version (served or not): a body of one of them decodes, and
#: then fails conversion when sent to another kind's URL
SCHEME: dict[str, frozenset[str]] = {g.GROUP_VERSION: frozenset(k.kind for k in g.KINDS if k.review is None)
                                     | g.SCHEME_KINDS for g in GROUPS}
# a kind's own record: the stored kind's, not another group's view of it, not a review's
_BY_KIND: dict[str, Kind] = {}
for _k in KINDS:
    if _k.view is None and _k.review is None:
        _BY_KIND.setdefault(_k.kind, _k)


def served(group_version: str, gates: FeatureGates | None = None) -> dict[str, Kind] | None:
    """The kinds of ``"v1"`` (core) or ``"<group>/<version>"`` by plural; None when that is not served. With
    ``gates``, what a server running with them serves (a kind behind a gate that is off is left out); without,
    every kind the registry has."""
    kinds = _SERVED.get(group_version)
    if kinds is None or gates is None or all(k.feature_gate is None for k in kinds.values()):
        return kinds
    on = {p: k for p, k in kinds.items() if k.feature_gate is None or gates.enabled(k.feature_gate)}
    return on or None


def group_versions(gates: FeatureGates | None = None) -> list[str]:
    """The served named group-versions (``<group>/<version>``), in discovery's order (with ``gates``: those a
    server running with them serves)."""
    return [gv for gv in _SERVED if gv != core.GROUP_VERSION and served(gv, gates) is not None]


def by_kind(kind: str) -> Kind | None:
    """The record that stores objects of ``kind`` (what ``default_and_validate`` applies), or None."""
    return _BY_KIND.get(kind)


def lookup(name: str) -> Kind | None:
    """A record by kind, plural or ``<plural>.<group>`` (a kind served in two groups: its storage's record)."""
    for k in KINDS:
        if name in (k.kind, k.plural) or (k.group and name == f"{k.plural}.{k.group}"):
            return k
    return None


def stored_plurals() -> list[str]:
    """Every namespaced store key that holds objects (events.k8s.io events share the core ``events`` key)."""
    return sorted({k.plural for k in KINDS if k.namespaced and k.stored and k.view is None})


def models(group_version: str) -> dict[str, str]:
    """kind → the official client's model of each kind served in ``group_version`` that has one."""
    return {k.kind: k.model for k in (_SERVED.get(group_version) or {}).values() if k.model}


def model_of(group: str, kind: str) -> str | None:
    """The client's model of ``kind`` in ``group`` ("" for core), or None."""
    return next((k.model for k in KINDS if k.group == group and k.kind == kind and k.model), None)
