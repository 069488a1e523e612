"""A pod's ``/status`` update: the rules upstream's ``ValidatePodStatusUpdate`` gives ``allocatedResourcesStatus``.

v1.37.2 ``pkg/apis/core/validation/validation.go`` (``validateContainerStatusAllocatedResourcesStatus``,
``validateContainerStatusNoAllocatedResourcesStatus``; the ``ResourceHealthStatus`` gate is beta and on): in
``status.containerStatuses`` and ``status.initContainerStatuses`` each entry's ``name`` must be one of its container's
resource requests (or, starting with ``claim:``, ``claim:<claim>[/<request>]`` of one of its resource claims), each
resource's ``health`` is ``Healthy``, ``Unhealthy`` or ``Unknown``, a ``message`` is non-empty and at most 1024 bytes,
and ``resourceID`` is unique within its entry; an ephemeral container's status must not have the field. A status
naming a container the spec lacks is not checked (upstream's issue 124915). Simplified: the extended-resource claim
mapping (``status.extendedResourceClaimStatus``, DRA for extended resources) is not matched.
"""

from __future__ import annotations

from typing import Any

from mockgpu.apimachinery.status import (
    FieldError,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    field_too_long,
)

HEALTH = ("Healthy", "Unhealthy", "Unknown")  # sets.List: sorted
MESSAGE_MAX = 1024  # v1.ResourceHealthMessageMaxLength


def _claim_status_name(claim: dict[str, Any]) -> str:
    """``resourceStatusName``: ``claim:<name>`` or ``claim:<name>/<request>``."""
    name, request = claim.get("name", ""), claim.get("request") or ""
    return f"claim:{name}/{request}" if request else f"claim:{name}"


def _statuses(statuses: Any, path: str, containers: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    by_name = {c.get("name"): c for c in containers or [] if isinstance(c, dict)}
    for i, cs in enumerate(statuses or []):
        if not isinstance(cs, dict) or cs.get("allocatedResourcesStatus") is None:
            continue
        container = by_name.get(cs.get("name"))
        for j, ars in enumerate(cs.get("allocatedResourcesStatus") or []):
            base = f"{path}[{i}].allocatedResourcesStatus[{j}]"
            name = ars.get("name", "") if isinstance(ars, dict) else ""
            if container is not None:
                res = container.get("resources") or {}
                if str(name).startswith("claim:"):
                    ok = any(_claim_status_name(c) == name for c in res.get("claims") or [] if isinstance(c, dict))
                    detail = ("must match one of the container's resource claims as 'claim:<claimName>/<requestName>' "
                              "when container.resources.claims[*].request is set or 'claim:<claimName>' when it is "
                              "empty")
                else:
                    ok = name in (res.get("requests") or {})
                    detail = "must match one of the container's resource requests"
                if not ok:
                    errs.append(field_invalid(f"{base}.name", name, detail))
            seen: set[str] = set()
            for k, r in enumerate((ars.get("resources") if isinstance(ars, dict) else None) or []):
                r = r if isinstance(r, dict) else {}
                rpath = f"{base}.resources[{k}]"
                if r.get("health") not in HEALTH:
                    errs.append(field_not_supported(f"{rpath}.health", r.get("health", ""), HEALTH))
                msg = r.get("message")
                if msg is not None:
                    if msg == "":
                        errs.append(field_required(f"{rpath}.message", "must be non-empty if specified"))
                    elif len(str(msg).encode()) > MESSAGE_MAX:
                        errs.append(field_too_long(f"{rpath}.message", MESSAGE_MAX))
                rid = r.get("resourceID", "")
                if rid in seen:
                    errs.append(field_duplicate(f"{rpath}.resourceID", rid))
                seen.add(rid)
    return errs


def validate_pod_status(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """The ``allocatedResourcesStatus`` rules of ``ValidatePodStatusUpdate``."""
    spec, status = new.get("spec") or {}, new.get("status") or {}
    errs = _statuses(status.get("containerStatuses"), "status.containerStatuses", spec.get("containers"))
    errs += _statuses(status.get("initContainerStatuses"), "status.initContainerStatuses", spec.get("initContainers"))
    for i, cs in enumerate(status.get("ephemeralContainerStatuses") or []):
        if isinstance(cs, dict) and cs.get("allocatedResourcesStatus"):
            errs.append(field_forbidden(f"status.ephemeralContainerStatuses[{i}].allocatedResourcesStatus",
                                        "must not be specified in container status"))
    return errs
