"""The Namespace's strategy and storage rules, and the NamespaceLifecycle admission check on creates.

Upstream: ``pkg/registry/core/namespace/strategy.go`` (``PrepareForCreate`` adds the ``kubernetes`` finalizer and sets
phase Active; an update keeps ``spec.finalizers`` and ``status``; ``/status`` changes the status only; ``/finalize``
changes ``spec.finalizers`` only), ``pkg/apis/core/validation`` (``ValidateNamespace``,
``ValidateNamespaceStatusUpdate``, ``ValidateNamespaceFinalizeUpdate``), ``storage/storage.go`` (the first DELETE
only marks the namespace: ``deletionTimestamp``, phase Terminating, the ``orphan``/``foregroundDeletion`` finalizers
the request's propagation asks for; later DELETEs remove it once ``spec.finalizers`` is empty; an update that
empties them deletes it, ``ShouldDeleteNamespaceDuringUpdate``) and apiserver's
``plugin/namespace/lifecycle`` (no new content in a Terminating namespace: 403 with cause ``NamespaceTerminating``).
The contents are removed by kube-controller-manager's namespace controller (``controllers/namespace.py``).
"""

from __future__ import annotations

import copy
from typing import Any

from mockgpu.control.apiserver import defaults
from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.names import STANDARD_FINALIZERS, qualified_name
from mockgpu.control.apiserver.status import FieldError, field_invalid

Obj = dict[str, Any]
KUBERNETES_FINALIZER = "kubernetes"
#: the garbage collector's finalizers a DELETE's propagation policy sets on the namespace (``shouldHave*Finalizer``)
ORPHAN, FOREGROUND = "orphan", "foregroundDeletion"


def prepare_namespace(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """``PrepareForCreate``/``PrepareForUpdate`` of the main, status and finalize strategies."""
    obj = defaults.default_namespace(obj)
    spec = obj.setdefault("spec", {})
    if old is None:
        obj["status"] = {"phase": "Active"}
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list) or KUBERNETES_FINALIZER not in finalizers:
            spec["finalizers"] = (finalizers if isinstance(finalizers, list) else []) + [KUBERNETES_FINALIZER]
        return obj
    old_spec = old.get("spec") or {}
    if subresource == "status":
        obj["spec"] = copy.deepcopy(old_spec)
        return obj
    obj["status"] = copy.deepcopy(old.get("status") or {})
    if subresource != "finalize":  # the main resource keeps the finalizers; /finalize sets them
        if "finalizers" in old_spec:
            spec["finalizers"] = copy.deepcopy(old_spec["finalizers"])
        else:
            spec.pop("finalizers", None)
    elif not spec.get("finalizers"):
        spec.pop("finalizers", None)  # omitempty: an empty list is not kept
    return obj


def _finalizer_errors(finalizers: Any, indexed: bool) -> list[FieldError]:
    """``validateFinalizerName`` for each of ``spec.finalizers`` (the path indexed on /finalize, as upstream)."""
    errs: list[FieldError] = []
    for i, fin in enumerate(finalizers if isinstance(finalizers, list) else []):
        if not isinstance(fin, str):
            continue  # a wrong type is the decoder's 400
        path = f"spec.finalizers[{i}]" if indexed else "spec.finalizers"
        errs += [field_invalid(path, fin, m) for m in qualified_name(fin)]
        if "/" not in fin and fin not in STANDARD_FINALIZERS:
            errs.append(field_invalid(path, fin, "name is neither a standard finalizer name nor is it fully qualified"))
    return errs


def validate_namespace(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateNamespace`` (the finalizer names); an update adds only ObjectMeta's rules (checked generically)."""
    return _finalizer_errors((obj.get("spec") or {}).get("finalizers"), indexed=False)


def validate_namespace_status(obj: Obj, old: Obj) -> list[FieldError]:
    """``ValidateNamespaceStatusUpdate``: the phase follows ``deletionTimestamp``."""
    phase = (obj.get("status") or {}).get("phase")
    if not (obj.get("metadata") or {}).get("deletionTimestamp"):
        if phase != "Active":
            return [field_invalid("status.Phase", phase or "", "may only be 'Active' if `deletionTimestamp` is empty")]
    elif phase != "Terminating":
        return [field_invalid("status.Phase", phase or "",
                              "may only be 'Terminating' if `deletionTimestamp` is not empty")]
    return []


def validate_namespace_finalize(obj: Obj, old: Obj) -> list[FieldError]:
    """``ValidateNamespaceFinalizeUpdate``."""
    return _finalizer_errors((obj.get("spec") or {}).get("finalizers"), indexed=True)


def held(ns: Obj) -> bool:
    """Whether the namespace's own finalizers (``spec.finalizers``) still keep it."""
    return bool((ns.get("spec") or {}).get("finalizers"))


def mark_terminating(ns: Obj, deleted_at: str, propagation: str | None) -> Obj:
    """The first DELETE: ``deletionTimestamp``, phase Terminating, and the garbage collector's finalizers as the
    request's propagation policy asks (``shouldHaveOrphanFinalizer``/``shouldHaveDeleteDependentsFinalizer``)."""
    new = copy.deepcopy(ns)
    meta = new["metadata"]
    meta.setdefault("deletionTimestamp", deleted_at)
    new.setdefault("status", {})["phase"] = "Terminating"
    current = list(meta.get("finalizers") or [])
    want = {ORPHAN: ORPHAN in current, FOREGROUND: FOREGROUND in current}
    if propagation is not None:
        want = {ORPHAN: propagation == "Orphan", FOREGROUND: propagation == "Foreground"}
    if any((f in current) != on for f, on in want.items()):
        meta["finalizers"] = [f for f in current if f not in want] + [f for f, on in want.items() if on]
        if not meta["finalizers"]:
            del meta["finalizers"]
    return new


def terminating_forbidden(resource: str, group: str, name: str, namespace: str) -> st.StatusError:
    """NamespaceLifecycle's 403 for a create in a Terminating namespace, with its ``NamespaceTerminating`` cause."""
    err = st.forbidden(resource, name, f"unable to create new content in namespace {namespace} because it is being "
                                       "terminated", group=group)
    err.status.setdefault("details", {})["causes"] = [
        {"reason": "NamespaceTerminating", "message": f"namespace {namespace} is being terminated",
         "field": "metadata.namespace"}]
    return err
