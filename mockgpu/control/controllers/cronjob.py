"""The CronJob controller: Jobs on a cron schedule, by an injected clock.

As upstream's ``cronjob_controllerv2``: the schedule (parsed with ``croniter``, as the API server validated it)
is evaluated in ``spec.timeZone`` (the controller's local zone when unset); the most recent missed schedule
time since ``status.lastScheduleTime`` (or creation), no further back than ``startingDeadlineSeconds``, starts a
Job named ``<cronjob>-<scheduled time in minutes since the epoch>`` with the template's labels and annotations
plus ``batch.kubernetes.io/cronjob-scheduled-timestamp`` (RFC 3339 in the CronJob's zone) and the CronJob as
controller; a start later than ``startingDeadlineSeconds`` is skipped (``MissSchedule``); more than 100 missed
times warn ``TooManyMissedTimes``; ``concurrencyPolicy`` Allow, Forbid (``JobAlreadyActive``) and Replace (the
active Jobs deleted, background propagation); ``suspend``; finished Jobs leave ``status.active``
(``SawCompletedJob``), vanished ones too (``MissingJob``), unfinished Jobs it controls but did not list warn
``UnexpectedJob`` (as a ``kubectl create job --from=cronjob/x`` Job does); ``status.lastSuccessfulTime`` from the
newest completion; finished Jobs beyond ``successfulJobsHistoryLimit``/``failedJobsHistoryLimit`` deleted oldest
start first; events ``SuccessfulCreate`` "Created job x", ``SuccessfulDelete`` "Deleted job x". The key is
requeued for the next schedule time.

Time comes only from the ``Clock`` the manager was given (``clock.FakeClock`` in tests), never from the
system. Simplified: the requeue delay is measured in real seconds, so a test that moves a fake clock
enqueues the CronJob itself (``ControllerManager.enqueue("CronJob", ns, name)``); ``@every`` schedules are
not supported (rejected by validation).
"""

from __future__ import annotations

import copy
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from croniter import croniter
from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import go_rfc3339
from mockgpu.control.apiserver.cronjobs import parse_error, zone
from mockgpu.control.controllers import logic
from mockgpu.control.controllers.api import Recorder
from mockgpu.control.controllers.base import Manager
from mockgpu.control.controllers.clock import Clock
from mockgpu.control.controllers.replicaset import _status_message

Obj = dict[str, Any]
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
TOO_MANY_MISSED = 100


# ---- pure decisions ---------------------------------------------------------------------------------------

def job_name(cronjob: str, scheduled: datetime) -> str:
    """``getJobName``: the scheduled time in minutes since the epoch, so one schedule time makes one Job."""
    return f"{cronjob}-{int(scheduled.timestamp()) // 60}"


def _schedule(cj: Obj) -> str:
    text = (cj.get("spec") or {}).get("schedule") or ""
    fields = text.split()
    if fields and (fields[0].startswith("TZ=") or fields[0].startswith("CRON_TZ=")):
        return " ".join(fields[1:])
    return text


def _schedule_zone(cj: Obj) -> tzinfo:
    spec = cj.get("spec") or {}
    fields = (spec.get("schedule") or "").split()
    if fields and "=" in fields[0] and fields[0].split("=")[0] in ("TZ", "CRON_TZ"):
        return zoneinfo.ZoneInfo(fields[0].split("=", 1)[1])  # robfig/cron's own prefix, kept on old objects
    return zone(spec.get("timeZone"))


@dataclass(frozen=True)
class Due:
    """The outcome of ``mostRecentScheduleTime`` for one sync."""

    scheduled: datetime | None  # the most recent schedule time not yet run, or None
    missed: int  # how many schedule times were missed (counted up to TOO_MANY_MISSED + 1)
    next_time: datetime  # the first schedule time after now


def most_recent(cj: Obj, now: datetime) -> Due:
    """The most recent schedule time in (earliest, now], where earliest is the last schedule time (or the
    creation time), moved forward to ``now - startingDeadlineSeconds`` when that is later."""
    spec, status = cj.get("spec") or {}, cj.get("status") or {}
    tz = _schedule_zone(cj)
    earliest = (logic.parse_time(status.get("lastScheduleTime"))
                or logic.parse_time((cj.get("metadata") or {}).get("creationTimestamp")) or now.timestamp())
    deadline = spec.get("startingDeadlineSeconds")
    if isinstance(deadline, int):
        earliest = max(earliest, now.timestamp() - deadline)
    it = croniter(_schedule(cj), datetime.fromtimestamp(earliest, UTC).astimezone(tz))
    scheduled, missed = None, 0
    while True:
        t = it.get_next(datetime)
        if t > now:
            nxt = t
            break
        missed += 1
        scheduled = t
        if missed > TOO_MANY_MISSED:  # jump: the latest time at or before now, the next after it
            back = croniter(_schedule(cj), now.astimezone(tz) + timedelta(microseconds=1))
            scheduled = back.get_prev(datetime)
            nxt = croniter(_schedule(cj), now.astimezone(tz)).get_next(datetime)
            break
    return Due(scheduled, missed, nxt)


