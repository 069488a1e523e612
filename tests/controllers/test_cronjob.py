"""The CronJob controller on a driven clock (no cluster): schedule arithmetic, Job naming, history limits, and
one sync's decisions for each concurrency policy, suspend and startingDeadlineSeconds, against a recording
stand-in for the API (``FakeApi``) and the manager's real cache."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import go_rfc3339 as rfc3339
from mockgpu.control.apiserver.cronjobs import parse_error
from mockgpu.control.controllers.clock import FakeClock
from mockgpu.control.controllers.cronjob import (
    SCHEDULED_TIMESTAMP,
    CronJobController,
    history_to_delete,
    job_from_template,
    job_name,
    most_recent,
)
from mockgpu.control.controllers.manager import Cache

T0 = datetime(2026, 12, 3, 10, 0, 0, tzinfo=UTC)


def at(hh: int, mm: int, ss: int = 0) -> datetime:
    return T0.replace(hour=hh, minute=mm, second=ss)


CREATED = at(9, 58)


def cronjob(schedule: str = "*/5 * * * *", created: datetime = CREATED, **spec: object) -> dict:
    body = {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "tick", "namespace": "ns", "uid": "cj-uid", "resourceVersion": "1",
                         "creationTimestamp": rfc3339(created)},
            "spec": {"schedule": schedule, "concurrencyPolicy": "Allow", "suspend": False,
                     "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                     "jobTemplate": {"metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                                     "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                                         {"name": "c", "image": "x"}]}}}}},
            "status": {}}
    body["spec"].update(spec)
    return body


# ---- pure ---------------------------------------------------------------------------------------------------

def test_job_name_is_minutes_since_the_epoch():
    assert job_name("tick", at(10, 0)) == f"tick-{int(at(10, 0).timestamp()) // 60}"
    assert job_name("tick", at(10, 0)) != job_name("tick", at(10, 1))
    assert job_name("tick", at(10, 0, 59)) == job_name("tick", at(10, 0))


MOST_RECENT = [
    ("nothing due before the first time", {}, at(9, 59), None, 0, at(10, 0)),
    ("the first time just passed", {}, at(10, 0, 10), at(10, 0), 1, at(10, 5)),
    ("several missed: the latest", {}, at(10, 16), at(10, 15), 4, at(10, 20)),
    ("already ran", {"lastScheduleTime": "2026-12-03T10:00:00Z"}, at(10, 3), None, 0, at(10, 5)),
    ("startingDeadlineSeconds limits how far back", {"startingDeadlineSeconds": 200}, at(10, 16), at(10, 15), 1,
     at(10, 20)),
]


@pytest.mark.parametrize(("case", "extra", "now", "scheduled", "missed", "next_time"), MOST_RECENT,
                         ids=[c[0] for c in MOST_RECENT])
def test_most_recent_schedule_time(case, extra, now, scheduled, missed, next_time):
    cj = cronjob()
    if "lastScheduleTime" in extra:
        cj["status"]["lastScheduleTime"] = extra["lastScheduleTime"]
    if "startingDeadlineSeconds" in extra:
        cj["spec"]["startingDeadlineSeconds"] = extra["startingDeadlineSeconds"]
    due = most_recent(cj, now)
    assert (due.scheduled, due.missed, due.next_time) == (scheduled, missed, next_time)


def test_schedule_follows_the_time_zone():
    cj = cronjob("0 9 * * *", created=datetime(2026, 12, 2, 0, 0, tzinfo=UTC), timeZone="Asia/Tokyo")
    due = most_recent(cj, datetime(2026, 12, 3, 0, 30, tzinfo=UTC))  # 09:30 in Tokyo
    assert due.scheduled == datetime(2026, 12, 3, 0, 0, tzinfo=UTC)
    job = job_from_template(cj, due.scheduled)
    assert job["metadata"]["annotations"][SCHEDULED_TIMESTAMP] == "2026-12-03T09:00:00+09:00"


def test_too_many_missed_times_still_finds_the_latest():
    cj = cronjob("* * * * *", created=at(6, 0))
    due = most_recent(cj, at(10, 0, 30))
    assert due.missed == 101 and due.scheduled == at(10, 0) and due.next_time == at(10, 1)


def test_job_from_template():
    job = job_from_template(cronjob(), at(10, 5))
    assert job["metadata"]["name"] == job_name("tick", at(10, 5))
    assert job["metadata"]["labels"] == {"team": "a"}
    assert job["metadata"]["annotations"] == {"note": "x", SCHEDULED_TIMESTAMP: "2026-12-03T10:05:00Z"}
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert job["metadata"]["ownerReferences"][0]["controller"] is True
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def finished_job(name: str, outcome: str, start: str | None) -> dict:
    status = {"conditions": [{"type": outcome, "status": "True"}]}
    if start:
        status["startTime"] = start
    return {"metadata": {"name": name}, "status": status}


def test_history_limits_delete_the_oldest_starts():
    jobs = [finished_job("ok1", "Complete", "2026-01-01T00:01:00Z"),
            finished_job("ok2", "Complete", None),
            finished_job("ok0", "Complete", "2026-01-01T00:00:00Z"),
            finished_job("bad1", "Failed", "2026-01-01T00:05:00Z"),
            finished_job("bad0", "Failed", "2026-01-01T00:04:00Z"),
            {"metadata": {"name": "running"}, "status": {}}]
    assert [j["metadata"]["name"] for j in history_to_delete(jobs, 1, 1)] == ["ok0", "ok1", "bad0"]
    assert [j["metadata"]["name"] for j in history_to_delete(jobs, 3, 0)] == ["bad0", "bad1"]
    assert history_to_delete(jobs, None, None) == []


SCHEDULES = [("*/5 * * * *", None), ("@hourly", None), ("0 0 * * 1-5", None),
             ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
             ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
             ("@every 1h", "unrecognized descriptor: @every 1h")]


@pytest.mark.parametrize(("schedule", "error"), SCHEDULES)
def test_schedule_parsing(schedule, error):
    assert parse_error(schedule) == error


def test_out_of_range_fields_do_not_parse():
    assert parse_error("61 * * * *") is not None
    assert parse_error("* * 32 * *") is not None


# ---- one sync, with a recording API ------------------------------------------------------------------------------

class FakeApi:
    """Creates, deletes and status writes of jobs and cronjobs, and events, recorded in order."""

    def __init__(self) -> None:
        self.objs: dict[tuple[str, str], dict] = {}
        self.events: list[tuple[str, str, str]] = []
        self.deleted: list[str] = []
        self._rv = itertools.count(100)
        self._uid = itertools.count(1)

    def create(self, plural: str, ns: str, body: dict) -> dict:
        if plural == "events":
            self.events.append((body["type"], body["reason"], body["message"]))
            return body
        name = body["metadata"]["name"]
        if (plural, name) in self.objs:
            raise ApiException(status=409, reason="AlreadyExists")
        obj = {**body, "metadata": {**body["metadata"], "uid": f"uid-{next(self._uid)}",
                                    "resourceVersion": str(next(self._rv))}}
        self.objs[(plural, name)] = obj
        return obj

    def get(self, plural: str, ns: str, name: str) -> dict | None:
        return self.objs.get((plural, name))

    def delete(self, plural: str, ns: str, name: str, **_: object) -> dict:
        self.deleted.append(name)
        return self.objs.pop((plural, name), {})

    def replace(self, plural: str, obj: dict, *, status: bool = False) -> dict:
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(next(self._rv))}}
        self.objs[(plural, obj["metadata"]["name"])] = obj
        return obj

    def patch(self, *args: object, **kwargs: object) -> dict:
        return {}


class FakeManager:
    def __init__(self) -> None:
        self.api = FakeApi()
        self.cache = Cache()
        self.requeued: list[float] = []

    def wrote(self, plural: str, obj: dict) -> dict:
        self.cache.put(plural, obj)
        return obj

    def enqueue(self, kind: str, ns: str, name: str, after: float = 0.0) -> None:
        self.requeued.append(after)


def harness(cj: dict, now: datetime) -> tuple[FakeManager, CronJobController, FakeClock]:
    mgr = FakeManager()
    mgr.cache.put("cronjobs", cj)
    clock = FakeClock(now)
    return mgr, CronJobController(mgr, clock), clock  # type: ignore[arg-type]


def status_of(mgr: FakeManager) -> dict:
    return mgr.cache.get("cronjobs", "ns", "tick")["status"]


def jobs(mgr: FakeManager) -> list[str]:
    return sorted(name for plural, name in mgr.api.objs if plural == "jobs")


def finish(mgr: FakeManager, name: str, outcome: str = "Complete", at_: str = "2026-12-03T10:06:00Z") -> None:
    job = mgr.api.objs[("jobs", name)]
    job = {**job, "metadata": {**job["metadata"], "resourceVersion": "999"},
           "status": {"conditions": [{"type": outcome, "status": "True"}], "startTime": at_,
                      **({"completionTime": at_} if outcome == "Complete" else {})}}
    mgr.api.objs[("jobs", name)] = job
    mgr.cache.put("jobs", job)


def test_a_due_time_creates_one_job_and_records_it():
    mgr, ctl, clock = harness(cronjob(), at(9, 59))
    ctl.sync("ns", "tick")
    assert jobs(mgr) == [] and mgr.requeued and 60 <= mgr.requeued[-1] <= 61  # wakes at 10:00
    clock.set(at(10, 0, 5))
    ctl.sync("ns", "tick")
    name = job_name("tick", at(10, 0))
    assert jobs(mgr) == [name]
    status = status_of(mgr)
    assert status["lastScheduleTime"] == "2026-12-03T10:00:00Z"
    assert [r["name"] for r in status["active"]] == [name] and status["active"][0]["kind"] == "Job"
    assert mgr.api.events == [("Normal", "SuccessfulCreate", f"Created job {name}")]
    ctl.sync("ns", "tick")  # the same time again: nothing new
    assert jobs(mgr) == [name]


def test_completion_leaves_active_and_sets_last_successful_time():
    mgr, ctl, clock = harness(cronjob(), at(10, 0, 5))
    ctl.sync("ns", "tick")
    name = job_name("tick", at(10, 0))
    finish(mgr, name)
    ctl.sync("ns", "tick")
    status = status_of(mgr)
    assert "active" not in status and status["lastSuccessfulTime"] == "2026-12-03T10:06:00Z"
    assert ("Normal", "SawCompletedJob", f"Saw completed job: {name}, condition: Complete") in mgr.api.events


@pytest.mark.parametrize(("policy", "want_jobs", "want_event"), [
    ("Allow", 2, None),
    ("Forbid", 1, ("Normal", "JobAlreadyActive",
                   "Not starting job because prior execution is running and concurrency policy is Forbid")),
    ("Replace", 1, ("Normal", "SuccessfulDelete", "Deleted job tick-{first}")),
])
def test_concurrency_policies(policy, want_jobs, want_event):
    mgr, ctl, clock = harness(cronjob(concurrencyPolicy=policy), at(10, 0, 5))
    ctl.sync("ns", "tick")
    first = int(at(10, 0).timestamp()) // 60
    clock.set(at(10, 5, 5))
    ctl.sync("ns", "tick")
    assert len(jobs(mgr)) == want_jobs
    active = [r["name"] for r in status_of(mgr).get("active", [])]
    if policy == "Forbid":
        assert active == [f"tick-{first}"] and status_of(mgr)["lastScheduleTime"] == "2026-12-03T10:00:00Z"
    else:
        assert active[-1] == job_name("tick", at(10, 5))
    if policy == "Replace":
        assert active == [job_name("tick", at(10, 5))] and mgr.api.deleted == [f"tick-{first}"]
    if want_event is not None:
        event = (want_event[0], want_event[1], want_event[2].format(first=first))
        assert event in mgr.api.events


def test_suspended_cronjob_starts_nothing():
    mgr, ctl, clock = harness(cronjob(suspend=True), at(10, 7))
    ctl.sync("ns", "tick")
    assert jobs(mgr) == [] and "lastScheduleTime" not in status_of(mgr)


def test_starting_deadline_missed_is_an_event_not_a_job():
    cj = cronjob("0 10 * * *", startingDeadlineSeconds=30)
    cj["status"]["lastScheduleTime"] = "2026-12-02T10:00:00Z"
    mgr, ctl, clock = harness(cj, at(10, 0, 20))
    ctl.sync("ns", "tick")  # within the deadline: runs
    assert jobs(mgr) == [job_name("tick", at(10, 0))]
    cj2 = cronjob("0 10 * * *", startingDeadlineSeconds=30)
    cj2["status"]["lastScheduleTime"] = "2026-12-02T10:00:00Z"
    mgr, ctl, clock = harness(cj2, at(10, 1))
    ctl.sync("ns", "tick")  # 60 s late: the window (now - 30 s) holds no schedule time at all
    assert jobs(mgr) == []


def test_history_limit_deletes_old_finished_jobs():
    mgr, ctl, clock = harness(cronjob(successfulJobsHistoryLimit=1), at(10, 0, 5))
    names = []
    for minute in (0, 5, 10):
        clock.set(at(10, minute, 5))
        ctl.sync("ns", "tick")
        names.append(job_name("tick", at(10, minute)))
        finish(mgr, names[-1], at_=rfc3339(at(10, minute, 30)))
    ctl.sync("ns", "tick")
    assert jobs(mgr) == [names[-1]]
    assert ("Normal", "SuccessfulDelete", f"Deleted job {names[0]}") in mgr.api.events


def test_a_job_deleted_behind_its_back_is_missing():
    mgr, ctl, clock = harness(cronjob(), at(10, 0, 5))
    ctl.sync("ns", "tick")
    name = job_name("tick", at(10, 0))
    job = mgr.api.objs.pop(("jobs", name))
    mgr.cache.remove("jobs", job)
    clock.set(at(10, 1))
    ctl.sync("ns", "tick")
    assert "active" not in status_of(mgr)
    assert ("Normal", "MissingJob", f"Active job went missing: {name}") in mgr.api.events


def test_fake_clock_moves_only_when_told():
    clock = FakeClock(T0)
    assert clock.now() == T0
    assert clock.advance(90) == T0 + timedelta(seconds=90) == clock.now()
    with pytest.raises(ValueError):
        FakeClock(datetime(2026, 1, 1))
