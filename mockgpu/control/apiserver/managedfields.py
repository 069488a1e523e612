"""``metadata.managedFields``: who owns which fields, recorded on every write, and server-side apply.

As ``k8s.io/apimachinery/pkg/util/managedfields/internal`` chains its managers for kube-apiserver
(``NewDefaultFieldManager``): the version check, ``lastAppliedUpdater`` and ``lastAppliedManager`` (the migration
from client-side apply: a ``kubectl`` apply may take over fields whose value its last-applied annotation already
has, and keeps that annotation current), ``skipNonApplied`` (an object whose managedFields were cleared is not
tracked again until the next apply, which first records a ``before-first-apply`` manager owning what is there),
``capManagers`` (at most 10 ``Update`` entries; older ones merge into ``ancient-changes``), ``buildManagerInfo``
(an entry per manager, operation, API version and subresource), ``managedFieldsUpdater`` (times, and an update
adds to the manager's earlier fields), ``stripMeta`` (no one owns ``apiVersion``, ``kind``, name, uid, ...) and
structured-merge-diff's ``Updater`` (``merge/update.go``: ownership moves to the writer of a changed field; an
apply conflicts with other owners of the fields it changes unless forced, and drops the fields its manager
applied before and no longer applies, unless someone else owns them).

Kinds with a status subresource reset ``status`` on the main resource and ``spec`` on ``status`` (upstream's
strategies' ``GetResetFields``; some of them also reset a few metadata fields, not modelled here). The API server
keeps one version per kind, so entries are never converted between API versions.
"""

from __future__ import annotations

import copy
import json
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mockgpu.apimachinery.unstructured import without_nulls
from mockgpu.control.apiserver import smd
from mockgpu.control.apiserver.smd import ABSENT, FieldPath, FieldSet
from mockgpu.control.apiserver.status import (
    FieldError,
    StatusError,
    bad_request,
    field_forbidden,
    field_invalid,
    field_required,
    field_too_long,
    internal_error,
    invalid,
)

Obj = dict[str, Any]
MAX_LENGTH = 128  # validation.FieldManagerMaxLength
MAX_UPDATE_MANAGERS = 10  # DefaultMaxUpdateManagers
APPLY, UPDATE = "Apply", "Update"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_CURRENT = "current-operation"
_BEFORE_FIRST_APPLY = "before-first-apply"
_ANCIENT = "ancient-changes"
_STRIP: set[FieldPath] = {(("f", "apiVersion"),), (("f", "kind"),), (("f", "metadata"),)} | {
    (("f", "metadata"), ("f", f)) for f in ("name", "namespace", "creationTimestamp", "selfLink", "uid",
                                            "clusterName", "generation", "managedFields", "resourceVersion")}


# ---- request options -------------------------------------------------------------------------------------------

def _printable(ch: str) -> bool:
    """Go's ``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def manager_of(field_manager: str, user_agent: str) -> str:
    """``managerOrUserAgent``: the ``fieldManager`` parameter, else the user agent up to its first ``/``
    (non-printable characters dropped, cut at 128 bytes): ``kubectl-create``, ``kubectl-edit``, ..."""
    if field_manager:
        return field_manager
    out, size = [], 0
    for ch in user_agent.split("/")[0]:
        if not _printable(ch):
            continue
        n = len(ch.encode())
        if size + n > MAX_LENGTH:
            break
        out.append(ch)
        size += n
    return "".join(out)


def validate_options(field_manager: str, options_kind: str, apply: bool = False, force: bool | None = None) -> None:
    """``ValidateCreateOptions``/``ValidateUpdateOptions``/``ValidatePatchOptions`` on ``fieldManager`` and
    ``force``: a 422 on the options kind (``PatchOptions.meta.k8s.io "" is invalid: ...``)."""
    errs: list[FieldError] = []
    if apply and not field_manager:
        errs.append(field_required("fieldManager", "is required for apply patch"))
    if not apply and force is not None and options_kind == "PatchOptions":
        errs.append(field_forbidden("force", "may not be specified for non-apply patch"))
    if len(field_manager.encode()) > MAX_LENGTH:
        errs.append(field_too_long("fieldManager", MAX_LENGTH))
    for i, ch in enumerate(field_manager):
        if not _printable(ch):
            errs.append(field_invalid("fieldManager", field_manager,
                                      f"invalid character U+{ord(ch):04X} (at position {i})"))
    if errs:
        err = invalid(options_kind, "", errs, "meta.k8s.io")
        err.status["details"].pop("name", None)
        raise err


# ---- entries ---------------------------------------------------------------------------------------------------

@dataclass
class Owned:
    """One manager's fields (``fieldpath.VersionedSet``)."""

    fields: FieldSet
    api_version: str
    applied: bool


