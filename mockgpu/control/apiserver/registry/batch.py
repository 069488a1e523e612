"""batch/v1: Jobs and CronJobs (``pkg/registry/batch/{job,cronjob}/strategy.go``; the rules are
``apiserver.workloads`` and ``apiserver.cronjobs``)."""

from __future__ import annotations

from functools import partial
from typing import Any

from mockgpu.control.apiserver import cronjobs, printers, workloads
from mockgpu.control.apiserver.registry.apps import template_quantities
from mockgpu.control.apiserver.registry.kind import STATUS, Kind, Obj, Subresource

GROUP_VERSION = "batch/v1"
SCHEME_KINDS: frozenset[str] = frozenset()


def job_template_quantities(obj: Obj) -> list[dict[str, Any]]:
    """The quantity maps of the Job template's pod template (``spec.jobTemplate.spec.template.spec``)."""
    spec = obj.get("spec") or {}
    if isinstance(spec, dict):
        job = spec.get("jobTemplate") or {}
        spec = ((job.get("spec") or {}) if isinstance(job, dict) else {}) or {}
        spec = spec if isinstance(spec, dict) else {}
    return template_quantities({"spec": spec})


JOB = Kind("jobs", "job", "Job", True, categories=("all",), group="batch",
           subresources=(Subresource("status", "Job", STATUS),),
           prepare=partial(workloads.prepare, defaults=workloads.default_job,
                           on_create=workloads.generate_job_selector),
           defaults=workloads.spec_defaulted(workloads.default_job),
           validate=workloads.validate_job, quantities=template_quantities,
           gc_policy="Orphan",  # Jobs orphan their pods unless told otherwise, for compatibility (job strategy)
           printer=printers.JOB, model="V1Job")
CRONJOB = Kind("cronjobs", "cronjob", "CronJob", True, short_names=("cj",), categories=("all",), group="batch",
               subresources=(Subresource("status", "CronJob", STATUS),),
               prepare=partial(workloads.prepare, defaults=cronjobs.apply_defaults), validate=cronjobs.validate,
               quantities=job_template_quantities, gc_policy="Background", printer=printers.CRONJOB,
               model="V1CronJob")

KINDS = (JOB, CRONJOB)
