"""ListOptions from a list, watch or deletecollection query, decoded and validated as kube-apiserver does.

Upstream (``k8s.io/apiserver/pkg/endpoints/handlers/get.go`` ``listOpts``, and ``delete.go`` for
deletecollection) first decodes the query into ``metainternalversion.ListOptions`` with the parameter codec
(``k8s.io/apimachinery/pkg/runtime/conversion.go``): the first value of each parameter counts; integers go
through Go's ``strconv.ParseInt`` (a failure is a 400 whose message is the ``NumError``); a boolean is false
only for ``0`` or ``false`` (any case), and a ``*bool`` such as ``sendInitialEvents`` is set whenever the
parameter is present. Then ``SetListOptionsDefaults`` (``internalversion/defaults.go``; the WatchList feature
is on in v1.37) and ``ValidateListOptions`` (``internalversion/validation/validation.go``), whose errors are a
422 on ``ListOptions.meta.k8s.io``.

Simplified: the WatchList defaults are applied for validation only. Upstream also turns a plain watch from
resourceVersion "" or "0" into a watch-list (initial events then a bookmark when bookmarks are allowed); the
embedded watch keeps the legacy stream for it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from mockgpu.control.apiserver import selectors
from mockgpu.control.apiserver import status as st

EXACT, NOT_OLDER_THAN = "Exact", "NotOlderThan"
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2 ** 63), 2 ** 63)


def _first(q: Any, name: str) -> str | None:
    values = q.getall(name, [])
    return values[0] if values else None


def go_bool(value: str | None) -> bool:
    """``Convert_Slice_string_To_bool``: only absence, ``0`` and ``false`` (any case) are false."""
    return value is not None and value != "0" and value.lower() != "false"


def go_int64(q: Any, name: str) -> int | None:
    """The first value of ``name`` through ``strconv.ParseInt(s, 10, 64)``; None when absent."""
    text = _first(q, name)
    if text is None:
        return None
    quoted = json.dumps(text, ensure_ascii=False)  # strconv.Quote, near enough for the ASCII a client sends
    if not _GO_INT.fullmatch(text):
        raise st.bad_request(f"strconv.ParseInt: parsing {quoted}: invalid syntax")
    value = int(text)
    if value not in _INT64:
        raise st.bad_request(f"strconv.ParseInt: parsing {quoted}: value out of range")
    return value


@dataclass(frozen=True)
class ListOptions:
    watch: bool
    resource_version: str = ""
    match: str = ""
    continue_token: str = ""
    limit: int = 0
    timeout_seconds: int | None = None
    send_initial_events: bool | None = None
    allow_bookmarks: bool = False


def decode(q: Any, watch: bool) -> ListOptions:
    """The query as ListOptions (400 on an integer Go cannot parse), validated (422); ``watch`` is the verb's."""
    timeout = go_int64(q, "timeoutSeconds")  # the order of the fields in ListOptions, as the codec walks them
    limit = go_int64(q, "limit")
    send = _first(q, "sendInitialEvents")
    opts = ListOptions(watch=watch, resource_version=_first(q, "resourceVersion") or "",
                       match=_first(q, "resourceVersionMatch") or "", continue_token=_first(q, "continue") or "",
                       limit=limit or 0, timeout_seconds=timeout,
                       send_initial_events=None if send is None else go_bool(send),
                       allow_bookmarks=go_bool(_first(q, "allowWatchBookmarks")))
    # the selectors are parsed as the internal ListOptions are made from them (400), before the options are
    # validated (422); whether a field label is supported is checked after that (``selectors.field_selector``)
    selectors.parse_label_selector(_first(q, "labelSelector"))
    selectors.field_terms(_first(q, "fieldSelector"))
    causes = validate(_with_defaults(opts))
    if causes:
        err = st.invalid("ListOptions", "", causes, "meta.k8s.io")
        err.status["details"].pop("name", None)  # Status details omit an empty name
        raise err
    return opts


def _with_defaults(o: ListOptions) -> ListOptions:
    """``SetListOptionsDefaults`` with WatchList on: a watch from "" or "0" asks for the initial events."""
    if o.send_initial_events is not None or o.match or not o.watch or o.resource_version not in ("", "0"):
        return o
    return ListOptions(**{**o.__dict__, "send_initial_events": True, "match": NOT_OLDER_THAN})


def validate(o: ListOptions) -> list[st.FieldError]:
    """``ValidateListOptions``: the resourceVersionMatch and sendInitialEvents rules of a list and of a watch."""
    errs: list[st.FieldError] = []
    if o.watch:
        if o.send_initial_events is not None and o.match != NOT_OLDER_THAN:
            errs.append(st.field_forbidden("resourceVersionMatch", "sendInitialEvents requires setting "
                                                                   f"resourceVersionMatch to {NOT_OLDER_THAN}"))
        if o.match:
            if o.send_initial_events is None:
                errs.append(st.field_forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch "
                                                                       "unless sendInitialEvents is provided"))
            if o.match != NOT_OLDER_THAN:
                errs.append(st.field_not_supported("resourceVersionMatch", o.match, [NOT_OLDER_THAN]))
            if o.continue_token:
                errs.append(st.field_forbidden("resourceVersionMatch",
                                               "resourceVersionMatch is forbidden when continue is provided"))
        return errs
    if o.match:
        if not o.resource_version:
            errs.append(st.field_forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if o.continue_token:
            errs.append(st.field_forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden when continue is provided"))
        if o.match not in (EXACT, NOT_OLDER_THAN):
            errs.append(st.field_not_supported("resourceVersionMatch", o.match, [EXACT, NOT_OLDER_THAN, ""]))
        if o.match == EXACT and o.resource_version == "0":
            errs.append(st.field_forbidden("resourceVersionMatch",
                                           'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if o.send_initial_events is not None:
        errs.append(st.field_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return errs