Managed = dict[str, Owned]  # manager identifier (upstream's JSON) → fields
Times = dict[str, str | None]


def identifier(manager: str, operation: str, api_version: str, subresource: str = "") -> str:
    """``BuildManagerIdentifier``: the entry without time and fields as JSON (no API version for Apply)."""
    entry: dict[str, str] = {}
    if manager:
        entry["manager"] = manager
    entry["operation"] = operation
    if api_version and operation != APPLY:
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)


def decode(entries: Any) -> tuple[Managed, Times]:
    """``DecodeManagedFields``; ValueError when an entry is malformed."""
    managed: Managed = {}
    times: Times = {}
    if entries is None:
        return managed, times
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise ValueError(f"managed fields entry {i} is not an object")
        op = e.get("operation")
        if op not in (APPLY, UPDATE):
            raise ValueError("operation must be `Apply` or `Update`")
        if not e.get("apiVersion"):
            raise ValueError("apiVersion must not be empty")
        ftype = e.get("fieldsType")
        if not ftype:
            raise ValueError(f"missing fieldsType in managed fields entry {i}")
        if ftype != "FieldsV1":
            raise ValueError(f'invalid fieldsType "{ftype}" in managed fields entry {i}')
        ident = identifier(str(e.get("manager") or ""), op, str(e["apiVersion"]), str(e.get("subresource") or ""))
        managed[ident] = Owned(smd.from_fields_v1(e.get("fieldsV1") or {}), str(e["apiVersion"]), op == APPLY)
        times[ident] = e.get("time")
    return managed, times


def encode(managed: Managed, times: Times) -> list[Obj] | None:
    """``encodeManagedFields``: entries sorted by operation, time, manager, API version and subresource."""
    out = []
    for ident, owned in managed.items():
        base = json.loads(ident)
        entry: Obj = {}
        if base.get("manager"):
            entry["manager"] = base["manager"]
        entry["operation"] = APPLY if owned.applied else base["operation"]
        entry["apiVersion"] = owned.api_version
        if times.get(ident):
            entry["time"] = times[ident]
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = smd.to_fields_v1(owned.fields)
        if base.get("subresource"):
            entry["subresource"] = base["subresource"]
        out.append(entry)
    out.sort(key=lambda e: (e["operation"], e.get("time") or "", e.get("manager", ""), e["apiVersion"],
                            e.get("subresource", "")))
    return out or None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _is_reset(entries: Any) -> bool:
    """``isResetManagedFields``: an empty list, or one empty entry, clears them."""
    return isinstance(entries, list) and (not entries or (len(entries) == 1 and entries[0] == {}))


def _copy(managed: Managed) -> Managed:
    return {k: Owned(set(v.fields), v.api_version, v.applied) for k, v in managed.items()}


# ---- the context of a write ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scope:
    """What a write is on: the kind's schema, its API version and kind, the subresource, and the reset fields."""

    api_version: str
    kind: str
    subresource: str = ""
    has_status: bool = False

    @property
    def schema(self) -> Any:
        return smd.root_type(self.api_version, self.kind) or "d"

    @property
    def reset(self) -> set[FieldPath]:
        if self.subresource == "status":
            return {(("f", "spec"),)}
        return {(("f", "status"),)} if self.has_status and not self.subresource else set()


def _plain(obj: Obj | None) -> Obj:
    """The object as structured-merge-diff sees it: without its managedFields."""
    out = dict(obj) if obj else {}  # shallow: the walkers only read, and writers copy what they store
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


# ---- structured-merge-diff's Updater -----------------------------------------------------------------------------

class Conflicts(Exception):
    """Fields an apply would change that other managers own: (manager identifier, path) pairs."""

    def __init__(self, items: list[tuple[str, FieldPath]]) -> None:
        super().__init__(f"{len(items)} conflicts")
        self.items = items


