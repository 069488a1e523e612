"""apps/v1 StatefulSets: defaults and validation as kube-apiserver v1.37 does them.

Follows ``SetDefaults_StatefulSet`` (OrderedReady, RollingUpdate with ``partition`` 0 and — the
MaxUnavailableStatefulSet gate being on by default in v1.37 — ``maxUnavailable`` 1, Retain/Retain claim
retention, replicas 1, ``revisionHistoryLimit`` 10) and ``ValidateStatefulSetSpec``/``ValidateStatefulSetUpdate``
(field paths and messages; selector, ``volumeClaimTemplates``, ``serviceName`` and ``podManagementPolicy``
immutable). Simplified: the claim templates' own contents are not validated.
"""

from __future__ import annotations

import json
from typing import Any

from mockgpu.control.apiserver import names
from mockgpu.control.apiserver.status import FieldError, field_forbidden, field_invalid, field_required
from mockgpu.control.apiserver.workloadcommon import (
    default_template,
    int_or_percent,
    invalid_bare,
    nonneg,
    selector_errors,
    set_default,
    template_errors,
)

#: the status a new StatefulSet starts with: the Go type's counts without ``omitempty`` are written as 0
EMPTY_STATUS = {"replicas": 0, "availableReplicas": 0}


def apply_defaults(spec: dict[str, Any]) -> None:
    """``SetDefaults_StatefulSet`` (with the pod template's defaults)."""
    default_template(spec.get("template"))
    set_default(spec, "podManagementPolicy", "OrderedReady")
    strategy = set_default(spec, "updateStrategy", {})
    if isinstance(strategy, dict):
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            set_default(strategy, "rollingUpdate", {})
        ru = strategy.get("rollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(ru, dict):
            set_default(ru, "partition", 0)
            set_default(ru, "maxUnavailable", 1)
    retention = set_default(spec, "persistentVolumeClaimRetentionPolicy", {})
    if isinstance(retention, dict):
        for key in ("whenDeleted", "whenScaled"):
            if not retention.get(key):
                retention[key] = "Retain"
    set_default(spec, "replicas", 1)
    set_default(spec, "revisionHistoryLimit", 10)


def _go_strategy(strategy: dict[str, Any]) -> str:
    ru = "(*apps.RollingUpdateStatefulSetStrategy)(nil)" if strategy.get("rollingUpdate") is None else \
        "&apps.RollingUpdateStatefulSetStrategy{...}"
    return f'apps.StatefulSetUpdateStrategy{{Type:"{strategy.get("type") or ""}", RollingUpdate:{ru}}}'


def validate(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy")
    if not policy:
        errs.append(field_required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(field_invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    strategy = spec.get("updateStrategy") or {}
    strategy = strategy if isinstance(strategy, dict) else {"type": strategy}
    stype = strategy.get("type")
    ru = strategy.get("rollingUpdate")
    if not stype:
        errs.append(field_required("spec.updateStrategy"))
    elif stype == "OnDelete":
        if ru is not None:
            errs.append(invalid_bare("spec.updateStrategy.rollingUpdate", json.dumps(ru, sort_keys=True),
                                      "only allowed for updateStrategy 'RollingUpdate'"))
    elif stype == "RollingUpdate":
        if isinstance(ru, dict):
            nonneg(errs, "spec.updateStrategy.rollingUpdate.partition", ru.get("partition"))
            if ru.get("maxUnavailable") is not None:
                path = "spec.updateStrategy.rollingUpdate.maxUnavailable"
                value = int_or_percent(errs, path, ru["maxUnavailable"])
                if value == 0:
                    errs.append(field_invalid(path, ru["maxUnavailable"], "cannot be 0"))
    else:
        errs.append(invalid_bare("spec.updateStrategy", _go_strategy(strategy),
                                  "must be 'RollingUpdate' or 'OnDelete'"))
    nonneg(errs, "spec.replicas", spec.get("replicas"))
    nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, dict):
        nonneg(errs, "spec.ordinals.start", ordinals.get("start"))
    service = spec.get("serviceName")
    if isinstance(service, str) and service:
        errs += [field_invalid("spec.serviceName", service, m) for m in names.dns1123_label(service)]
    errs += selector_errors(spec, "StatefulSet")
    templates = spec.get("volumeClaimTemplates")
    if templates is not None and not isinstance(templates, list):
        errs.append(field_invalid("spec.volumeClaimTemplates", templates, "must be a list of PersistentVolumeClaims"))
        templates = []
    claims = {c["metadata"].get("name") for c in templates or []
              if isinstance(c, dict) and isinstance(c.get("metadata"), dict)}
    template = spec.get("template")
    if isinstance(template, dict) and claims and isinstance(template.get("spec"), dict):
        # as upstream, the claim templates count as the pod's volumes when the template is validated
        tspec = dict(template["spec"])
        own = [v for v in tspec.get("volumes") or [] if isinstance(v, dict) and v.get("name") not in claims]
        tspec["volumes"] = [{"name": c, "emptyDir": {}} for c in sorted(claims) if c] + own
        template = {**template, "spec": tspec}
    errs += template_errors(template, "spec.template", ("Always",))
    if ((spec.get("template") or {}).get("spec") or {}).get("activeDeadlineSeconds") is not None:
        errs.append(field_forbidden("spec.template.spec.activeDeadlineSeconds",
                                    "activeDeadlineSeconds in StatefulSet is not Supported"))
    if old is not None:
        ospec = old.get("spec") or {}
        for f in ("selector", "volumeClaimTemplates", "serviceName", "podManagementPolicy"):
            if spec.get(f) != ospec.get(f):
                errs.append(invalid_bare(f"spec.{f}", json.dumps(spec.get(f), sort_keys=True),
                                          "field is immutable"))
    return errs
