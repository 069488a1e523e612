"""apps/v1 Deployments and ReplicaSets, batch/v1 Jobs: defaulting, validation, generation and the Scale view
(DaemonSets, CronJobs, StatefulSets: the kind-specific parts in ``daemonsets``, ``cronjobs``, ``statefulsets``,
dispatched from here).

Follows kube-apiserver's registry strategies and validation for these kinds (``pkg/apis/apps/v1/defaults.go``,
``pkg/apis/apps/validation``, ``pkg/apis/batch/v1/defaults.go``, ``pkg/registry/batch/job/strategy.go``):
defaults (replicas 1; RollingUpdate with 25% surge and unavailability; revisionHistoryLimit 10;
progressDeadlineSeconds 600; Job completions/parallelism 1, backoffLimit 6, NonIndexed, the generated
``batch.kubernetes.io/controller-uid`` selector and pod labels), ``metadata.generation`` bumped on every spec
change, status reset on create and kept on main-resource updates, and the validation a user meets first
(selectors, restart policies, strategy, counts, immutable Job fields). The pod template is defaulted and
validated as a pod spec, and ``podFailurePolicy`` as upstream validates it. Simplified: the contents of
``successPolicy`` and the indexed-Job fields are stored but not validated.

``selector_matches`` and ``selector_string`` are the ``metav1.LabelSelector`` semantics the controllers share.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from mockgpu.control.apiserver import defaults, names
from mockgpu.control.apiserver.status import (
    FieldError,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
)

API_VERSIONS = {"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "Job": "batch/v1", "DaemonSet": "apps/v1",
                "CronJob": "batch/v1", "StatefulSet": "apps/v1"}
PLURALS = {"Deployment": "deployments", "ReplicaSet": "replicasets", "Job": "jobs", "DaemonSet": "daemonsets",
           "CronJob": "cronjobs", "StatefulSet": "statefulsets"}

#: the status a new object starts with: the Go types' counts without ``omitempty`` are written as 0
EMPTY_STATUS = {"DaemonSet": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                              "numberReady": 0},
                "StatefulSet": {"replicas": 0, "availableReplicas": 0}}

JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"

_PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
                "regex used for validation is '[0-9]+%')")


# ---- label selectors --------------------------------------------------------------------------------------

def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str] | None) -> bool:
    """``metav1.LabelSelectorAsSelector(sel).Matches(labels)``: a nil selector matches nothing, ``{}`` all."""
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def selector_string(selector: dict[str, Any] | None) -> str:
    """The selector as ``labels.Selector.String()`` prints it: ``app=x,tier in (a,b),!gone``, keys sorted."""
    if not selector:
        return ""
    parts: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key", ""), req.get("operator"), sorted(req.get("values") or [])
        text = {"In": f"{key} in ({','.join(values)})", "NotIn": f"{key} notin ({','.join(values)})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(op, key)
        parts.append((key, text))
    return ",".join(t for _, t in sorted(parts))


# ---- defaulting -------------------------------------------------------------------------------------------

def default_template(template: Any) -> Any:
    """``SetDefaults_PodSpec`` and container defaults on a pod template (no admission defaults, no status)."""
    if not isinstance(template, dict):
        return template
    spec = template.get("spec")
    if not isinstance(spec, dict):
        return template
    had_links = "enableServiceLinks" in spec
    no_requests = {(key, i) for key in ("containers", "initContainers") for i, c in enumerate(spec.get(key) or [])
                   if isinstance(c, dict) and "requests" not in (c.get("resources") or {})}
    pod = defaults.default_pod({"spec": spec}, creating=False)
    if not had_links:
        pod["spec"].pop("enableServiceLinks", None)
    for key, i in no_requests:  # requests default to limits on the pod (SetDefaults_Pod), not in a template
        resources = pod["spec"][key][i].get("resources")
        if isinstance(resources, dict):
            resources.pop("requests", None)
    template["spec"] = pod["spec"]
    return template


def _default(obj: dict[str, Any], key: str, value: Any) -> Any:
    """Set an absent or null field (JSON null and absent are the same nil pointer upstream); the field's value."""
    if obj.get(key) is None:
        obj[key] = value
    return obj[key]


def _default_rolling(spec: dict[str, Any]) -> None:
    strategy = _default(spec, "strategy", {})
    if not isinstance(strategy, dict):
        return
    _default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = _default(strategy, "rollingUpdate", {})
        if isinstance(ru, dict):
            _default(ru, "maxUnavailable", "25%")
            _default(ru, "maxSurge", "25%")


