"""apps/v1 DaemonSets: defaults, template generation and validation, as kube-apiserver does them.

Follows ``pkg/apis/apps/v1/defaults.go`` (RollingUpdate with ``maxUnavailable`` 1 and ``maxSurge`` 0,
``revisionHistoryLimit`` 10), the registry strategy (the template generation, kept in v1 as the
``deprecated.daemonset.template.generation`` annotation: 1 on create, +1 on each template change) and
``ValidateDaemonSetSpec``/``ValidateDaemonSetUpdateStrategy`` (field paths and messages).
"""

from __future__ import annotations

import json
from typing import Any

from mockgpu.control.apiserver.status import FieldError, field_forbidden, field_invalid, field_required
from mockgpu.control.apiserver.workloadcommon import (
    Bare,
    default_template,
    int_or_percent,
    invalid_bare,
    nonneg,
    selector_errors,
    set_default,
    template_errors,
)

TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
#: the status a new DaemonSet starts with: the Go type's counts without ``omitempty`` are written as 0
EMPTY_STATUS = {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}


def apply_defaults(spec: dict[str, Any]) -> None:
    """``SetDefaults_DaemonSet`` (with the pod template's defaults)."""
    default_template(spec.get("template"))
    strategy = set_default(spec, "updateStrategy", {})
    if isinstance(strategy, dict):
        set_default(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = set_default(strategy, "rollingUpdate", {})
            if isinstance(ru, dict):
                set_default(ru, "maxUnavailable", 1)
                set_default(ru, "maxSurge", 0)
    set_default(spec, "revisionHistoryLimit", 10)


def template_generation(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The strategy's ``TemplateGeneration``: 1 on create, bumped when the pod template changes."""
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    if old is None:
        generation = 1
    else:
        old_annotations = (old.get("metadata") or {}).get("annotations") or {}
        try:
            generation = int(old_annotations.get(TEMPLATE_GENERATION, "1"))
        except ValueError:
            generation = 1
        if (obj.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            generation += 1
    annotations[TEMPLATE_GENERATION] = str(generation)
    meta["annotations"] = annotations


def _strategy_dump(strategy: dict[str, Any]) -> str:
    ru = ("(*apps.RollingUpdateDaemonSet)(nil)" if strategy.get("rollingUpdate") is None
          else "&apps.RollingUpdateDaemonSet{...}")
    return f'apps.DaemonSetUpdateStrategy{{Type:"{strategy.get("type") or ""}", RollingUpdate:{ru}}}'


def validate(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = selector_errors(spec, "DaemonSet")
    errs += template_errors(spec.get("template"), "spec.template", ("Always",))
    if ((spec.get("template") or {}).get("spec") or {}).get("activeDeadlineSeconds") is not None:
        errs.append(field_forbidden("spec.template.spec.activeDeadlineSeconds",
                                    "activeDeadlineSeconds in DaemonSet is not Supported"))
    nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    strategy = spec.get("updateStrategy") or {}
    strategy = strategy if isinstance(strategy, dict) else {"type": strategy}
    stype = strategy.get("type")
    if stype == "RollingUpdate":
        ru = strategy.get("rollingUpdate")
        if not isinstance(ru, dict):
            errs.append(field_required("spec.updateStrategy.rollingUpdate"))
        else:
            path = "spec.updateStrategy.rollingUpdate"
            unavailable = int_or_percent(errs, f"{path}.maxUnavailable", ru.get("maxUnavailable"))
            surge = int_or_percent(errs, f"{path}.maxSurge", ru.get("maxSurge"))
            if unavailable and surge:
                errs.append(field_invalid(f"{path}.maxSurge", ru.get("maxSurge"),
                                          "may not be set when maxUnavailable is non-zero"))
            elif not unavailable and not surge:
                errs.append(field_required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    elif stype != "OnDelete":
        errs.append(FieldError("spec.updateStrategy", "NotSupported",
                               'supported values: "RollingUpdate", "OnDelete"', Bare(_strategy_dump(strategy))))
    nonneg(errs, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    if old is not None and spec.get("selector") != (old.get("spec") or {}).get("selector"):
        errs.append(invalid_bare("spec.selector", json.dumps(spec.get("selector"), sort_keys=True),
                                  "field is immutable"))
    return errs
