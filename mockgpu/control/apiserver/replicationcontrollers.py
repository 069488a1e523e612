"""core/v1 ReplicationControllers and PodTemplates: defaults, strategies and validation.

Upstream: ``pkg/apis/core/v1/defaults.go`` (``SetDefaults_ReplicationController``: an empty selector, and empty
labels, become the template's labels; ``replicas`` 1, declaratively), ``pkg/registry/core/replicationcontroller``
and ``pkg/registry/core/podtemplate`` (``PrepareForCreate``: a fresh status and generation 1; an update keeps the
status and bumps the generation when the spec, or a PodTemplate's template, changes) and
``pkg/apis/core/validation`` (``ValidateReplicationController``/``ValidateReplicationControllerSpec``/
``ValidatePodTemplateSpecForRC``/``ValidateReplicationControllerStatus``, ``ValidatePodTemplate``). A
ReplicationController is a ReplicaSet whose selector is an equality map: ``label_selector`` gives it as a
``metav1.LabelSelector`` for the scale subresource and the controllers.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from mockgpu.control.apiserver import names, workloads
from mockgpu.control.apiserver.status import FieldError, field_forbidden, field_invalid, field_required
from mockgpu.control.apiserver.workloadcommon import (
    default_template,
    invalid_bare,
    nonneg,
    set_default,
    template_errors,
)

Obj = dict[str, Any]


# ---- ReplicationControllers ---------------------------------------------------------------------------------------

def default_rc(obj: Obj) -> None:
    """``SetDefaults_ReplicationController`` and ``replicas`` 1, with the pod template's defaults."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    template = spec.get("template")
    labels = ((template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None)
    if isinstance(labels, dict):
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = obj.setdefault("metadata", {})
        if isinstance(meta, dict) and not meta.get("labels"):
            meta["labels"] = dict(labels)
    default_template(template)
    set_default(spec, "replicas", 1)


def prepare_rc(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """The strategy: defaults on every write (decoding), then the workload steps (status ``replicas: 0`` when new,
    the generation)."""
    default_rc(obj)
    return workloads.prepare(obj, old, subresource, defaults=lambda spec: None, empty_status={"replicas": 0})


def label_selector(obj: Obj) -> dict[str, Any] | None:
    """The equality selector as a ``metav1.LabelSelector`` (``labels.SelectorFromSet``)."""
    selector = (obj.get("spec") or {}).get("selector")
    return {"matchLabels": dict(selector)} if isinstance(selector, dict) and selector else None


def validate_rc(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidateReplicationControllerSpec`` (create and update alike)."""
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    nonneg(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    selector = spec.get("selector") or {}
    if not selector:
        errs.append(field_required("spec.selector", ""))
    errs += names.validate_labels(selector, "spec.selector")
    if spec.get("replicas") is None:
        errs.append(field_required("spec.replicas", ""))
    else:
        nonneg(errs, "spec.replicas", spec.get("replicas"))
    template = spec.get("template")
    if not isinstance(template, dict):
        return errs + [field_required("spec.template", "")]
    labels = (template.get("metadata") or {}).get("labels") or {}
    if selector and not set(selector.items()) <= set(labels.items()):
        errs.append(invalid_bare("spec.template.metadata.labels", json.dumps(labels, separators=(",", ":"),
                                                                             sort_keys=True),
                                 "`selector` does not match template `labels`"))
    errs += template_errors(template, "spec.template", ("Always",))
    if (template.get("spec") or {}).get("activeDeadlineSeconds") is not None:
        errs.append(field_forbidden("spec.template.spec.activeDeadlineSeconds",
                                    "activeDeadlineSeconds in ReplicationController is not Supported"))
    return errs


def validate_rc_status(obj: Obj, old: Obj) -> list[FieldError]:
    """``ValidateReplicationControllerStatus``."""
    status = obj.get("status") or {}
    errs: list[FieldError] = []
    counts = {}
    for key in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"):
        nonneg(errs, f"status.{key}", status.get(key))
        value = status.get(key)
        counts[key] = value if isinstance(value, int) and not isinstance(value, bool) else 0
    msg = "cannot be greater than status.replicas"
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if counts[key] > counts["replicas"]:
            errs.append(field_invalid(f"status.{key}", counts[key], msg))
    if counts["availableReplicas"] > counts["readyReplicas"]:
        errs.append(field_invalid("status.availableReplicas", counts["availableReplicas"],
                                  "cannot be greater than readyReplicas"))
    return errs


def rc_field_labels() -> dict[str, Any]:
    """``ControllerToSelectableFields``: ``status.replicas`` besides the metadata's."""
    return {"status.replicas": lambda o: str(int((o.get("status") or {}).get("replicas") or 0))}


# ---- PodTemplates -------------------------------------------------------------------------------------------------

def prepare_podtemplate(obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """The pod template's defaults (decoding), generation 1 on create, bumped when the template changes."""
    template = set_default(obj, "template", {})  # a struct upstream: its defaults apply even when absent
    if isinstance(template, dict):
        set_default(template, "spec", {})
    default_template(template)
    meta = obj.setdefault("metadata", {})
    if old is None:
        meta["generation"] = 1
        return obj
    generation = int((old.get("metadata") or {}).get("generation") or 0)
    changed = copy.deepcopy(obj.get("template")) != old.get("template")
    meta["generation"] = generation + 1 if changed else generation
    return obj


def validate_podtemplate(obj: Obj, old: Obj | None) -> list[FieldError]:
    """``ValidatePodTemplate``: the template as a pod's (``ValidatePodTemplateSpec``), any restart policy."""
    return template_errors(obj.get("template"), "template", ("Always", "OnFailure", "Never"))
