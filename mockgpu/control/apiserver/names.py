"""Object metadata validation (``ValidateObjectMeta``, labels, annotations, immutable fields) as kube-apiserver's
``pkg/api/validation`` does it, as field errors. The name rules themselves are ``mockgpu.apimachinery.names``
(re-exported here, so the API server's modules call ``names.<rule>``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mockgpu.apimachinery.names import (  # noqa: F401  (re-exported: the API server's modules call names.<rule>)
    DNS1123_LABEL_MAX,
    DNS1123_SUBDOMAIN_MAX,
    GENERATED_SUFFIX_LENGTH,
    LABEL_VALUE_MAX,
    MAX_GENERATED_NAME_LENGTH,
    NAME_ALPHABET,
    QUALIFIED_NAME_MAX,
    configmap_key,
    dns1123_label,
    dns1123_subdomain,
    generate_name,
    label_value,
    name_is_dns_label,
    name_is_dns_subdomain,
    path_segment_name,
    qualified_name,
)
from mockgpu.control.apiserver.status import FieldError, field_forbidden, field_invalid, field_required, field_too_long

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
NameFn = Callable[[str, bool], list[str]]


def validate_object_meta(meta: dict[str, Any], namespaced: bool, name_fn: NameFn) -> list[FieldError]:
    errs: list[FieldError] = []
    name, gen = meta.get("name") or "", meta.get("generateName") or ""
    if gen:
        errs += [field_invalid("metadata.generateName", gen, m) for m in name_fn(gen, True)]
    if not name:
        errs.append(field_required("metadata.name", "name or generateName is required"))
    else:
        errs += [field_invalid("metadata.name", name, m) for m in name_fn(name, False)]
    ns = meta.get("namespace") or ""
    if namespaced:
        if not ns:
            errs.append(field_required("metadata.namespace"))
        else:
            errs += [field_invalid("metadata.namespace", ns, m) for m in dns1123_label(ns)]
    errs += validate_labels(meta.get("labels") or {}, "metadata.labels")
    annotations = meta.get("annotations") or {}
    for key in annotations:
        errs += [field_invalid("metadata.annotations", key, m) for m in qualified_name(key.lower())]
    if sum(len(k) + len(v) for k, v in annotations.items()) > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(field_too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE_LIMIT))
    errs += validate_finalizers(meta.get("finalizers") or [])
    for i, ref in enumerate(meta.get("ownerReferences") or []):
        for key in ("apiVersion", "kind", "name", "uid"):
            if not (ref or {}).get(key):
                detail = {"apiVersion": "version must not be empty", "kind": "must not be empty",
                          "name": "must not be empty", "uid": "uid must not be empty"}[key]
                errs.append(field_invalid(f"metadata.ownerReferences[{i}].{key}" if key != "uid" else
                                          f"metadata.ownerReferences[{i}].uid", (ref or {}).get(key, ""), detail))
    return errs


#: core's standard finalizer names (``helper.IsStandardFinalizerName``): kubernetes, orphan, foregroundDeletion
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def validate_finalizers(finalizers: list[str]) -> list[FieldError]:
    """apimachinery's ``ValidateFinalizers`` (each a qualified name, not both orphan and foregroundDeletion) and
    core's ``validateKubeFinalizerName`` (a name without a '/' must be a standard one)."""
    errs: list[FieldError] = []
    for i, fin in enumerate(finalizers):
        if not isinstance(fin, str):
            continue  # a wrong type is the decoder's 400
        errs += [field_invalid("metadata.finalizers", fin, m) for m in qualified_name(fin)]
        if "/" not in fin and fin not in STANDARD_FINALIZERS:
            errs.append(field_invalid(f"metadata.finalizers[{i}]", fin,
                                      "name is neither a standard finalizer name nor is it fully qualified"))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(field_invalid("metadata.finalizers", _GoStrings(finalizers),
                                  "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs


class _GoStrings:
    """A []string as a field error prints it (``%#v``): ``[]string{"orphan", "foregroundDeletion"}``."""

    def __init__(self, items: list[str]) -> None:
        self.items = items

    def __str__(self) -> str:
        return "[]string{" + ", ".join(json.dumps(i) for i in self.items) + "}"


def validate_labels(labels: dict[str, str], path: str) -> list[FieldError]:
    """upstream ``ValidateLabels``: each key a qualified name, each value a label value."""
    errs: list[FieldError] = []
    for key, value in labels.items():
        errs += [field_invalid(path, key, m) for m in qualified_name(key)]
        errs += [field_invalid(path, value, m) for m in label_value(value)]
    return errs


def validate_meta_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("name", "namespace", "uid", "creationTimestamp"):
        if old.get(key) and new.get(key) and new.get(key) != old.get(key):
            errs.append(field_invalid(f"metadata.{key}", new.get(key), "field is immutable"))
    if old.get("deletionTimestamp"):  # upstream ValidateNoNewFinalizers: Go's %#v of the sorted new names
        extra = sorted(set(new.get("finalizers") or []) - set(old.get("finalizers") or []))
        if extra:
            listed = ", ".join(f'"{f}"' for f in extra)
            errs.append(field_forbidden("metadata.finalizers", "no new finalizers can be added if the object is "
                                        f"being deleted, found new finalizers []string{{{listed}}}"))
    return errs


