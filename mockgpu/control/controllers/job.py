"""The Job controller (NonIndexed Jobs): run pods until ``completions`` succeed or ``backoffLimit`` is passed.

As upstream's ``job_controller`` (v1.31+): pods ``<job>-<5 chars>`` from the template (which carries the
generated ``batch.kubernetes.io/controller-uid``/``job-name`` labels), owned by the Job, holding the
``batch.kubernetes.io/job-tracking`` finalizer until they are counted (through
``status.uncountedTerminatedPods``, so counts survive a controller restart and pod deletion); at most
``parallelism`` active pods and no more than the remaining completions; ``status.startTime``, ``active``,
``ready``, ``terminating``, ``succeeded``, ``failed``, ``completionTime``; success as ``SuccessCriteriaMet``
then ``Complete`` (reason ``CompletionsReached``, event ``Completed`` "Job completed"), failure as
``FailureTarget`` then ``Failed`` (``BackoffLimitExceeded`` "Job has reached the specified backoff limit",
``DeadlineExceeded`` "Job was active longer than specified deadline"), with the remaining pods deleted in
between; failed pods counted against ``backoffLimit`` (with ``restartPolicy: OnFailure``, container restarts
count too); new pods after failures delayed by the exponential back-off (10 s doubling, at most 6 min);
``suspend`` deletes active pods (``Suspended`` condition); ``podFailurePolicy`` rules on exit codes and pod
conditions (``FailJob`` fails the Job with reason ``PodFailurePolicy``, ``Ignore`` leaves the failure uncounted,
``Count`` counts it). Simplified: Indexed Jobs run as NonIndexed (``FailIndex`` counts as ``Count``),
``successPolicy``, ``backoffLimitPerIndex`` and ``ttlSecondsAfterFinished`` are not acted on, and a terminating
pod counts as failed at once (upstream waits for it to finish).
"""

from __future__ import annotations

import copy
import time
from typing import Any

from kubernetes.client.exceptions import ApiException

from mockgpu.apimachinery.timefmt import rfc3339
from mockgpu.control.controllers import logic
from mockgpu.control.controllers.api import Recorder
from mockgpu.control.controllers.base import Manager
from mockgpu.control.controllers.replicaset import _status_message, delete_pod

Obj = dict[str, Any]
MAX_BACKOFF = 360.0
JSON_PATCH = "application/json-patch+json"


