"""flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations: upstream's defaults
(``pkg/apis/flowcontrol/v1/defaults.go``), validation (``pkg/apis/flowcontrol/validation``), the objects API Priority
and Fairness creates at start (``flowcontrol-bootstrap.json``, upstream's own, see scripts/gen-flowcontrol-bootstrap)
and their printing.

Served as configuration: ``kubectl get flowschemas`` lists upstream's objects, and they can be created, changed and
deleted with upstream's rules (the mandatory ``exempt`` and ``catch-all`` keep their fixed specs). Simplified: no
request is classified or queued by them (the embedded server has no priority and fairness; every request is served
at once), so upstream's config controller is not run either: it neither writes a FlowSchema's ``Dangling``
condition (``kubectl get`` prints ``?`` under MissingPL, upstream ``False`` or ``True``) nor puts back a suggested
object's spec that a user changed. Values that upstream prints as Go structs in an error (a mandatory object's
whole spec, a distinguisher method) are printed as their JSON.
"""

from __future__ import annotations

import copy
import json
import math
from functools import cache
from pathlib import Path
from typing import Any

from mockgpu.apimachinery import names
from mockgpu.apimachinery.status import (
    FieldError,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
)

DATA = Path(__file__).with_name("flowcontrol-bootstrap.json")
Obj = dict[str, Any]

MAX_MATCHING_PRECEDENCE = 10000
MAX_QUEUES = 10 * 1000 * 1000
MAX_HASH_BITS = 60  # shufflesharding.MaxHashBits
VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch")
DISTINGUISHERS = ("ByNamespace", "ByUser")
SUBJECT_KINDS = ("Group", "ServiceAccount", "User")
MANDATORY = ("exempt", "catch-all")
PRESERVE_ZERO_SHARES = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"


@cache
def bootstrap() -> tuple[Obj, ...]:
    """The PriorityLevelConfigurations, then the FlowSchemas, kube-apiserver creates at start."""
    return tuple(json.loads(DATA.read_text())["items"])


def _mandatory_spec(kind: str, name: str) -> Obj | None:
    if name not in MANDATORY:
        return None
    for item in bootstrap():
        if item["kind"] == kind and item["metadata"]["name"] == name:
            return item["spec"]  # type: ignore[no-any-return]
    return None


# ---- a spec as upstream prints it in an error: Go's JSON of the internal struct (field names untagged) --------

def _opt(value: Any, convert: Any) -> Any:
    return convert(value) if isinstance(value, dict) else None


def _strings(value: Any) -> list[str] | None:
    return list(value) if isinstance(value, list) else None


def _items(value: Any, convert: Any) -> list[Any] | None:
    return [convert(v if isinstance(v, dict) else {}) for v in value] if isinstance(value, list) else None


def go_flowschema_spec(spec: Obj) -> dict[str, Any]:
    def subject(s: Obj) -> dict[str, Any]:
        return {"Kind": s.get("kind") or "", "User": _opt(s.get("user"), lambda u: {"Name": u.get("name") or ""}),
                "Group": _opt(s.get("group"), lambda g: {"Name": g.get("name") or ""}),
                "ServiceAccount": _opt(s.get("serviceAccount"), lambda a: {"Namespace": a.get("namespace") or "",
                                                                           "Name": a.get("name") or ""})}

    def resource_rule(r: Obj) -> dict[str, Any]:
        return {"Verbs": _strings(r.get("verbs")), "APIGroups": _strings(r.get("apiGroups")),
                "Resources": _strings(r.get("resources")), "ClusterScope": bool(r.get("clusterScope")),
                "Namespaces": _strings(r.get("namespaces"))}

    def rule(r: Obj) -> dict[str, Any]:
        return {"Subjects": _items(r.get("subjects"), subject),
                "ResourceRules": _items(r.get("resourceRules"), resource_rule),
                "NonResourceRules": _items(r.get("nonResourceRules"), lambda n: {
                    "Verbs": _strings(n.get("verbs")), "NonResourceURLs": _strings(n.get("nonResourceURLs"))})}

    return {"PriorityLevelConfiguration": {"Name": (spec.get("priorityLevelConfiguration") or {}).get("name") or ""},
            "MatchingPrecedence": spec.get("matchingPrecedence") or 0,
            "DistinguisherMethod": _opt(spec.get("distinguisherMethod"), lambda d: {"Type": d.get("type") or ""}),
            "Rules": _items(spec.get("rules"), rule)}


