"""The gang view's model: each Job's workers (wanted, bound, running), the GPUs they hold and whether the Job
trains, and each PodGroup (minCount, pods bound, its ``PodGroupInitiallyScheduled`` status) — lab 11.

"Training" is the rendezvous of distributed training: a worker of ``torch.distributed`` (NCCL) blocks in
``init_process_group`` until all ``WORLD_SIZE`` ranks have connected, holding its GPUs the while. mockgpu's
workers cannot reach each other (a pod has no network in the sandbox), so the view plays the rendezvous from
the API: a Job trains when all ``parallelism`` of its workers run; until then its bound workers hold GPUs and do
nothing. Pure: built from API lists, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Any

from mockgpu.widgets.snapshot import JOB_NAME_LABEL, gpu_requests, is_terminal, pod_phase

Obj = dict[str, Any]
FONT = "font-family:system-ui,sans-serif;font-size:12px"


@dataclass(frozen=True)
class JobRow:
    name: str
    wanted: int  # spec.parallelism: the world size
    bound: int
    running: int
    gpus_held: int  # GPUs of its bound, unfinished workers
    done: bool
    group: str = ""  # the PodGroup its workers name, if any

    @property
    def training(self) -> bool:
        return not self.done and self.wanted > 0 and self.running == self.wanted

    @property
    def state(self) -> str:
        if self.done:
            return "done"
        if self.training:
            return f"training ({self.running}/{self.wanted} workers)"
        if self.bound:
            return f"waiting for peers ({self.running}/{self.wanted} running, {self.bound} bound)"
        return f"no worker placed (0/{self.wanted})"


@dataclass(frozen=True)
class GroupRow:
    name: str
    min_count: int | None  # None: a basic policy
    bound: int
    status: str  # Pending | Scheduled | Unschedulable, as kubectl get podgroups prints it
    message: str = ""


@dataclass
class GangModel:
    jobs: list[JobRow] = field(default_factory=list)
    groups: list[GroupRow] = field(default_factory=list)

    @property
    def gpus_held(self) -> int:
        return sum(j.gpus_held for j in self.jobs)

    @property
    def gpus_training(self) -> int:
        return sum(j.gpus_held for j in self.jobs if j.training)

    def describe(self) -> str:
        """Plain text: one line per Job and PodGroup, then the totals."""
        lines = [f"Job {j.name}: {j.state}, {j.gpus_held} GPUs held" + (f", group {j.group}" if j.group else "")
                 for j in self.jobs]
        lines += [f"PodGroup {g.name}: minCount {g.min_count if g.min_count is not None else '-'}, {g.bound} bound, "
                  f"{g.status}" for g in self.groups]
        lines.append(f"GPUs held: {self.gpus_held}, training: {self.gpus_training}")
        return "\n".join(lines)


def _status(pg: Mapping[str, Any]) -> tuple[str, str]:
    """``printPodGroup``'s Status column and the condition's message."""
    conditions = {c.get("type"): c for c in (pg.get("status") or {}).get("conditions") or [] if isinstance(c, dict)}
    status, message = "Pending", ""
    cond = conditions.get("PodGroupInitiallyScheduled")
    if cond is not None:
        status = "Scheduled" if cond.get("status") == "True" else "Unschedulable"
        message = str(cond.get("message") or "")
    if "DisruptionTarget" in conditions:
        status = str(conditions["DisruptionTarget"].get("reason") or "")
    return status, message


def _group_of(pod: Mapping[str, Any]) -> str:
    group = (pod.get("spec") or {}).get("schedulingGroup") or {}
    return str(group.get("podGroupName") or "") if isinstance(group, dict) else ""


def gang_view(pods: Iterable[Obj], jobs: Iterable[Obj], podgroups: Iterable[Obj] = (),
              resource: str = "nvidia.com/gpu") -> GangModel:
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    model = GangModel()
    for job in sorted(jobs, key=lambda j: j["metadata"]["name"]):
        name = job["metadata"]["name"]
        spec, status = job.get("spec") or {}, job.get("status") or {}
        mine = [p for p in live if ((p.get("metadata") or {}).get("labels") or {}).get(JOB_NAME_LABEL) == name]
        working = [p for p in mine if not is_terminal(p)]
        bound = [p for p in working if (p.get("spec") or {}).get("nodeName")]
        completions = spec.get("completions") or spec.get("parallelism") or 1
        done = int(status.get("succeeded") or 0) >= int(completions)
        groups = {g for g in (_group_of(p) for p in mine) if g}
        template_group = _group_of(spec.get("template") or {})
        model.jobs.append(JobRow(
            name, int(spec.get("parallelism") or 0), len(bound), sum(pod_phase(p) == "Running" for p in working),
            sum(gpu_requests(p).get(resource, 0) for p in bound), done,
            template_group or ", ".join(sorted(groups))))
    for pg in sorted(podgroups, key=lambda g: g["metadata"]["name"]):
        name = pg["metadata"]["name"]
        gang = ((pg.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
        bound = sum(1 for p in live if _group_of(p) == name and (p.get("spec") or {}).get("nodeName")
                    and not is_terminal(p))
        status, message = _status(pg)
        model.groups.append(GroupRow(name, int(gang.get("minCount") or 0) if isinstance(gang, dict) else None,
                                     bound, status, message))
    return model


def _table(header: list[str], rows: list[list[str]]) -> str:
    th = "".join(f'<th style="text-align:left;padding:2px 6px">{escape(h)}</th>' for h in header)
    trs = "".join("<tr>" + "".join(f'<td style="padding:2px 6px;text-align:left">{c}</td>' for c in r) + "</tr>"
                  for r in rows)
    return f'<table style="border-collapse:collapse"><tr>{th}</tr>{trs}</table>'


def _bar(held: int, training: bool) -> str:
    color = "#16a34a" if training else "#f59e0b"
    return "".join(f'<span style="display:inline-block;width:12px;height:12px;margin-right:2px;background:{color};'
                   f'border-radius:2px"></span>' for _ in range(held))


def gangs_html(m: GangModel) -> str:
    """The Jobs (a tile per GPU held: green training, amber waiting for peers) and the PodGroups."""
    jobs = _table(["Job", "workers", "GPUs held", "state", "PodGroup"],
                  [[escape(j.name), f"{j.running} running / {j.bound} bound / {j.wanted}",
                    f"{_bar(j.gpus_held, j.training)} {j.gpus_held}", escape(j.state), escape(j.group or "-")]
                   for j in m.jobs]) if m.jobs else "<div>no Jobs</div>"
    out = [f'<div class="mockgpu-gangs" style="{FONT}">', jobs]
    if m.groups:
        out.append(_table(["PodGroup", "minCount", "pods bound", "status", "message"],
                          [[escape(g.name), str(g.min_count if g.min_count is not None else "-"), str(g.bound),
                            escape(g.status), escape(g.message)] for g in m.groups]))
    held_color = "#b45309" if m.gpus_held > m.gpus_training else "#065f46"
    out.append(f'<div><b style="color:{held_color}">GPUs held: {m.gpus_held}</b> · '
               f'<b>training: {m.gpus_training}</b></div></div>')
    return "".join(out)