def finished(job: Obj) -> str | None:
    """``FinishedCondition``: "Complete" or "Failed" when the Job has that condition true."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def history_to_delete(jobs: list[Obj], successful_limit: int | None, failed_limit: int | None) -> list[Obj]:
    """``cleanupFinishedJobs``: the oldest (by ``status.startTime``; unstarted last, then by name) finished Jobs
    beyond each limit."""
    def key(job: Obj) -> tuple:
        start = logic.parse_time((job.get("status") or {}).get("startTime"))
        return (start is None, start or 0.0, job["metadata"]["name"])
    out: list[Obj] = []
    for outcome, limit in (("Complete", successful_limit), ("Failed", failed_limit)):
        if limit is None:
            continue
        done = sorted((j for j in jobs if finished(j) == outcome), key=key)
        out += done[:max(0, len(done) - limit)]
    return out


def job_from_template(cj: Obj, scheduled: datetime) -> Obj:
    """``getJobFromTemplate2``: the Job a schedule time starts."""
    template = (cj.get("spec") or {}).get("jobTemplate") or {}
    tmeta = template.get("metadata") or {}
    tz_name = (cj.get("spec") or {}).get("timeZone")
    annotations = dict(tmeta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP] = go_rfc3339(scheduled.astimezone(zoneinfo.ZoneInfo(tz_name) if tz_name else UTC))
    meta: Obj = {"name": job_name(cj["metadata"]["name"], scheduled), "namespace": cj["metadata"]["namespace"],
                 "annotations": annotations, "ownerReferences": [logic.controller_ref(cj)]}
    if tmeta.get("labels"):
        meta["labels"] = dict(tmeta["labels"])
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": copy.deepcopy(template.get("spec") or {})}


def job_ref(job: Obj) -> Obj:
    meta = job["metadata"]
    return {"kind": "Job", "namespace": meta.get("namespace", ""), "name": meta["name"], "uid": meta.get("uid", ""),
            "apiVersion": "batch/v1", "resourceVersion": meta.get("resourceVersion", "")}


# ---- the controller ---------------------------------------------------------------------------------------

class CronJobController:
    def __init__(self, mgr: Manager, clock: Clock) -> None:
        self.mgr = mgr
        self.clock = clock
        self.recorder = Recorder(mgr.api, "cronjob-controller")

    def sync(self, ns: str, name: str) -> None:
        cj = self.mgr.cache.get("cronjobs", ns, name)
        if cj is None:
            return
        now = self.clock.now()
        status = copy.deepcopy(cj.get("status") or {})
        jobs = self.mgr.cache.owned("jobs", cj)
        self._reconcile_active(cj, status, jobs)
        requeue: datetime | None = None
        if not cj["metadata"].get("deletionTimestamp"):
            requeue = self._schedule(cj, status, now)
            spec = cj.get("spec") or {}
            jobs = self.mgr.cache.owned("jobs", cj)
            for job in history_to_delete(jobs, spec.get("successfulJobsHistoryLimit"),
                                         spec.get("failedJobsHistoryLimit")):
                self._delete_job(cj, status, job)
        for key in ("active",):
            if not status.get(key):
                status.pop(key, None)
        if status != (cj.get("status") or {}):
            self.mgr.wrote("cronjobs", self.mgr.api.replace("cronjobs", {**cj, "status": status}, status=True))
        if requeue is not None:
            self.mgr.enqueue("CronJob", ns, name, after=max(0.1, (requeue - now).total_seconds() + 0.1))

    def _reconcile_active(self, cj: Obj, status: Obj, jobs: list[Obj]) -> None:
        active = list(status.get("active") or [])
        uids = {j["metadata"].get("uid") for j in jobs}
        for job in jobs:
            uid, outcome = job["metadata"].get("uid"), finished(job)
            listed = any(r.get("uid") == uid for r in active)
            if not listed and outcome is None:
                self.recorder.event(cj, "Warning", "UnexpectedJob", "Saw a job that the controller did not create or "
                                    f"forgot: {job['metadata']['name']}")
            elif listed and outcome is not None:
                active = [r for r in active if r.get("uid") != uid]
                self.recorder.event(cj, "Normal", "SawCompletedJob",
                                    f"Saw completed job: {job['metadata']['name']}, condition: {outcome}")
            if outcome is not None:
                done = logic.parse_time((job.get("status") or {}).get("completionTime"))
                last = logic.parse_time(status.get("lastSuccessfulTime"))
                if done is not None and (last is None or done > last):
                    status["lastSuccessfulTime"] = job["status"]["completionTime"]
        for ref in list(active):
            if ref.get("uid") in uids:
                continue
            live = self.mgr.api.get("jobs", ref.get("namespace") or cj["metadata"]["namespace"], ref.get("name", ""))
            if live is None or live["metadata"].get("uid") != ref.get("uid"):
                self.recorder.event(cj, "Normal", "MissingJob", f"Active job went missing: {ref.get('name', '')}")
                active = [r for r in active if r.get("uid") != ref.get("uid")]
        status["active"] = active

    def _schedule(self, cj: Obj, status: Obj, now: datetime) -> datetime | None:
        """Start the Job due now, if any; the time to look again (None: never, until the CronJob changes)."""
        spec = cj.get("spec") or {}
        tz = spec.get("timeZone")
        if tz is not None:
            try:
                zoneinfo.ZoneInfo(tz)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
                self.recorder.event(cj, "Warning", "UnknownTimeZone", f'invalid timeZone: "{tz}": {exc}')
                return None
        if spec.get("suspend"):
            return None
        problem = parse_error(spec.get("schedule") or "")
        if problem:
            self.recorder.event(cj, "Warning", "UnparseableSchedule",
                                f'unparseable schedule: "{spec.get("schedule")}" : {problem}')
            return None
        due = most_recent({**cj, "status": status}, now)
        if due.scheduled is None:
            return due.next_time
        if due.missed > TOO_MANY_MISSED:
            self.recorder.event(cj, "Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease "
                                ".spec.startingDeadlineSeconds or check clock skew")
        scheduled = due.scheduled
        deadline = spec.get("startingDeadlineSeconds")
        if isinstance(deadline, int) and scheduled + timedelta(seconds=deadline) < now:
            self.recorder.event(cj, "Warning", "MissSchedule", "Missed scheduled time to start a job: "
                                + scheduled.astimezone(UTC).strftime("%a, %d %b %Y %H:%M:%S +0000"))
            return due.next_time
        name = job_name(cj["metadata"]["name"], scheduled)
        last = logic.parse_time(status.get("lastScheduleTime"))
        if any(r.get("name") == name for r in status.get("active") or []) or last == scheduled.timestamp():
            return due.next_time
        if spec.get("concurrencyPolicy") == "Forbid" and status.get("active"):
            self.recorder.event(cj, "Normal", "JobAlreadyActive", "Not starting job because prior execution is "
                                "running and concurrency policy is Forbid")
            return due.next_time
        if spec.get("concurrencyPolicy") == "Replace":
            for ref in list(status.get("active") or []):
                job = self.mgr.cache.get("jobs", ref.get("namespace") or cj["metadata"]["namespace"], ref["name"])
                if job is not None:
                    self._delete_job(cj, status, job)
        ns = cj["metadata"]["namespace"]
        try:
            job = self.mgr.wrote("jobs", self.mgr.api.create("jobs", ns, job_from_template(cj, scheduled)))
            self.recorder.event(cj, "Normal", "SuccessfulCreate", f"Created job {job['metadata']['name']}")
        except ApiException as exc:
            if exc.status != 409:
                self.recorder.event(cj, "Warning", "FailedCreate", f"Error creating job: {_status_message(exc)}")
                raise
            job = self.mgr.api.get("jobs", ns, name)
            if job is None or not logic.owned_by(job, cj):
                return None
            if any(r.get("uid") == job["metadata"].get("uid") for r in status.get("active") or []):
                return None
        status["active"] = list(status.get("active") or []) + [job_ref(job)]
        status["lastScheduleTime"] = go_rfc3339(scheduled.astimezone(UTC))
        return due.next_time

    def _delete_job(self, cj: Obj, status: Obj, job: Obj) -> None:
        meta = job["metadata"]
        try:
            self.mgr.api.delete("jobs", meta["namespace"], meta["name"], uid=meta.get("uid"), propagation="Background")
        except ApiException as exc:
            if exc.status not in (404, 409):
                self.recorder.event(cj, "Warning", "FailedDelete", f"Deleted job: {_status_message(exc)}")
                raise
        self.mgr.cache.remove("jobs", job)
        status["active"] = [r for r in status.get("active") or [] if r.get("uid") != meta.get("uid")]
        self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {meta['name']}")