def _update_owners(cmp: smd.Comparison, managed: Managed, writer: str, force: bool) -> Managed:
    """``Updater.update``: changed fields leave their other owners (a conflict unless ``force``), removed fields
    leave everyone."""
    changed = cmp.modified | cmp.added
    conflicts: dict[str, FieldSet] = {}
    for ident, owned in managed.items():
        if ident == writer:
            continue
        clash = owned.fields & changed
        if clash:
            conflicts[ident] = clash
    if conflicts and not force:
        raise Conflicts([(ident, path) for ident in sorted(conflicts) for path in smd.iterate(conflicts[ident])])
    for ident, owned in managed.items():
        if ident != writer:
            owned.fields -= conflicts.get(ident, set())
            owned.fields -= cmp.removed
    return {k: v for k, v in managed.items() if v.fields or k == writer}


def _smd_update(scope: Scope, live: Obj, new: Obj, managed: Managed, writer: str) -> Managed:
    """``Updater.Update`` with the writer's set stripped of metadata (``stripMetaManager``)."""
    cmp = smd.compare(scope.schema, live, new).filtered(scope.reset)
    managed = _update_owners(cmp, managed, writer, True)
    mine = managed[writer].fields if writer in managed else set()
    mine = ((mine - cmp.removed) | cmp.modified | cmp.added) - _STRIP
    managed[writer] = Owned(smd.filter_excluded(mine, scope.reset), scope.api_version, False)
    return {k: v for k, v in managed.items() if v.fields}


def _record_update(scope: Scope, live: Obj, new: Obj, managed: Managed, times: Times, manager: str) -> Managed:
    """``capManagers`` → ``buildManagerInfo`` → ``managedFieldsUpdater`` → ``stripMeta`` → the Updater."""
    ident = identifier(manager or "unknown", UPDATE, scope.api_version, scope.subresource)
    managed = _smd_update(scope, live, new, managed, _CURRENT)
    current = managed.pop(_CURRENT, None)
    if current is not None:
        previous = managed.get(ident)
        fields = current.fields | (previous.fields if previous else set())
        managed[ident] = Owned(fields, current.api_version, current.applied)
        times[ident] = _now()
    return _cap(managed, times)