def apply_defaults(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The v1 defaulters of ``kind`` (called on every write, as decoding does upstream)."""
    spec = _default(obj, "spec", {})
    if not isinstance(spec, dict):
        return obj
    if kind == "CronJob":
        from mockgpu.control.apiserver import cronjobs

        cronjobs.apply_defaults(spec)
        return obj
    default_template(spec.get("template"))
    if kind == "DaemonSet":
        from mockgpu.control.apiserver import daemonsets

        daemonsets.apply_defaults(spec)
    if kind == "StatefulSet":
        from mockgpu.control.apiserver import statefulsets

        statefulsets.apply_defaults(spec)
    if kind == "Deployment":
        _default(spec, "replicas", 1)
        _default_rolling(spec)
        _default(spec, "revisionHistoryLimit", 10)
        _default(spec, "progressDeadlineSeconds", 600)
    elif kind == "ReplicaSet":
        _default(spec, "replicas", 1)
    elif kind == "Job":
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
            spec["parallelism"] = 1
        _default(spec, "parallelism", 1)
        if spec.get("backoffLimit") is None:
            spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
        _default(spec, "completionMode", "NonIndexed")
        _default(spec, "suspend", False)
        _default(spec, "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
        if "manualSelector" in spec and spec["manualSelector"] is None:
            del spec["manualSelector"]
    return obj


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


def prepare(kind: str, obj: dict[str, Any], old: dict[str, Any] | None, subresource: str) -> dict[str, Any]:
    """Strategy hooks: fresh status and generation 1 on create; on update the other half kept from ``old``
    and the generation bumped when the spec changed."""
    obj = apply_defaults(kind, obj)
    meta = obj.setdefault("metadata", {})
    if old is None:
        obj["status"] = dict(EMPTY_STATUS.get(kind, {}))
        meta["generation"] = 1
        if kind == "Job":
            generate_job_selector(obj)
        if kind == "DaemonSet":
            from mockgpu.control.apiserver.daemonsets import template_generation

            template_generation(obj, None)
        return obj
    if subresource == "status":
        obj["spec"] = copy.deepcopy(old.get("spec", {}))
        return obj
    obj["status"] = copy.deepcopy(old.get("status", {}))
    generation = int((old.get("metadata") or {}).get("generation") or 0)
    meta["generation"] = generation + 1 if obj.get("spec") != old.get("spec") else generation
    if kind == "DaemonSet":
        from mockgpu.control.apiserver.daemonsets import template_generation

        template_generation(obj, old)
    return obj


# ---- validation -------------------------------------------------------------------------------------------

def _go_map(labels: dict[str, str]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items()))
    return f"map[string]string{{{inner}}}"


def _invalid_bare(path: str, text: str, detail: str) -> FieldError:
    return FieldError(path, "Invalid", detail, _Bare(text))


class _Bare:
    """A value printed bare (``map[string]string{...}``), not quoted like a string."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _nonneg(errs: list[FieldError], path: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        errs.append(field_invalid(path, value, "must be greater than or equal to 0"))


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(selector, dict):
        return errs
    errs += names.validate_labels(selector.get("matchLabels") or {}, f"{path}.matchLabels")
    for i, req in enumerate(selector.get("matchExpressions") or []):
        p = f"{path}.matchExpressions[{i}]"
        req = req if isinstance(req, dict) else {}
        op, values = req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(field_required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(field_forbidden(f"{p}.values",
                                            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(field_invalid(f"{p}.operator", op, "not a valid selector operator"))
        key = req.get("key") or ""
        errs += [field_invalid(f"{p}.key", key, m) for m in names.qualified_name(key)]
    return errs


def _template_errors(template: Any, path: str, restart_allowed: tuple[str, ...]) -> list[FieldError]:
    """The pod template as a pod (paths under ``<path>.spec``) plus the owner's restart policy rule."""
    from mockgpu.control.apiserver.validation import validate_pod

    if not isinstance(template, dict):
        return [field_required(path)]
    errs: list[FieldError] = []
    tmeta = template.get("metadata") or {}
    errs += names.validate_labels(tmeta.get("labels") or {}, f"{path}.metadata.labels")
    for e in validate_pod({"spec": template.get("spec") or {}}):
        if e.field == "spec.restartPolicy":
            continue  # replaced by the owner's rule below
        errs.append(FieldError(f"{path}.{e.field}", e.type, e.detail, e.value))
    policy = (template.get("spec") or {}).get("restartPolicy")
    if policy not in restart_allowed:
        errs.append(field_not_supported(f"{path}.spec.restartPolicy", policy, restart_allowed))
    return errs


def _selector_errors(spec: dict[str, Any], kind: str) -> list[FieldError]:
    errs: list[FieldError] = []
    selector = spec.get("selector")
    if selector is None:
        return [field_required("spec.selector")]
    errs += validate_label_selector(selector, "spec.selector")
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        errs.append(_invalid_bare("spec.selector", "null" if not selector else "v1.LabelSelector{}",
                                  f"empty selector is invalid for {kind.lower()}"))
        return errs
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not selector_matches(selector, labels):
        errs.append(_invalid_bare("spec.template.metadata.labels", _go_map(labels),
                                  "`selector` does not match template `labels`"))
    return errs


def _int_or_percent(errs: list[FieldError], path: str, value: Any) -> int | None:
    """The value (percent as given, e.g. 25 for "25%") or None; errors for malformed or negative values."""
    if isinstance(value, bool):
        errs.append(field_invalid(path, value, "must be an integer or percentage (e.g '5%')"))
        return None
    if isinstance(value, int):
        if value < 0:
            errs.append(field_invalid(path, value, "must be greater than or equal to 0"))
        return value
    if isinstance(value, str):
        if not re.fullmatch(r"[0-9]+%", value):
            errs.append(field_invalid(path, value, _PERCENT_MSG))
            return None
        pct = int(value[:-1])
        if pct > 100:
            errs.append(field_invalid(path, value, "must not be greater than 100%"))
        return pct
    return None


def validate_deployment(obj: dict[str, Any]) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    _nonneg(errs, "spec.replicas", spec.get("replicas"))
    errs += _selector_errors(spec, "Deployment")
    errs += _template_errors(spec.get("template"), "spec.template", ("Always",))
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
        surge = _int_or_percent(errs, "spec.strategy.rollingUpdate.maxSurge", ru.get("maxSurge"))
        unavailable = _int_or_percent(errs, "spec.strategy.rollingUpdate.maxUnavailable", ru.get("maxUnavailable"))
        if surge == 0 and unavailable == 0:
            errs.append(field_invalid("spec.strategy.rollingUpdate.maxUnavailable", ru.get("maxUnavailable"),
                                      "may not be 0 when `maxSurge` is 0"))
    _nonneg(errs, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    _nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    deadline = spec.get("progressDeadlineSeconds")
    _nonneg(errs, "spec.progressDeadlineSeconds", deadline)
    if isinstance(deadline, int) and deadline <= int(spec.get("minReadySeconds") or 0):
        errs.append(field_invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return errs


def validate_replicaset(obj: dict[str, Any]) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    _nonneg(errs, "spec.replicas", spec.get("replicas"))
    _nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    errs += _selector_errors(spec, "ReplicaSet")
    errs += _template_errors(spec.get("template"), "spec.template", ("Always",))
    return errs


_FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")


def _go_ints(values: list[Any]) -> _Bare:
    return _Bare("[]int32{" + ", ".join(str(v) for v in values) + "}")


def validate_pod_failure_policy(spec: dict[str, Any]) -> list[FieldError]:
    """``validatePodFailurePolicy``: rule actions, exactly one of onExitCodes/onPodConditions, operators,
    container names and exit-code lists (non-empty, ordered, unique, no 0 for In)."""
    policy = spec.get("podFailurePolicy")
    if not isinstance(policy, dict):
        return []
    errs: list[FieldError] = []
    template = (spec.get("template") or {}).get("spec") or {}
    names_ = {c.get("name") for key in ("containers", "initContainers") for c in template.get(key) or []
              if isinstance(c, dict)}
    for i, rule in enumerate(policy.get("rules") or []):
        path = f"spec.podFailurePolicy.rules[{i}]"
        rule = rule if isinstance(rule, dict) else {}
        action = rule.get("action")
        if not action:
            errs.append(field_required(f"{path}.action", 'valid values: ["Count" "FailIndex" "FailJob" "Ignore"]'))
        elif action == "FailIndex" and spec.get("backoffLimitPerIndex") is None:
            errs.append(field_invalid(f"{path}.action", action, "requires the backoffLimitPerIndex to be set"))
        elif action not in _FAILURE_ACTIONS:
            errs.append(field_not_supported(f"{path}.action", action, _FAILURE_ACTIONS))
        codes, conditions = rule.get("onExitCodes"), rule.get("onPodConditions") or []
        if isinstance(codes, dict):
            cpath = f"{path}.onExitCodes"
            op = codes.get("operator")
            if not op:
                errs.append(field_required(f"{cpath}.operator", 'valid values: ["In" "NotIn"]'))
            elif op not in ("In", "NotIn"):
                errs.append(field_not_supported(f"{cpath}.operator", op, ("In", "NotIn")))
            if codes.get("containerName") is not None and codes["containerName"] not in names_:
                errs.append(field_invalid(f"{cpath}.containerName", codes["containerName"],
                                          "must be one of the container or initContainer names in the pod template"))
            values = [v for v in codes.get("values") or [] if isinstance(v, int)]
            if not values:
                errs.append(FieldError(f"{cpath}.values", "Invalid", "at least one value is required",
                                       _go_ints(values)))
            for j, v in enumerate(values):
                if op == "In" and v == 0:
                    errs.append(field_invalid(f"{cpath}.values[{j}]", v, "must not be 0 for the In operator"))
                if v in values[:j]:
                    errs.append(FieldError(f"{cpath}.values[{j}]", "Duplicate", "", v))
            if values != sorted(values):
                errs.append(FieldError(f"{cpath}.values", "Invalid", "must be ordered", _go_ints(values)))
        for j, pattern in enumerate(conditions if isinstance(conditions, list) else []):
            pattern = pattern if isinstance(pattern, dict) else {}
            status = pattern.get("status")
            if not status:
                errs.append(field_required(f"{path}.onPodConditions[{j}].status",
                                           'valid values: ["False" "True" "Unknown"]'))
            elif status not in ("False", "True", "Unknown"):
                errs.append(field_not_supported(f"{path}.onPodConditions[{j}].status", status,
                                                ("False", "True", "Unknown")))
        if codes is not None and conditions:
            errs.append(FieldError(path, "Invalid", "specifying both OnExitCodes and OnPodConditions is not supported",
                                   omit_value=True))
        if codes is None and not conditions:
            errs.append(FieldError(path, "Invalid", "specifying one of OnExitCodes and OnPodConditions is required",
                                   omit_value=True))
    if (spec.get("template") or {}).get("spec", {}).get("restartPolicy") in ("OnFailure",):
        errs.append(field_invalid("spec.template.spec.restartPolicy", "OnFailure",
                                  'only "Never" is supported when podFailurePolicy is specified'))
    if spec.get("podReplacementPolicy") not in (None, "Failed"):
        errs.append(field_not_supported("spec.podReplacementPolicy", spec["podReplacementPolicy"], ("Failed",)))
    return errs


def validate_job(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    for f in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        _nonneg(errs, f"spec.{f}", spec.get(f))
    _one_of = spec.get("completionMode")
    if _one_of not in ("NonIndexed", "Indexed"):
        errs.append(field_not_supported("spec.completionMode", _one_of, ("NonIndexed", "Indexed")))
    if spec.get("manualSelector") is not True:
        uid = (obj.get("metadata") or {}).get("uid", "")
        selector = spec.get("selector") or {}
        if uid and (selector.get("matchLabels") or {}).get(JOB_UID_LABEL) != uid:
            errs.append(_invalid_bare("spec.selector", json.dumps(selector, sort_keys=True),
                                      "`selector` not auto-generated"))
    errs += _selector_errors(spec, "Job")
    errs += _template_errors(spec.get("template"), "spec.template", ("OnFailure", "Never"))
    errs += validate_pod_failure_policy(spec)
    if old is not None:
        ospec = old.get("spec") or {}
        for f in ("selector", "completionMode"):
            if spec.get(f) != ospec.get(f):
                errs.append(_invalid_bare(f"spec.{f}", json.dumps(spec.get(f), sort_keys=True),
                                          "field is immutable"))
        if spec.get("template") != ospec.get("template") and not ospec.get("suspend"):
            errs.append(_invalid_bare("spec.template", "core.PodTemplateSpec{...}", "field is immutable"))
        if spec.get("completions") != ospec.get("completions") and spec.get("completionMode") != "Indexed":
            errs.append(field_invalid("spec.completions", spec.get("completions"), "field is immutable"))
    return errs


def validate(kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if kind == "Deployment":
        errs = validate_deployment(obj)
        if old is not None and (obj.get("spec") or {}).get("selector") != (old.get("spec") or {}).get("selector"):
            errs.append(_invalid_bare("spec.selector", json.dumps((obj.get("spec") or {}).get("selector"),
                                                                  sort_keys=True), "field is immutable"))
        return errs
    if kind == "ReplicaSet":
        return validate_replicaset(obj)
    if kind == "DaemonSet":
        from mockgpu.control.apiserver import daemonsets

        return daemonsets.validate(obj, old)
    if kind == "CronJob":
        from mockgpu.control.apiserver import cronjobs

        return cronjobs.validate(obj, old)
    if kind == "StatefulSet":
        from mockgpu.control.apiserver import statefulsets

        return statefulsets.validate(obj, old)
    return validate_job(obj, old)


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
    _nonneg(errs, "spec.replicas", replicas)
    return errs
