"""What the workload kinds (apps/v1, batch/v1) share, below ``workloads`` and the per-kind modules
``daemonsets``, ``statefulsets`` and ``cronjobs``: pod template defaults, the label selector, template, count and
int-or-percent rules, ``podFailurePolicy`` validation, and the bare (unquoted) values upstream's messages print
(``pkg/apis/apps/validation``, ``pkg/apis/batch/validation``)."""

from __future__ import annotations

import re
from typing import Any

from mockgpu.apimachinery.selectors import selector_matches
from mockgpu.control.apiserver import defaults, names
from mockgpu.control.apiserver.corevalidation import validate_pod
from mockgpu.control.apiserver.status import (
    FieldError,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
)

PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
                "regex used for validation is '[0-9]+%')")


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


def set_default(obj: dict[str, Any], key: str, value: Any) -> Any:
    """Set an absent or null field (JSON null and absent are the same nil pointer upstream); the field's value."""
    if obj.get(key) is None:
        obj[key] = value
    return obj[key]


def go_map(labels: dict[str, str]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items()))
    return f"map[string]string{{{inner}}}"


def invalid_bare(path: str, text: str, detail: str) -> FieldError:
    return FieldError(path, "Invalid", detail, Bare(text))


class Bare:
    """A value printed bare (``map[string]string{...}``), not quoted like a string."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def nonneg(errs: list[FieldError], path: str, value: Any) -> None:
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


def template_errors(template: Any, path: str, restart_allowed: tuple[str, ...]) -> list[FieldError]:
    """The pod template as a pod (paths under ``<path>.spec``) plus the owner's restart policy rule."""
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


def selector_errors(spec: dict[str, Any], kind: str) -> list[FieldError]:
    errs: list[FieldError] = []
    selector = spec.get("selector")
    if selector is None:
        return [field_required("spec.selector")]
    errs += validate_label_selector(selector, "spec.selector")
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        errs.append(invalid_bare("spec.selector", "null" if not selector else "v1.LabelSelector{}",
                                  f"empty selector is invalid for {kind.lower()}"))
        return errs
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not selector_matches(selector, labels):
        errs.append(invalid_bare("spec.template.metadata.labels", go_map(labels),
                                  "`selector` does not match template `labels`"))
    return errs


def int_or_percent(errs: list[FieldError], path: str, value: Any) -> int | None:
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
            errs.append(field_invalid(path, value, PERCENT_MSG))
            return None
        pct = int(value[:-1])
        if pct > 100:
            errs.append(field_invalid(path, value, "must not be greater than 100%"))
        return pct
    return None


FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")


def go_ints(values: list[Any]) -> Bare:
    return Bare("[]int32{" + ", ".join(str(v) for v in values) + "}")


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
        elif action not in FAILURE_ACTIONS:
            errs.append(field_not_supported(f"{path}.action", action, FAILURE_ACTIONS))
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
                                       go_ints(values)))
            for j, v in enumerate(values):
                if op == "In" and v == 0:
                    errs.append(field_invalid(f"{cpath}.values[{j}]", v, "must not be 0 for the In operator"))
                if v in values[:j]:
                    errs.append(FieldError(f"{cpath}.values[{j}]", "Duplicate", "", v))
            if values != sorted(values):
                errs.append(FieldError(f"{cpath}.values", "Invalid", "must be ordered", go_ints(values)))
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