def finished(job: Obj) -> str | None:
    """"Complete" or "Failed" when the Job has that condition true."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def pod_finished(pod: Obj) -> bool:
    return logic.pod_terminal(pod) or bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def still_running(pod: Obj) -> bool:
    """Not yet stopped: not terminal, and not a deleted pod that no kubelet runs (unbound, or done by one)."""
    meta = pod.get("metadata") or {}
    if logic.pod_terminal(pod):
        return False
    if meta.get("deletionTimestamp"):
        return bool((pod.get("spec") or {}).get("nodeName")) and bool(meta.get("deletionGracePeriodSeconds"))
    return True


def match_failure_policy(policy: Obj | None, pod: Obj) -> tuple[str, str] | None:
    """The first ``podFailurePolicy`` rule a failed pod matches: (action, upstream's message), or None.

    ``onExitCodes`` looks at containers that terminated with a non-zero code (``containerName`` narrows it);
    ``onPodConditions`` at the pod's conditions (status defaults to "True")."""
    if not policy or (pod.get("status") or {}).get("phase") != "Failed":
        return None
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    who = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    for i, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action", "")
        codes = rule.get("onExitCodes")
        if codes:
            for cs in list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or []):
                code = ((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
                if not code or (codes.get("containerName") and codes["containerName"] != cs.get("name")):
                    continue
                inside = code in (codes.get("values") or [])
                if inside == (codes.get("operator") == "In"):
                    return action, (f"Container {cs.get('name')} for pod {who} failed with exit code {code} "
                                    f"matching {action} rule at index {i}")
        for pattern in rule.get("onPodConditions") or []:
            for cond in status.get("conditions") or []:
                if cond.get("type") == pattern.get("type") and cond.get("status") == pattern.get("status", "True"):
                    return action, f"Pod {who} has condition {cond.get('type')} matching {action} rule at index {i}"
    return None


def backoff_delay(failures: int, base: float) -> float:
    """The delay before the next pod after ``failures`` consecutive failures (upstream's pod failure back-off)."""
    return 0.0 if failures <= 0 else min(base * 2 ** (failures - 1), MAX_BACKOFF)


def want_active(spec: Obj, succeeded: int) -> int:
    """Active pods a NonIndexed Job wants: parallelism, capped by the completions still missing."""
    parallelism = int(spec.get("parallelism") or 0)
    completions = spec.get("completions")
    if completions is None:
        return 0 if succeeded > 0 else parallelism
    return max(0, min(parallelism, int(completions) - succeeded))


class JobController:
    def __init__(self, mgr: Manager, *, backoff: float = 10.0) -> None:
        self.mgr = mgr
        self.backoff = backoff
        self.recorder = Recorder(mgr.api, "job-controller")

    def sync(self, ns: str, name: str) -> None:
        job = self.mgr.cache.get("jobs", ns, name)
        if job is None:
            self._release_orphans(ns)
            return
        pods = self.mgr.cache.owned("pods", job)
        status = copy.deepcopy(job.get("status") or {})
        if finished(job):  # nothing is counted any more: finished pods only lose the tracking finalizer
            for pod in pods:
                if pod_finished(pod) and logic.JOB_TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or []):
                    self._drop_finalizer(pod)
            return
        if job["metadata"].get("deletionTimestamp"):
            self._count(job, status, pods)
            return
        spec = job.get("spec") or {}
        now = time.time()
        if not status.get("startTime") and not spec.get("suspend"):
            status["startTime"] = rfc3339(now)
        status = self._count(job, status, pods)
        pods = self.mgr.cache.owned("pods", job)
        active = [p for p in pods if not pod_finished(p)]
        succeeded, failed = int(status.get("succeeded") or 0), int(status.get("failed") or 0)

        target = logic.get_condition(status, "FailureTarget") or logic.get_condition(status, "SuccessCriteriaMet")
        if target is None:
            target = self._finish_reason(job, status, active, succeeded, failed, now)
        if target is not None:
            for pod in active:
                delete_pod(self.mgr, pod)
            active = [p for p in self.mgr.cache.owned("pods", job) if still_running(p)]
            if not active:
                self._finish(job, status, target)
                return
            self._write(job, status, active)
            return

        if spec.get("suspend"):
            for pod in active:
                delete_pod(self.mgr, pod)
            cond = {"type": "Suspended", "status": "True", "lastProbeTime": rfc3339(),
                    "lastTransitionTime": rfc3339(), "reason": "JobSuspended", "message": "Job suspended"}
            if not logic.get_condition(status, "Suspended") or \
                    logic.get_condition(status, "Suspended").get("status") != "True":
                self.recorder.event(job, "Normal", "Suspended", "Job suspended")
            logic.set_condition(status, cond)
            status.pop("startTime", None)
            self._write(job, status, [])
            return
        if (logic.get_condition(status, "Suspended") or {}).get("status") == "True":
            logic.set_condition(status, {"type": "Suspended", "status": "False", "lastProbeTime": rfc3339(),
                                         "lastTransitionTime": rfc3339(), "reason": "JobResumed",
                                         "message": "Job resumed"})
            self.recorder.event(job, "Normal", "Resumed", "Job resumed")

        want = want_active(spec, succeeded)
        if len(active) > want:
            for pod in logic.deletion_order(active)[:len(active) - want]:
                delete_pod(self.mgr, pod)
                self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
        elif len(active) < want:
            delay = self._backoff_left(job, pods, now)
            if delay > 0:
                self.mgr.enqueue("Job", ns, name, after=delay)
            else:
                self._create(job, want - len(active))
        active = [p for p in self.mgr.cache.owned("pods", job) if not pod_finished(p)]
        self._write(job, status, active)
        deadline = spec.get("activeDeadlineSeconds")
        start = logic.parse_time(status.get("startTime"))
        if deadline is not None and start is not None:
            self.mgr.enqueue("Job", ns, name, after=max(0.1, start + int(deadline) - now + 0.1))

    # ---- counting finished pods -------------------------------------------------------------------------------

    def _count(self, job: Obj, status: Obj, pods: list[Obj]) -> Obj:
        """Move newly finished pods into the counts: record them as uncounted, drop their finalizer, count."""
        uncounted = status.get("uncountedTerminatedPods") or {}
        known = set(uncounted.get("succeeded") or []) | set(uncounted.get("failed") or [])
        fresh = [p for p in pods if pod_finished(p) and logic.JOB_TRACKING_FINALIZER in
                 (p["metadata"].get("finalizers") or []) and p["metadata"]["uid"] not in known]
        if fresh:
            new_unc = {"succeeded": list(uncounted.get("succeeded") or []),
                       "failed": list(uncounted.get("failed") or [])}
            policy = (job.get("spec") or {}).get("podFailurePolicy")
            for p in fresh:
                ok = (p.get("status") or {}).get("phase") == "Succeeded"
                if not ok and (match_failure_policy(policy, p) or ("",))[0] == "Ignore":
                    continue  # an Ignore rule: the failure does not count towards backoffLimit
                new_unc["succeeded" if ok else "failed"].append(p["metadata"]["uid"])
            status["uncountedTerminatedPods"] = {k: v for k, v in new_unc.items() if v}
            job = self._write(job, status, None)
            status = copy.deepcopy(job.get("status") or {})
        for p in pods:
            if pod_finished(p) and logic.JOB_TRACKING_FINALIZER in (p["metadata"].get("finalizers") or []):
                self._drop_finalizer(p)
        uncounted = status.get("uncountedTerminatedPods") or {}
        if uncounted.get("succeeded") or uncounted.get("failed"):
            status["succeeded"] = int(status.get("succeeded") or 0) + len(uncounted.get("succeeded") or [])
            status["failed"] = int(status.get("failed") or 0) + len(uncounted.get("failed") or [])
            for key in ("succeeded", "failed"):
                if not status[key]:
                    del status[key]
            status["uncountedTerminatedPods"] = {}
            job = self._write(job, status, None)
            status = copy.deepcopy(job.get("status") or {})
        return status

    def _drop_finalizer(self, pod: Obj) -> None:
        finalizers = pod["metadata"].get("finalizers") or []
        keep = [f for f in finalizers if f != logic.JOB_TRACKING_FINALIZER]
        ops = [{"op": "test", "path": "/metadata/finalizers", "value": finalizers},
               {"op": "replace", "path": "/metadata/finalizers", "value": keep}]
        try:
            out = self.mgr.api.patch("pods", pod["metadata"]["namespace"], pod["metadata"]["name"], ops, JSON_PATCH)
        except ApiException as exc:
            if exc.status == 404:
                self.mgr.cache.remove("pods", pod)
                return
            raise
        self.mgr.wrote("pods", out)

    def _release_orphans(self, ns: str) -> None:
        """Pods without their Job (deleted, or orphaned from it) keep no tracking finalizer, else they could
        never be removed."""
        for pod in self.mgr.cache.list("pods", ns):
            if logic.JOB_TRACKING_FINALIZER not in (pod["metadata"].get("finalizers") or []):
                continue
            ref = logic.controller_of(pod)
            if ref is None or ref.get("kind") != "Job" or self.mgr.cache.get("jobs", ns, ref.get("name", "")) is None:
                self._drop_finalizer(pod)

    # ---- decisions --------------------------------------------------------------------------------------------

    def _finish_reason(self, job: Obj, status: Obj, active: list[Obj], succeeded: int, failed: int,
                       now: float) -> Obj | None:
        """The FailureTarget or SuccessCriteriaMet condition to add now, or None."""
        spec = job.get("spec") or {}
        limit = int(spec.get("backoffLimit") or 0)
        past_on_failure = False  # upstream pastBackoffLimitOnFailure: restarts of running/pending pods
        if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") == "OnFailure":
            restarts = sum(int(c.get("restartCount") or 0) for p in active
                           if (p.get("status") or {}).get("phase") in ("Running", "Pending")
                           for c in list((p.get("status") or {}).get("initContainerStatuses") or [])
                           + list((p.get("status") or {}).get("containerStatuses") or []))
            past_on_failure = restarts > 0 if limit == 0 else restarts >= limit
        stamp = rfc3339(now)
        reason = message = None
        policy = spec.get("podFailurePolicy")
        for pod in self.mgr.cache.owned("pods", job) if policy else []:
            matched = match_failure_policy(policy, pod)
            if matched is not None and matched[0] == "FailJob":
                reason, message = "PodFailurePolicy", matched[1]
                break
        if reason is None and (failed > limit or past_on_failure):
            reason, message = "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        deadline, start = spec.get("activeDeadlineSeconds"), logic.parse_time(status.get("startTime"))
        if reason is None and deadline is not None and start is not None and now - start >= int(deadline):
            reason, message = "DeadlineExceeded", "Job was active longer than specified deadline"
        if reason is not None:
            cond = {"type": "FailureTarget", "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp,
                    "reason": reason, "message": message}
            logic.set_condition(status, cond)
            return cond
        completions = spec.get("completions")
        done = succeeded >= int(completions) if completions is not None else (succeeded > 0 and not active)
        if done:
            cond = {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": stamp,
                    "lastTransitionTime": stamp, "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods"}
            logic.set_condition(status, cond)
            return cond
        return None

    def _finish(self, job: Obj, status: Obj, target: Obj) -> None:
        stamp = rfc3339()
        if target["type"] == "SuccessCriteriaMet":
            logic.set_condition(status, {**target, "type": "Complete", "lastProbeTime": stamp,
                                         "lastTransitionTime": stamp})
            status["completionTime"] = stamp
            self._write(job, status, [])
            self.recorder.event(job, "Normal", "Completed", "Job completed")
        else:
            logic.set_condition(status, {**target, "type": "Failed", "lastProbeTime": stamp,
                                         "lastTransitionTime": stamp})
            self._write(job, status, [])
            self.recorder.event(job, "Warning", target["reason"], target["message"])

    def _backoff_left(self, job: Obj, pods: list[Obj], now: float) -> float:
        """Seconds until a new pod may start after recent failures (0 without failures)."""
        failures = sorted((p for p in pods if (p.get("status") or {}).get("phase") == "Failed"),
                          key=lambda p: _finish_time(p))
        if not failures:
            return 0.0
        consecutive = 0
        for p in reversed(sorted(pods, key=_finish_time)):
            if (p.get("status") or {}).get("phase") == "Succeeded":
                break
            if (p.get("status") or {}).get("phase") == "Failed":
                consecutive += 1
        last = _finish_time(failures[-1])
        return max(0.0, last + backoff_delay(consecutive, self.backoff) - now)

    def _create(self, job: Obj, count: int) -> None:
        template = (job.get("spec") or {}).get("template") or {}
        for _ in range(count):
            pod = logic.pod_from_template(template, job, job["metadata"]["name"], (logic.JOB_TRACKING_FINALIZER,))
            try:
                created = self.mgr.wrote("pods", self.mgr.api.create("pods", job["metadata"]["namespace"], pod))
            except ApiException as exc:
                self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {_status_message(exc)}")
                raise
            self.recorder.event(job, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")

    def _write(self, job: Obj, status: Obj, active: list[Obj] | None) -> Obj:
        """Store ``status`` (with the active/ready/terminating counts when ``active`` is given)."""
        current = self.mgr.cache.get("jobs", job["metadata"]["namespace"], job["metadata"]["name"]) or job
        status = copy.deepcopy(status)
        if active is not None:
            pods = self.mgr.cache.owned("pods", current)
            status["active"] = len(active)
            status["ready"] = sum(1 for p in active if logic.pod_ready(p))
            status["terminating"] = sum(1 for p in pods if p["metadata"].get("deletionTimestamp") and still_running(p))
            if not status["active"]:
                del status["active"]  # omitempty; ``ready`` and ``terminating`` are pointers and stay at 0
        status.setdefault("uncountedTerminatedPods", {})
        if status == (current.get("status") or {}):
            return current
        return self.mgr.wrote("jobs", self.mgr.api.replace("jobs", {**current, "status": status}, status=True))


def _finish_time(pod: Obj) -> float:
    latest = 0.0
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        t = logic.parse_time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        latest = max(latest, t or 0.0)
    return latest or logic.parse_time(pod["metadata"].get("creationTimestamp")) or 0.0
