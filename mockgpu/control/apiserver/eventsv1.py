"""events.k8s.io/v1 Events: a second view of the core/v1 Event objects, converted as upstream converts them.

kube-apiserver keeps one Event storage and serves it in both groups; the events.k8s.io/v1 names differ:
``regarding`` ↔ ``involvedObject``, ``note`` ↔ ``message``, ``reportingController`` ↔ ``reportingComponent``,
``deprecatedSource`` ↔ ``source``, ``deprecatedFirstTimestamp``/``deprecatedLastTimestamp``/``deprecatedCount``
↔ ``firstTimestamp``/``lastTimestamp``/``count``. Creating through this group applies upstream's strict
checks for new-style events (``ValidateEventCreate`` for events.k8s.io/v1), and updating through it may change
only the series and metadata (``ValidateEventUpdate``). Field selectors use this group's
labels, mapped to the core ones as upstream's field label conversion does. Simplified: type errors in a body
are reported with the core type's field names.
"""

from __future__ import annotations

from typing import Any

from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.fields import split_term, split_unescaped
from mockgpu.control.apiserver.status import FieldError, field_invalid, field_required

API_VERSION = "events.k8s.io/v1"
#: events.k8s.io/v1 field → core/v1 field (top-level renames; everything else keeps its name)
RENAMES = {"regarding": "involvedObject", "note": "message", "reportingController": "reportingComponent",
           "deprecatedSource": "source", "deprecatedFirstTimestamp": "firstTimestamp",
           "deprecatedLastTimestamp": "lastTimestamp", "deprecatedCount": "count"}
_SAME = ("metadata", "eventTime", "series", "reportingInstance", "action", "reason", "related", "type")
#: fieldSelector labels of events.k8s.io/v1 → the core labels they select on
FIELD_LABELS = {"metadata.name": "metadata.name", "metadata.namespace": "metadata.namespace", "reason": "reason",
                "type": "type", "reportingController": "reportingComponent",
                **{f"regarding.{k}": f"involvedObject.{k}" for k in ("kind", "namespace", "name", "uid", "apiVersion",
                                                                      "resourceVersion", "fieldPath")}}
REASON_LIMIT = ACTION_LIMIT = REPORTING_INSTANCE_LIMIT = 128
NOTE_LIMIT = 1024


def from_core(core: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as events.k8s.io/v1 serves it (eventTime is always present, null when unset)."""
    out: dict[str, Any] = {"kind": "Event", "apiVersion": API_VERSION, "metadata": core.get("metadata", {}),
                           "eventTime": core.get("eventTime")}
    for key in _SAME[2:]:
        if core.get(key) not in (None, "", {}, []):
            out[key] = core[key]
    if isinstance(out.get("series"), dict):
        out["series"] = {k: v for k, v in out["series"].items() if k in ("count", "lastObservedTime")}
    for new, old in RENAMES.items():
        value = core.get(old)
        if new == "regarding":
            out[new] = value or {}
        elif value not in (None, "", 0, {}):
            out[new] = value
    return out


def to_core(event: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event body as the core/v1 object it is stored as (400 for another kind)."""
    kind, api_version = event.get("kind") or "Event", event.get("apiVersion") or API_VERSION
    if kind != "Event" or api_version != API_VERSION:
        version = str(api_version).rsplit("/", 1)[-1]
        raise st.bad_request(f'{kind} in version "{version}" cannot be handled as a Event: no kind "{kind}" is '
                             f'registered for version "{api_version}" in scheme "pkg/api/legacyscheme/scheme.go:30"')
    core: dict[str, Any] = {"apiVersion": "v1", "kind": "Event"}
    for key, value in event.items():
        if key in ("apiVersion", "kind") or value is None:  # JSON null is an absent field
            continue
        core[RENAMES.get(key, key)] = value
    return core


def validate_create(event: dict[str, Any]) -> list[FieldError]:
    """upstream ``ValidateEventCreate`` for events.k8s.io/v1 (on the events.k8s.io body, field names of this
    group): what a new-style event must carry and the deprecated fields it must leave unset."""
    errs: list[FieldError] = []
    if not event.get("eventTime"):
        errs.append(field_required("eventTime"))
    if event.get("type") not in ("Normal", "Warning"):
        errs.append(field_invalid("type", "", f"has invalid value: {event.get('type') or ''}"))
    for key in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"):
        if event.get(key):
            errs.append(field_invalid(key, "", "needs to be unset"))
    for key, limit in (("reportingController", None), ("reportingInstance", REPORTING_INSTANCE_LIMIT),
                       ("action", ACTION_LIMIT), ("reason", REASON_LIMIT)):
        value = event.get(key) or ""
        if not value:
            errs.append(field_required(key))
        elif limit is not None and len(value) > limit:
            errs.append(field_invalid(key, "", f"can have at most {limit} characters"))
    if len(event.get("note") or "") > NOTE_LIMIT:
        errs.append(field_invalid("note", "", f"can have at most {NOTE_LIMIT} characters"))
    return errs


#: fields an update through events.k8s.io/v1 may not change (paths as upstream names them: internal names)
IMMUTABLE = (("involvedObject", "involvedObject"), ("reason", "reason"), ("message", "message"),
             ("source", "source"), ("firstTimestamp", "firstTimestamp"), ("lastTimestamp", "lastTimestamp"),
             ("count", "count"), ("type", "type"), ("eventTime", "eventTime"), ("action", "action"),
             ("related", "related"), ("reportingController", "reportingComponent"),
             ("reportingInstance", "reportingInstance"))


def validate_update(new_core: dict[str, Any], old_core: dict[str, Any]) -> list[FieldError]:
    """upstream ``ValidateEventUpdate`` for events.k8s.io/v1, on the stored (core) forms: only the series
    and metadata of a new-style event may change."""
    return [field_invalid(path, new_core.get(key), "field is immutable") for path, key in IMMUTABLE
            if (new_core.get(key) or None) != (old_core.get(key) or None)]


def translate_field_selector(text: str) -> str:
    """An events.k8s.io fieldSelector rewritten to the core labels (400 for a label this group lacks)."""
    terms = []
    for term in split_unescaped(text or "", ","):
        if not term:
            continue
        try:
            label, op, value = split_term(text, term)
        except ValueError as exc:
            raise st.bad_request(str(exc)) from None
        if label not in FIELD_LABELS:
            raise st.bad_request(f"field label not supported: {label}")
        terms.append(f"{FIELD_LABELS[label]}{'!=' if op == '!=' else '='}{value}")
    return ",".join(terms)