def go_priority_level_spec(spec: Obj) -> dict[str, Any]:
    def queuing(q: Obj) -> dict[str, Any]:
        return {"Queues": q.get("queues") or 0, "HandSize": q.get("handSize") or 0,
                "QueueLengthLimit": q.get("queueLengthLimit") or 0}

    def limited(c: Obj) -> dict[str, Any]:
        lr = c.get("limitResponse") or {}
        return {"NominalConcurrencyShares": c.get("nominalConcurrencyShares") or 0,
                "LimitResponse": {"Type": lr.get("type") or "", "Queuing": _opt(lr.get("queuing"), queuing)},
                "LendablePercent": c.get("lendablePercent"), "BorrowingLimitPercent": c.get("borrowingLimitPercent")}

    return {"Type": spec.get("type") or "", "Limited": _opt(spec.get("limited"), limited),
            "Exempt": _opt(spec.get("exempt"), lambda e: {"NominalConcurrencyShares": e.get("nominalConcurrencyShares"),
                                                          "LendablePercent": e.get("lendablePercent")})}


# ---- defaults --------------------------------------------------------------------------------------------------

def prepare_flowschema(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    spec = obj.get("spec")
    if isinstance(spec, dict) and not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = 1000
    return obj


def prepare_priority_level(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    exempt, limited = spec.get("exempt"), spec.get("limited")
    if isinstance(exempt, dict):
        exempt.setdefault("nominalConcurrencyShares", 0)
        exempt.setdefault("lendablePercent", 0)
    if isinstance(limited, dict):
        if limited.get("nominalConcurrencyShares") is None:
            limited["nominalConcurrencyShares"] = 30
        limited.setdefault("lendablePercent", 0)
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if isinstance(queuing, dict):
            for key, value in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
                if not queuing.get(key):
                    queuing[key] = value
    return obj


# ---- FlowSchema ------------------------------------------------------------------------------------------------

def validate_flowschema(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateFlowSchema`` (an update is validated as a create), ObjectMeta being the server's."""
    name = (obj.get("metadata") or {}).get("name") or ""
    spec = obj.get("spec") or {}
    errs = _flowschema_spec(name, spec)
    mandatory = _mandatory_spec("FlowSchema", name)
    if mandatory is not None and spec != mandatory:
        errs.append(field_invalid("spec", go_flowschema_spec(spec), f"spec of '{name}' must equal the fixed value"))
    return errs + validate_conditions(obj, old)


def _flowschema_spec(name: str, spec: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    precedence = spec.get("matchingPrecedence") or 0
    if precedence <= 0:
        errs.append(field_invalid("spec.matchingPrecedence", precedence, "must be a positive value"))
    if precedence > MAX_MATCHING_PRECEDENCE:
        errs.append(field_invalid("spec.matchingPrecedence", precedence,
                                  f"must not be greater than {MAX_MATCHING_PRECEDENCE}"))
    if precedence == 1 and name != "exempt":
        errs.append(field_invalid("spec.matchingPrecedence", precedence,
                                  "only the schema named 'exempt' may have matchingPrecedence 1"))
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type") not in DISTINGUISHERS:
        errs.append(field_not_supported("spec.distinguisherMethod.type", {"Type": method.get("type") or ""},
                                        DISTINGUISHERS))
    pl = (spec.get("priorityLevelConfiguration") or {}).get("name") or ""
    if pl:
        errs += [field_invalid("spec.priorityLevelConfiguration.name", pl, m) for m in names.dns1123_subdomain(pl)]
    else:
        errs.append(field_required("spec.priorityLevelConfiguration.name", "must reference a priority level"))
    for i, rule in enumerate(spec.get("rules") or []):
        errs += _rule(rule if isinstance(rule, dict) else {}, f"spec.rules[{i}]")
    return errs


def _rule(rule: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    subjects = rule.get("subjects") or []
    if subjects:
        for i, subject in enumerate(subjects):
            errs += _subject(subject if isinstance(subject, dict) else {}, f"{path}.subjects[{i}]")
    else:
        errs.append(field_required(f"{path}.subjects", "subjects must contain at least one value"))
    resource_rules, non_resource_rules = rule.get("resourceRules") or [], rule.get("nonResourceRules") or []
    if not resource_rules and not non_resource_rules:
        errs.append(field_required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
    for i, r in enumerate(resource_rules):
        errs += _resource_rule(r if isinstance(r, dict) else {}, f"{path}.resourceRules[{i}]")
    for i, r in enumerate(non_resource_rules):
        errs += _non_resource_rule(r if isinstance(r, dict) else {}, f"{path}.nonResourceRules[{i}]")
    return errs


_FORBIDDEN = {"user": "user is forbidden when subject kind is not 'User'",
              "group": "group is forbidden when subject kind is not 'Group'",
              "serviceAccount": "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"}


def _subject(subject: Obj, path: str) -> list[FieldError]:
    kind = subject.get("kind") or ""
    field = {"ServiceAccount": "serviceAccount", "User": "user", "Group": "group"}.get(kind)
    if field is None:
        return [field_not_supported(f"{path}.kind", kind, SUBJECT_KINDS)]
    errs: list[FieldError] = []
    value = subject.get(field)
    if not isinstance(value, dict):
        errs.append(field_required(f"{path}.{field}", f"{field} is required when subject kind is '{kind}'"))
    elif field == "serviceAccount":
        sa, ns = value.get("name") or "", value.get("namespace") or ""
        if not sa:
            errs.append(field_required(f"{path}.serviceAccount.name"))
        elif sa != "*":
            errs += [field_invalid(f"{path}.serviceAccount.name", sa, m) for m in names.dns1123_subdomain(sa)]
        if ns:
            errs += [field_invalid(f"{path}.serviceAccount.namespace", ns, m) for m in names.dns1123_label(ns)]
        else:
            errs.append(field_required(f"{path}.serviceAccount.namespace",
                                       "must specify namespace for service account"))
    elif not value.get("name"):
        errs.append(field_required(f"{path}.{field}.name"))
    order = {"serviceAccount": ("user", "group"), "user": ("serviceAccount", "group"),
             "group": ("serviceAccount", "user")}[field]
    errs += [field_forbidden(f"{path}.{other}", _FORBIDDEN[other]) for other in order if subject.get(other) is not None]
    return errs


def _verbs(verbs: list[str], path: str) -> list[FieldError]:
    if not verbs:
        return [field_required(f"{path}.verbs", "verbs must contain at least one value")]
    if "*" in verbs:
        return [field_invalid(f"{path}.verbs", verbs, "if '*' is present, must not specify other verbs")] \
            if len(verbs) > 1 else []
    if not set(verbs) <= set(VERBS):
        return [field_not_supported(f"{path}.verbs", verbs, VERBS)]
    return []


def _resource_rule(rule: Obj, path: str) -> list[FieldError]:
    errs = _verbs(rule.get("verbs") or [], path)
    groups, resources, namespaces = rule.get("apiGroups") or [], rule.get("resources") or [], \
        rule.get("namespaces") or []
    if not groups:
        errs.append(field_required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    elif len(groups) > 1 and "*" in groups:
        errs.append(field_invalid(f"{path}.apiGroups", groups, "if '*' is present, must not specify other api groups"))
    if not resources:
        errs.append(field_required(f"{path}.resources", "resource rules must supply at least one resource"))
    elif len(resources) > 1 and "*" in resources:
        errs.append(field_invalid(f"{path}.resources", resources,
                                  "if '*' is present, must not specify other resources"))
    if not namespaces and not rule.get("clusterScope"):
        errs.append(field_required(f"{path}.namespaces",
                                   "resource rules that are not cluster scoped must supply at least one namespace"))
    elif "*" in namespaces:
        if len(namespaces) > 1:
            errs.append(field_invalid(f"{path}.namespaces", namespaces,
                                      "if '*' is present, must not specify other namespaces"))
    else:
        intro = "each member of this list must be '*' or a DNS-1123 label; "
        errs += [field_invalid(f"{path}.namespaces[{i}]", ns, intro + m)
                 for i, ns in enumerate(namespaces) for m in names.dns1123_label(ns)]
    return errs


def _non_resource_rule(rule: Obj, path: str) -> list[FieldError]:
    errs = _verbs(rule.get("verbs") or [], path)
    urls = rule.get("nonResourceURLs") or []
    if not urls:
        errs.append(field_required(f"{path}.nonResourceURLs", "nonResourceURLs must contain at least one value"))
    elif "*" in urls:
        if len(urls) > 1:
            errs.append(field_invalid(f"{path}.nonResourceURLs", urls,
                                      "if '*' is present, must not specify other non-resource URLs"))
    else:
        for i, url in enumerate(urls):
            msg = _url_problem(url)
            if msg:
                errs.append(field_invalid(f"{path}.nonResourceURLs[{i}]", url, msg))
    return errs


def _url_problem(url: str) -> str | None:
    """``ValidateNonResourceURLPath``."""
    if not url:
        return "must not be empty"
    if url == "/":
        return None
    if not url.startswith("/"):
        return "must start with slash"
    if " " in url:
        return "must not contain white-space"
    if "//" in url:
        return "must not contain double slash"
    stars = url.count("*")
    if stars > 1 or (stars == 1 and url[-2:] != "/*"):
        return "wildcard can only do suffix matching"
    return None


def validate_conditions(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``Validate{FlowSchema,PriorityLevelConfiguration}Status``: each condition has a type, none twice."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, cond in enumerate((obj.get("status") or {}).get("conditions") or []):
        kind = (cond or {}).get("type") or ""
        if kind in seen:
            errs.append(field_duplicate(f"status.conditions[{i}].type", kind))
        seen.add(kind)
        if not kind:
            errs.append(field_required(f"status.conditions[{i}].type"))
    return errs


# ---- PriorityLevelConfiguration --------------------------------------------------------------------------------

def validate_priority_level(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidatePriorityLevelConfiguration`` (an update is validated as a create). The rules v1.37.2 marks as covered
    by declarative validation (``MarkCoveredByDeclarative``: a union member forbidden or required, a type required)
    are reported as the declarative ones word them, with no detail, after the others."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    errs: list[FieldError] = []
    covered: list[FieldError] = []
    if PRESERVE_ZERO_SHARES in (meta.get("annotations") or {}):
        errs.append(field_forbidden("metadata.annotations", f"annotation '{PRESERVE_ZERO_SHARES}' is forbidden"))
    spec = obj.get("spec") or {}
    kind = spec.get("type") or ""
    if (name == "exempt") != (kind == "Exempt"):
        errs.append(field_invalid("spec.type", kind, "must be 'Exempt' if and only if `name` is 'exempt'"))
    if kind == "Exempt":
        if spec.get("limited") is not None:
            covered.append(field_forbidden("spec.limited", ""))
        if isinstance(spec.get("exempt"), dict):
            errs += _shares_and_lending(spec["exempt"], "spec.exempt")
    elif kind == "Limited":
        if spec.get("exempt") is not None:
            covered.append(field_forbidden("spec.exempt", ""))
        if not isinstance(spec.get("limited"), dict):
            covered.append(field_required("spec.limited"))
        else:
            errs += _limited(spec["limited"], "spec.limited", covered)
    elif not kind:
        covered.append(field_required("spec.type"))
    else:
        errs.append(field_not_supported("spec.type", kind, ("Exempt", "Limited")))
    mandatory = _mandatory_spec("PriorityLevelConfiguration", name)
    if mandatory is not None:
        have = copy.deepcopy(spec)
        if name == "exempt":
            have["exempt"] = copy.deepcopy(mandatory.get("exempt"))
        if have != mandatory:
            tail = " except the 'spec.exempt' field" if name == "exempt" else ""
            errs.append(field_invalid("spec", go_priority_level_spec(spec),
                                      f"spec of '{name}'{tail} must equal the fixed value"))
    return errs + validate_conditions(obj, old) + covered


def _shares_and_lending(cfg: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    shares, lendable = cfg.get("nominalConcurrencyShares"), cfg.get("lendablePercent")
    if shares is not None and shares < 0:
        errs.append(field_invalid(f"{path}.nominalConcurrencyShares", shares, "must be a non-negative integer"))
    if lendable is not None and not 0 <= lendable <= 100:
        errs.append(field_invalid(f"{path}.lendablePercent", lendable, "must be between 0 and 100, inclusive"))
    return errs


def _limited(cfg: Obj, path: str, covered: list[FieldError]) -> list[FieldError]:
    shares = cfg.get("nominalConcurrencyShares") or 0
    errs: list[FieldError] = []
    if shares < 0:
        errs.append(field_invalid(f"{path}.nominalConcurrencyShares", shares, "must be a non-negative integer"))
    errs += _limit_response(cfg.get("limitResponse") or {}, f"{path}.limitResponse", covered)
    lendable, borrowing = cfg.get("lendablePercent"), cfg.get("borrowingLimitPercent")
    if lendable is not None and not 0 <= lendable <= 100:
        errs.append(field_invalid(f"{path}.lendablePercent", lendable, "must be between 0 and 100, inclusive"))
    if borrowing is not None and borrowing < 0:
        errs.append(field_invalid(f"{path}.borrowingLimitPercent", borrowing,
                                  "if specified, must be a non-negative integer"))
    return errs


def _limit_response(lr: Obj, path: str, covered: list[FieldError]) -> list[FieldError]:
    kind = lr.get("type") or ""
    if kind == "Reject":
        if lr.get("queuing") is not None:
            covered.append(field_forbidden(f"{path}.queuing", ""))
        return []
    if kind == "Queue":
        queuing = lr.get("queuing")
        if not isinstance(queuing, dict):
            covered.append(field_required(f"{path}.queuing"))
            return []
        return _queuing(queuing, f"{path}.queuing")
    if not kind:
        covered.append(field_required(f"{path}.type"))
        return []
    return [field_not_supported(f"{path}.type", kind, ("Queue", "Reject"))]


def _queuing(q: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    limit, queues, hand = q.get("queueLengthLimit") or 0, q.get("queues") or 0, q.get("handSize") or 0
    if limit <= 0:
        errs.append(field_invalid(f"{path}.queueLengthLimit", limit, "must be positive"))
    if queues <= 0:
        errs.append(field_invalid(f"{path}.queues", queues, "must be positive"))
    elif queues > MAX_QUEUES:
        errs.append(field_invalid(f"{path}.queues", queues, f"must not be greater than {MAX_QUEUES}"))
    if hand <= 0:
        errs.append(field_invalid(f"{path}.handSize", hand, "must be positive"))
    elif hand > queues:
        errs.append(field_invalid(f"{path}.handSize", hand, f"should not be greater than queues ({queues})"))
    elif math.ceil(math.log2(queues) * hand) > MAX_HASH_BITS:
        errs.append(field_invalid(f"{path}.handSize", hand, f"required entropy bits of deckSize {queues} and handSize "
                                                            f"{hand} should not be greater than {MAX_HASH_BITS}"))
    return errs


# ---- printing --------------------------------------------------------------------------------------------------

def flowschema_cells(obj: Obj) -> list[Any]:
    """``printFlowSchema`` between Name and Age (MissingPL after Age: see ``FLOWSCHEMA_ROW``)."""
    spec = obj.get("spec") or {}
    method = spec.get("distinguisherMethod")
    return [(spec.get("priorityLevelConfiguration") or {}).get("name") or "", spec.get("matchingPrecedence") or 0,
            method.get("type") or "" if isinstance(method, dict) else "<none>"]


def flowschema_order(obj: Obj) -> tuple[int, str]:
    """``FlowSchemaSequence``: by matching precedence, then name (``kubectl get flowschemas``' order)."""
    return ((obj.get("spec") or {}).get("matchingPrecedence") or 0, (obj.get("metadata") or {}).get("name") or "")


def missing_pl(obj: Obj) -> str:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Dangling":
            return str(cond.get("status") or "")
    return "?"


def priority_level_cells(obj: Obj) -> list[Any]:
    """``printPriorityLevelConfiguration`` between Name and Age."""
    spec = obj.get("spec") or {}
    limited = spec.get("limited")
    out: list[Any] = [spec.get("type") or "", "<none>", "<none>", "<none>", "<none>"]
    if isinstance(limited, dict):
        out[1] = limited.get("nominalConcurrencyShares") or 0
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if isinstance(queuing, dict):
            out[2:] = [queuing.get("queues") or 0, queuing.get("handSize") or 0, queuing.get("queueLengthLimit") or 0]
    return out
