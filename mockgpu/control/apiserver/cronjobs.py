"""batch/v1 CronJobs: defaults and validation as kube-apiserver does them, and the schedule parser both the
server and the controller use.

Follows ``SetDefaults_CronJob`` (concurrencyPolicy Allow, suspend false, history limits 3 and 1) and
``ValidateCronJobCreate``/``validateCronJobSpec``/``ValidateJobTemplateSpec`` (field paths and messages). The
schedule is parsed with ``croniter`` restricted to what upstream's ``cron.ParseStandard`` accepts (five fields
or a ``@yearly``-style descriptor); upstream's parser messages for a wrong field count are reproduced, other
parse errors carry croniter's text. Simplified: ``@every <duration>`` (robfig/cron only) is rejected.
"""

from __future__ import annotations

import json
import zoneinfo
from datetime import datetime, tzinfo
from typing import Any

from croniter import croniter
from croniter.croniter import CroniterError

from mockgpu.control.apiserver.status import FieldError, field_invalid, field_not_supported, field_required
from mockgpu.control.apiserver.workloadcommon import (
    default_template,
    invalid_bare,
    nonneg,
    set_default,
    template_errors,
    validate_pod_failure_policy,
)

DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
POLICIES = ("Allow", "Forbid", "Replace")


def _strip_tz(schedule: str) -> str:
    """The schedule without a leading ``TZ=``/``CRON_TZ=`` token (robfig/cron's own time-zone syntax)."""
    fields = schedule.split()
    if fields and (fields[0].startswith("TZ=") or fields[0].startswith("CRON_TZ=")):
        return " ".join(fields[1:])
    return schedule


def parse_error(schedule: str) -> str | None:
    """Why ``schedule`` does not parse as ``cron.ParseStandard`` reads it, or None."""
    text = _strip_tz(schedule).strip()
    if text.startswith("@"):
        if text in DESCRIPTORS:
            return None
        return f"unrecognized descriptor: {text}"
    fields = text.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    try:
        croniter(text)
    except (CroniterError, ValueError, KeyError) as exc:
        return str(exc)
    return None


def zone(name: str | None) -> tzinfo:
    """The schedule's time zone: ``name``, or (as upstream) the controller's local zone when unset."""
    if name:
        return zoneinfo.ZoneInfo(name)
    local = datetime.now().astimezone().tzinfo
    assert local is not None
    return local


def apply_defaults(spec: dict[str, Any]) -> None:
    set_default(spec, "concurrencyPolicy", "Allow")
    set_default(spec, "suspend", False)
    set_default(spec, "successfulJobsHistoryLimit", 3)
    set_default(spec, "failedJobsHistoryLimit", 1)
    template = spec.get("jobTemplate")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_template(template["spec"].get("template"))


def _timezone_errors(tz: Any) -> list[FieldError]:
    path = "spec.timeZone"
    if tz is None:
        return []
    if not isinstance(tz, str) or not tz:
        return [field_invalid(path, tz, "timeZone must be nil or non-empty string")]
    if tz.lower() == "local":
        return [field_invalid(path, tz, "timeZone must be an explicit time zone as defined in "
                                        "https://www.iana.org/time-zones")]
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return [field_invalid(path, tz, f"unknown time zone {tz}")]
    return []


def _prefixed(errs: list[FieldError], prefix: str) -> list[FieldError]:
    """Job-spec errors (``spec.x``) moved under the job template (``spec.jobTemplate.spec.x``)."""
    return [FieldError(prefix + e.field[len("spec."):] if e.field.startswith("spec.") else e.field, e.type,
                       e.detail, e.value, omit_value=e.omit_value) for e in errs]


def validate(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    ospec = (old or {}).get("spec") or {}
    errs: list[FieldError] = []
    schedule = spec.get("schedule")
    if not schedule:
        errs.append(field_required("spec.schedule"))
    elif not isinstance(schedule, str):
        errs.append(field_invalid("spec.schedule", schedule, "must be a string"))
    else:
        problem = parse_error(schedule)
        if problem:
            errs.append(field_invalid("spec.schedule", schedule, problem))
        allow_tz = "TZ" in (ospec.get("schedule") or "") if old is not None else False
        if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
            errs.append(field_invalid("spec.schedule", schedule,
                                      "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
        elif not allow_tz and "TZ" in schedule:
            errs.append(field_invalid("spec.schedule", schedule,
                                      "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    nonneg(errs, "spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    if old is None or ospec.get("timeZone") != spec.get("timeZone"):
        errs += _timezone_errors(spec.get("timeZone"))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        errs.append(field_required("spec.concurrencyPolicy"))
    elif policy not in POLICIES:
        errs.append(field_not_supported("spec.concurrencyPolicy", policy, POLICIES))
    jt = spec.get("jobTemplate") or {}
    jspec = (jt.get("spec") or {}) if isinstance(jt, dict) else {}
    jspec = jspec if isinstance(jspec, dict) else {}
    prefix = "spec.jobTemplate.spec."
    for f in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        nonneg(errs, prefix + f, jspec.get(f))
    errs += template_errors(jspec.get("template"), prefix + "template", ("OnFailure", "Never"))
    errs += _prefixed(validate_pod_failure_policy(jspec), prefix)
    if jspec.get("selector") is not None:
        errs.append(invalid_bare(prefix + "selector", json.dumps(jspec["selector"], sort_keys=True),
                                  "`selector` will be auto-generated"))
    if jspec.get("manualSelector") is True:
        errs.append(field_not_supported(prefix + "manualSelector", True, ("nil", "false")))
    for f in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        nonneg(errs, f"spec.{f}", spec.get(f))
    name = (obj.get("metadata") or {}).get("name") or ""
    if old is None and len(name) > 52:
        errs.append(field_invalid("metadata.name", name, "must be no more than 52 characters"))
    return errs
