"""apps/v1 Deployments and ReplicaSets, batch/v1 Jobs: defaulting, validation, generation and the Scale view;
and the strategy steps every workload kind shares (``prepare``). The kind-specific parts of DaemonSets, CronJobs
and StatefulSets are in ``daemonsets``, ``cronjobs`` and ``statefulsets``; each kind's record (``registry.apps``,
``registry.batch``) names its defaults, hooks and validation.

Follows kube-apiserver's registry strategies and validation for these kinds (``pkg/apis/apps/v1/defaults.go``,
``pkg/apis/apps/validation``, ``pkg/apis/batch/v1/defaults.go``, ``pkg/registry/batch/job/strategy.go``):
defaults (replicas 1; RollingUpdate with 25% surge and unavailability; revisionHistoryLimit 10;
progressDeadlineSeconds 600; Job completions/parallelism 1, backoffLimit 6, NonIndexed, the generated
``batch.kubernetes.io/controller-uid`` selector and pod labels), ``metadata.generation`` bumped on every spec
change, status reset on create and kept on main-resource updates, and the validation a user meets first
(selectors, restart policies, strategy, counts, immutable Job fields). The pod template is defaulted and
validated as a pod spec, and ``podFailurePolicy`` as upstream validates it. Simplified: the contents of
``successPolicy`` and the indexed-Job fields are stored but not validated.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from mockgpu.apimachinery.selectors import selector_string
from mockgpu.control.apiserver.status import (
    FieldError,
    field_forbidden,
    field_invalid,
    field_not_supported,
)
from mockgpu.control.apiserver.workloadcommon import (
    default_template,
    int_or_percent,
    invalid_bare,
    nonneg,
    selector_errors,
    set_default,
    template_errors,
    validate_label_selector,  # noqa: F401  (re-exported)
    validate_pod_failure_policy,
)

JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"



# ---- defaulting -------------------------------------------------------------------------------------------

def _default_rolling(spec: dict[str, Any]) -> None:
    strategy = set_default(spec, "strategy", {})
    if not isinstance(strategy, dict):
        return
    set_default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = set_default(strategy, "rollingUpdate", {})
        if isinstance(ru, dict):
            set_default(ru, "maxUnavailable", "25%")
            set_default(ru, "maxSurge", "25%")


def default_deployment(spec: dict[str, Any]) -> None:
    """``SetDefaults_Deployment`` (with the pod template's defaults)."""
    default_template(spec.get("template"))
    set_default(spec, "replicas", 1)
    _default_rolling(spec)
    set_default(spec, "revisionHistoryLimit", 10)
    set_default(spec, "progressDeadlineSeconds", 600)


def default_replicaset(spec: dict[str, Any]) -> None:
    """``SetDefaults_ReplicaSet`` (with the pod template's defaults)."""
    default_template(spec.get("template"))
    set_default(spec, "replicas", 1)


def default_job(spec: dict[str, Any]) -> None:
    """``SetDefaults_Job`` (with the pod template's defaults)."""
    default_template(spec.get("template"))
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    set_default(spec, "parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    set_default(spec, "completionMode", "NonIndexed")
    set_default(spec, "suspend", False)
    # SetDefaults_Job: Failed whenever a podFailurePolicy is set, even an empty one
    set_default(spec, "podReplacementPolicy",
                "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed")
    if "manualSelector" in spec and spec["manualSelector"] is None:
        del spec["manualSelector"]


def generate_job_selector(job: dict[str, Any]) -> None:
    """The Job strategy's ``generateSelector``: pod labels naming the Job and its uid, selector on the uid, and
    (as the v1 defaulter does on the next read) the Job's own labels from its template when it has none."""
    meta, spec = job.get("metadata") or {}, job.get("spec") or {}
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    template = spec.setdefault("template", {})
    if not isinstance(template, dict):
        return
    tmeta = template.setdefault("metadata", {})
    if not isinstance(tmeta, dict):
        return
    labels = tmeta.get("labels") or {}
    uid, name = meta.get("uid", ""), meta.get("name", "")
    for key, value in ((JOB_UID_LABEL, uid), (JOB_NAME_LABEL, name), (LEGACY_JOB_UID_LABEL, uid),
                       (LEGACY_JOB_NAME_LABEL, name)):
        labels.setdefault(key, value)
    tmeta["labels"] = labels
    selector = spec.get("selector") or {}
    match = selector.get("matchLabels") or {}
    match.setdefault(JOB_UID_LABEL, uid)
    selector["matchLabels"] = match
    spec["selector"] = selector
    if not meta.get("labels"):
        meta["labels"] = dict(labels)


def spec_defaulted(defaults: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A copy of an object with its spec defaulted: the v1 defaults alone, without what ``prepare`` adds on create
    (a Kind record's ``defaults``, which the field manager records the creator as owning)."""
    def run(obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        spec = out.get("spec")
        if isinstance(spec, dict):
            defaults(spec)
        return out
    return run


def prepare(obj: dict[str, Any], old: dict[str, Any] | None, subresource: str, *,
            defaults: Callable[[dict[str, Any]], None], empty_status: dict[str, Any] | None = None,
            on_create: Callable[[dict[str, Any]], None] | None = None,
            on_update: Callable[[dict[str, Any], dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The strategy steps the workload kinds share: the kind's v1 ``defaults`` (on every write, as decoding does
    upstream); on create a fresh status (``empty_status``: the Go types' counts without ``omitempty``) and
    generation 1, then ``on_create``; on update the other half kept from ``old``, the generation bumped when the
    spec changed, then ``on_update``."""
    spec = set_default(obj, "spec", {})
    if isinstance(spec, dict):
        defaults(spec)
    meta = obj.setdefault("metadata", {})
    if old is None:
        obj["status"] = dict(empty_status or {})
        meta["generation"] = 1
        if on_create is not None:
            on_create(obj)
        return obj
    if subresource == "status":
        obj["spec"] = copy.deepcopy(old.get("spec", {}))
        return obj
    obj["status"] = copy.deepcopy(old.get("status", {}))
    generation = int((old.get("metadata") or {}).get("generation") or 0)
    meta["generation"] = generation + 1 if obj.get("spec") != old.get("spec") else generation
    if on_update is not None:
        on_update(obj, old)
    return obj


# ---- validation -------------------------------------------------------------------------------------------

def validate_deployment(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    nonneg(errs, "spec.replicas", spec.get("replicas"))
    errs += selector_errors(spec, "Deployment")
    errs += template_errors(spec.get("template"), "spec.template", ("Always",))
    if ((spec.get("template") or {}).get("spec") or {}).get("activeDeadlineSeconds") is not None:
        errs.append(field_forbidden("spec.template.spec.activeDeadlineSeconds",
                                    "activeDeadlineSeconds in ReplicaSet is not Supported"))
    strategy = spec.get("strategy") or {}
    stype = strategy.get("type")
    if stype not in ("Recreate", "RollingUpdate"):
        errs.append(field_not_supported("spec.strategy.type", stype, ("Recreate", "RollingUpdate")))
    elif stype == "Recreate" and strategy.get("rollingUpdate") is not None:
        errs.append(field_forbidden("spec.strategy.rollingUpdate",
                                    "may not be specified when strategy `type` is 'Recreate'"))
    elif stype == "RollingUpdate":
        ru = strategy.get("rollingUpdate") or {}
        surge = int_or_percent(errs, "spec.strategy.rollingUpdate.maxSurge", ru.get("maxSurge"))
        unavailable = int_or_percent(errs, "spec.strategy.rollingUpdate.maxUnavailable", ru.get("maxUnavailable"))
        if surge == 0 and unavailable == 0:
            errs.append(field_invalid("spec.strategy.rollingUpdate.maxUnavailable", ru.get("maxUnavailable"),
                                      "may not be 0 when `maxSurge` is 0"))
    nonneg(errs, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    deadline = spec.get("progressDeadlineSeconds")
    nonneg(errs, "spec.progressDeadlineSeconds", deadline)
    if isinstance(deadline, int) and deadline <= int(spec.get("minReadySeconds") or 0):
        errs.append(field_invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    if old is not None and spec.get("selector") != (old.get("spec") or {}).get("selector"):
        errs.append(invalid_bare("spec.selector", json.dumps(spec.get("selector"), sort_keys=True),
                                 "field is immutable"))
    return errs


def validate_replicaset(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    nonneg(errs, "spec.replicas", spec.get("replicas"))
    nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    errs += selector_errors(spec, "ReplicaSet")
    errs += template_errors(spec.get("template"), "spec.template", ("Always",))
    return errs


def validate_job(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    for f in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        nonneg(errs, f"spec.{f}", spec.get(f))
    _one_of = spec.get("completionMode")
    if _one_of not in ("NonIndexed", "Indexed"):
        errs.append(field_not_supported("spec.completionMode", _one_of, ("NonIndexed", "Indexed")))
    if spec.get("manualSelector") is not True:
        uid = (obj.get("metadata") or {}).get("uid", "")
        selector = spec.get("selector") or {}
        if uid and (selector.get("matchLabels") or {}).get(JOB_UID_LABEL) != uid:
            errs.append(invalid_bare("spec.selector", json.dumps(selector, sort_keys=True),
                                      "`selector` not auto-generated"))
    errs += selector_errors(spec, "Job")
    errs += template_errors(spec.get("template"), "spec.template", ("OnFailure", "Never"))
    errs += validate_pod_failure_policy(spec)
    if old is not None:
        ospec = old.get("spec") or {}
        for f in ("selector", "completionMode"):
            if spec.get(f) != ospec.get(f):
                errs.append(invalid_bare(f"spec.{f}", json.dumps(spec.get(f), sort_keys=True),
                                          "field is immutable"))
        if spec.get("template") != ospec.get("template") and not ospec.get("suspend"):
            errs.append(invalid_bare("spec.template", "core.PodTemplateSpec{...}", "field is immutable"))
        if spec.get("completions") != ospec.get("completions") and spec.get("completionMode") != "Indexed":
            errs.append(field_invalid("spec.completions", spec.get("completions"), "field is immutable"))
    return errs


# ---- the scale subresource (autoscaling/v1 Scale) ---------------------------------------------------------

def to_scale(obj: dict[str, Any]) -> dict[str, Any]:
    """The ``/scale`` view of a Deployment or ReplicaSet."""
    meta = obj.get("metadata") or {}
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in meta},
            "spec": {"replicas": spec.get("replicas", 0)},
            "status": {"replicas": status.get("replicas", 0), "selector": selector_string(spec.get("selector"))}}


def scale_errors(scale: Any) -> list[FieldError]:
    """``ValidateScale``: replicas is a non-negative integer."""
    replicas = ((scale.get("spec") or {}) if isinstance(scale, dict) else {}).get("replicas", 0)
    errs: list[FieldError] = []
    nonneg(errs, "spec.replicas", replicas)
    return errs
