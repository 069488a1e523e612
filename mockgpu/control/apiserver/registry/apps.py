"""apps/v1: Deployments, ReplicaSets, DaemonSets, StatefulSets (``pkg/registry/apps/<kind>/strategy.go``).

The shared strategy steps and the Deployment/ReplicaSet rules are ``apiserver.workloads``; DaemonSets' and
StatefulSets' own are ``apiserver.daemonsets`` and ``apiserver.statefulsets``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from mockgpu.control.apiserver import daemonsets, printers, statefulsets, workloads
from mockgpu.control.apiserver.registry.core import container_quantities
from mockgpu.control.apiserver.registry.kind import STATUS, Kind, Obj, Subresource

GROUP_VERSION = "apps/v1"
SCHEME_KINDS = frozenset({"ControllerRevision"})
_SCALE = Subresource("scale", "Scale", STATUS, "autoscaling", "v1")


def template_quantities(obj: Obj) -> list[dict[str, Any]]:
    """The quantity maps of the pod template (``spec.template.spec``)."""
    spec = obj.get("spec") or {}
    if isinstance(spec, dict):
        template = spec.get("template") or {}
        spec = (template.get("spec") or {}) if isinstance(template, dict) else {}
    return container_quantities(spec)


def _workload(plural: str, kind: str, short: str, scale: bool, **strategy: Any) -> Kind:
    subresources = ((_SCALE,) if scale else ()) + (Subresource("status", kind, STATUS),)
    return Kind(plural, plural[:-1], kind, True, short_names=(short,), categories=("all",), group="apps",
                subresources=subresources, quantities=template_quantities, gc_policy="Background", **strategy)


DEPLOYMENT = _workload("deployments", "Deployment", "deploy", True,
                       prepare=partial(workloads.prepare, defaults=workloads.default_deployment),
                       validate=workloads.validate_deployment, printer=printers.DEPLOYMENT, model="V1Deployment")
REPLICASET = _workload("replicasets", "ReplicaSet", "rs", True,
                       prepare=partial(workloads.prepare, defaults=workloads.default_replicaset),
                       validate=workloads.validate_replicaset, printer=printers.REPLICASET, model="V1ReplicaSet")
DAEMONSET = _workload("daemonsets", "DaemonSet", "ds", False,
                      prepare=partial(workloads.prepare, defaults=daemonsets.apply_defaults,
                                      empty_status=daemonsets.EMPTY_STATUS,
                                      on_create=partial(daemonsets.template_generation, old=None),
                                      on_update=daemonsets.template_generation),
                      validate=daemonsets.validate, printer=printers.DAEMONSET, model="V1DaemonSet")
STATEFULSET = _workload("statefulsets", "StatefulSet", "sts", True,
                        prepare=partial(workloads.prepare, defaults=statefulsets.apply_defaults,
                                        empty_status=statefulsets.EMPTY_STATUS),
                        validate=statefulsets.validate, printer=printers.STATEFULSET, model="V1StatefulSet")

KINDS = (DEPLOYMENT, REPLICASET, DAEMONSET, STATEFULSET)