def _cap(managed: Managed, times: Times) -> Managed:
    """``capUpdateManagers``: beyond 10 Update entries the oldest merge into ``ancient-changes`` per version."""
    updaters = [k for k, v in managed.items() if not v.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    updaters.sort(key=lambda k: (times.get(k) or "", k))
    first: dict[str, str] = {}
    length = len(updaters)
    for ident in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        owned = managed[ident]
        bucket = identifier(_ANCIENT, UPDATE, owned.api_version)
        if owned.api_version in first:
            if bucket not in managed:
                managed[bucket] = managed.pop(first[owned.api_version])
            managed[bucket] = Owned(owned.fields | managed[bucket].fields, owned.api_version, owned.applied)
            del managed[ident]
            length -= 1
            times[bucket] = times.get(ident)
        else:
            first[owned.api_version] = ident
    return managed


def update(scope: Scope, live: Obj | None, new: Obj, manager: str) -> list[Obj] | None:
    """The managedFields to store with ``new`` after a create (``live`` None), update or non-apply patch by
    ``manager`` (``FieldManager.UpdateNoErrors``: on an object it cannot walk, the live entries are kept)."""
    live_entries = (live or {}).get("metadata", {}).get("managedFields")
    new_entries = (new.get("metadata") or {}).get("managedFields")
    try:
        live_managed, live_times = decode(live_entries)
    except ValueError:
        live_managed, live_times = {}, {}
    managed, times = live_managed, live_times
    if not scope.subresource:
        if _is_reset(new_entries):
            managed, times = {}, {}
        else:
            try:
                managed, times = decode(new_entries)
            except ValueError:
                managed, times = {}, {}
            if not managed:
                managed, times = live_managed, live_times
    if not managed and live is not None:  # skipNonApplied: no longer tracked until the next apply
        return None
    times = dict(times)
    base = _plain(live) if live is not None else smd.zero(scope.schema) or {}
    try:
        managed = _record_update(scope, base, _plain(new), _copy(managed), times, manager)
    except smd.SchemaError:
        return live_entries if isinstance(live_entries, list) else None
    return encode(managed, times)


# ---- the scale subresource --------------------------------------------------------------------------------------

_REPLICAS: FieldPath = (("f", "spec"), ("f", "replicas"))
_SCALE = Scope("autoscaling/v1", "Scale", "scale")


def scale_update(api_version: str, entries: Any, old_replicas: Any, new_replicas: Any, manager: str) -> Any:
    """The parent's managedFields after ``manager`` writes ``spec.replicas`` through ``/scale``, as upstream's
    ``ScaleHandler`` does: the owners of the parent's ``spec.replicas`` become autoscaling/v1 Scale entries, the
    write is recorded on those (an update of a Scale), and the result maps back (a new owner gets the parent's
    path and API version, without a time; a previous owner that lost it loses it)."""
    try:
        managed, times = decode(entries)
    except ValueError:
        return entries
    sub = {m: Owned({_REPLICAS}, _SCALE.api_version, o.applied) for m, o in managed.items() if _REPLICAS in o.fields}
    sub_times = {m: times.get(m) for m in sub}
    if not sub:  # skipNonApplied: a Scale nobody owns a field of is not tracked
        return entries
    def scale(replicas: Any) -> Obj:  # ScaleSpec.replicas is omitempty: a Scale to 0 has none
        return {"spec": {"replicas": replicas}} if replicas else {"spec": {}}
    sub = _record_update(_SCALE, scale(old_replicas), scale(new_replicas), sub, sub_times, manager)
    out: Managed = {}
    out_times: Times = {}
    for m, o in managed.items():
        if _REPLICAS not in o.fields:
            out[m], out_times[m] = o, times.get(m)
        elif m not in sub:
            if o.fields - {_REPLICAS}:
                out[m], out_times[m] = Owned(o.fields - {_REPLICAS}, o.api_version, o.applied), times.get(m)
        else:
            out[m], out_times[m] = o, times.get(m)
            del sub[m]
    for m, o in sub.items():
        if _REPLICAS in o.fields:
            out[m], out_times[m] = Owned({_REPLICAS}, api_version, o.applied), times.get(m)
    return encode(out, out_times)


# ---- apply -----------------------------------------------------------------------------------------------------

def _prune(scope: Scope, merged: Obj, managed: Managed, last: Owned | None) -> Obj:
    """``Updater.prune``: drop what the applier applied last time and no longer applies, unless another manager
    owns it (``addBackOwnedItems``) or it was not the applier's to drop (``addBackDanglingItems``)."""
    if last is None or not last.fields:
        return merged
    t = scope.schema

    def ensure(fields: FieldSet) -> FieldSet:
        return smd.ensure_named_fields(fields, t)

    pruned = smd.remove_items(t, merged, ensure(last.fields)) or {}
    owned: FieldSet = set().union(*(o.fields for o in managed.values()))
    merged_set = ensure(smd.to_field_set(t, merged))
    pruned = smd.remove_items(t, merged, merged_set - (ensure(smd.to_field_set(t, pruned)) | ensure(owned))) or {}
    dangling = (merged_set - ensure(smd.to_field_set(t, pruned))) & ensure(last.fields)
    return smd.remove_items(t, merged, dangling) or {}


def _smd_apply(scope: Scope, live: Obj, config: Obj, managed: Managed, ident: str,
               force: bool) -> tuple[Obj | None, Managed]:
    """``Updater.Apply``: the merged object (None when nothing changes) and the new owners."""
    t = scope.schema
    merged = smd.merge(t, live, config)
    new: Obj = {} if merged is ABSENT else merged
    last = managed.get(ident)
    fields = smd.filter_excluded(smd.to_field_set(t, config), scope.reset)
    managed[ident] = Owned(fields, scope.api_version, True)
    new = _prune(scope, new, managed, last)
    managed = _update_owners(smd.compare(t, live, new).filtered(scope.reset), managed, ident, force)
    return (None if new == live else new), managed


def _apply_chain(scope: Scope, live: Obj, config: Obj, managed: Managed, times: Times, manager: str,
                 force: bool) -> tuple[Obj, Managed]:
    """``skipNonApplied`` → ... → ``managedFieldsUpdater`` → ``stripMeta`` → ``Updater.Apply``."""
    managed = _copy(managed)
    if not managed:  # the fields already there belong to "before-first-apply"
        empty = {"apiVersion": scope.api_version, "kind": scope.kind}
        managed = _record_update(scope, empty, live, managed, times, _BEFORE_FIRST_APPLY)
    ident = identifier(manager, APPLY, scope.api_version, scope.subresource)
    new, managed = _smd_apply(scope, live, config, managed, ident, force)
    if ident in managed:
        managed[ident].fields -= _STRIP
        if not managed[ident].fields:
            del managed[ident]
    if new is None:
        return copy.deepcopy(live), managed
    times[ident] = _now()
    return new, managed


def _allowed_by_last_applied(scope: Scope, live: Obj) -> FieldSet | None:
    """``allowedConflictsFromLastApplied``: the fields of the last-applied annotation whose value the live
    object still has; None when there is no usable annotation."""
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != scope.api_version:
        return None
    t = scope.schema
    fields = smd.to_field_set(t, last)
    cmp = smd.compare(t, last, live)
    return fields - cmp.modified - cmp.added - cmp.removed


def conflict_error(items: list[tuple[str, FieldPath]]) -> StatusError:
    """``NewConflictError``: 409 Conflict, a message per upstream and a ``FieldManagerConflict`` cause per field."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {_print_manager(m)}",
               "field": smd.path_string(p)} for m, p in items]
    if len(items) == 1:
        message = f"Apply failed with 1 conflict: conflict with {_print_manager(items[0][0])}: " \
                  f"{smd.path_string(items[0][1])}"
    else:
        lines = []
        for manager in sorted({m for m, _ in items}):
            lines.append(f"conflicts with {_print_manager(manager)}:")
            lines.extend(f"- {smd.path_string(p)}" for m, p in items if m == manager)
        message = f"Apply failed with {len(items)} conflicts: " + "\n".join(lines)
    return StatusError({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": message, "reason": "Conflict", "details": {"causes": causes}, "code": 409})


def _print_manager(ident: str) -> str:
    entry = json.loads(ident)
    out = json.dumps(entry.get("manager", ""), ensure_ascii=False)
    if entry.get("subresource"):
        out += f' with subresource {json.dumps(entry["subresource"], ensure_ascii=False)}'
    if entry.get("operation") == UPDATE:
        out += f' using {entry.get("apiVersion", "")}'
    return out


def _gvk_string(api_version: Any, kind: Any) -> str:
    av = api_version if isinstance(api_version, str) else ""
    group, _, version = av.rpartition("/")
    return f"{group}/{version}, Kind={kind if isinstance(kind, str) else ''}"


def apply(scope: Scope, live: Obj | None, config: Obj, manager: str, force: bool) -> Obj:
    """``FieldManager.Apply``: the object ``config`` applied by ``manager`` makes of ``live`` (None: absent), with
    its managedFields; 409 on conflicts unless ``force``, 400 for a config of another kind or version."""
    if (config.get("apiVersion"), config.get("kind")) != (scope.api_version, scope.kind):
        raise bad_request(f"invalid object type: {_gvk_string(config.get('apiVersion'), config.get('kind'))}")
    if (config.get("metadata") or {}).get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    live_obj = live or {}
    try:
        managed, times = decode(live_obj.get("metadata", {}).get("managedFields"))
    except ValueError as exc:
        raise internal_error(f"failed to decode managed fields: {exc}") from None
    errs = smd.validate(scope.schema, config)
    if errs:  # ObjectToTyped of the patch: a plain error, which the API server answers 500 without a reason
        meta: Obj = config["metadata"] if isinstance(config.get("metadata"), dict) else {}
        where = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}; " \
                f"{_gvk_string(scope.api_version, scope.kind)}"
        text = errs[0] if len(errs) == 1 else "errors:\n" + "\n".join(f"  {e}" for e in errs)
        raise StatusError({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": f"failed to create typed patch object ({where}): {text}", "code": 500})
    plain_live, plain_config = _plain(live_obj), _plain(config)
    try:
        try:
            new, managed = _apply_chain(scope, plain_live, plain_config, managed, times, manager, force)
        except Conflicts as exc:
            allowed = _allowed_by_last_applied(scope, plain_live) if manager == "kubectl" else None
            if allowed is None:
                raise
            left = [(m, p) for m, p in exc.items if p not in allowed]
            if left:
                raise Conflicts(left) from None
            new, managed = _apply_chain(scope, plain_live, plain_config, managed, times, manager, True)
    except Conflicts as exc:
        raise conflict_error(exc.items) from None
    except smd.SchemaError as exc:
        raise internal_error(f"failed to create typed patch object: {exc}") from None
    new = dict(without_nulls(new))
    meta = new.setdefault("metadata", {})
    if manager == "kubectl" and (meta.get("annotations") or {}).get(LAST_APPLIED):
        meta["annotations"][LAST_APPLIED] = _last_applied(config)
    entries = encode(managed, times)
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)
    return new


def _last_applied(config: Obj) -> str:
    """``buildLastApplied``: the applied configuration without the annotation, as Go encodes it (sorted keys)."""
    obj = copy.deepcopy(config)
    annotations = (obj.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    return smd.canonical_sorted(obj) + "\n"
