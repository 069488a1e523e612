"""HTML for the view models (pure functions: model in, string out; the panels put it in an ``HTML`` widget).

CSS classes a browser test can look for: ``mockgpu-clustermap``, ``mockgpu-node``, ``mockgpu-gpu``,
``mockgpu-mig``, ``mockgpu-replica``, ``mockgpu-inspector``, ``mockgpu-memory``, ``mockgpu-timeline``,
``mockgpu-error``. Each element carries ``data-*`` attributes naming the node, GPU and pod it shows.
"""

from __future__ import annotations

from html import escape

from mockgpu.widgets.clustermap import MIG_SLOTS, ClusterMapModel, GpuTile, Holder, NodeCard
from mockgpu.widgets.colors import FREE, UNHEALTHY
from mockgpu.widgets.inspector import InspectorModel
from mockgpu.widgets.memory import GpuMemory
from mockgpu.widgets.timeline import PRICE_SOURCE, TimelineModel

FONT = "font-family:system-ui,sans-serif;font-size:12px"


def error_html(message: str) -> str:
    return (f'<div class="mockgpu-error" style="{FONT};border:1px solid #b91c1c;background:#fef2f2;'
            f'color:#7f1d1d;padding:8px;border-radius:4px">{escape(message)}</div>')


# a red badge, not an emoji: Debian's chromium has no emoji font by default (DejaVu has ☠ and ↻)
OOM_BADGE = (' <span class="mockgpu-oom" style="background:#b91c1c;color:#fff;font-weight:bold;padding:0 4px;'
             'border-radius:2px">OOM</span>')
CHIP = "flex:0 0 14px"  # one replica's row in a tile
CHIP_WHOLE = "flex:1 1 0;min-height:0"  # fills a whole GPU's box
CHIP_INLINE = "display:inline-block;margin:0 2px"  # outside any tile


def _chip(h: Holder, size: str = CHIP) -> str:
    """A pod's chip: its name (cut with an ellipsis when long) and, never cut, its restart count."""
    title = (f"{h.pod}{f' of {h.owner}' if h.owner else ''} ({h.phase}"
             + (f", {h.restarts} restarts" if h.restarts else "") + f") {h.device_id}"
             + (f", {h.used_mib} MiB" if h.used_mib else ""))
    restarts = (f'<span class="mockgpu-restarts" style="flex:0 0 auto;font-weight:bold;margin-left:3px">'
                f"↻{h.restarts}</span>" if h.restarts else "")
    return (f'<div class="mockgpu-replica" data-pod="{escape(h.pod)}" title="{escape(title)}" '
            f'style="background:{h.color};padding:0 3px;margin:1px 0;border-radius:2px;overflow:hidden;'
            f'display:flex;align-items:flex-start;box-sizing:border-box;line-height:14px;{size}">'
            f'<span style="flex:1 1 auto;min-width:0;overflow:hidden;white-space:nowrap;text-overflow:ellipsis">'
            f"{escape(h.name)}</span>{restarts}</div>")


def _slot_box(inner: str, height: int) -> str:
    """A fixed-height column inside the tile, so chips can never be laid out beyond its edges."""
    return (f'<div style="height:{height}px;display:flex;flex-direction:column;overflow:hidden;margin:2px 0">'
            f"{inner}</div>")


def _mig_bar(g: GpuTile) -> str:
    """The instances at their memory slots (short labels: 1g, 3g), then one readable line per instance."""
    cells, legend = [], []
    for s in g.mig:
        h = s.holders[0] if s.holders else None
        color = h.color if h else (FREE if s.healthy else UNHEALTHY)
        label = escape(s.profile + (f": {h.name}" if h else ""))
        left, width = 100 * s.start / MIG_SLOTS, 100 * s.size / MIG_SLOTS
        cells.append(f'<div class="mockgpu-mig" data-uuid="{escape(s.uuid)}" data-start="{s.start}" '
                     f'data-size="{s.size}" data-pod="{escape(h.pod) if h else ""}" title="{label}" '
                     f'style="position:absolute;left:{left:.2f}%;width:{width:.2f}%;top:0;bottom:0;'
                     f'background:{color};border:1px solid #fff;box-sizing:border-box;font-size:10px;'
                     f'text-align:center;overflow:hidden">{escape(s.profile.split(".")[0])}</div>')
        legend.append(f'<div class="mockgpu-mig-line" style="white-space:nowrap;overflow:hidden;'
                      f'text-overflow:ellipsis"><span style="background:{color};border:1px solid #9ca3af;'
                      f'padding:0 4px;margin-right:3px">@{s.start}</span>{label}</div>')
    return (f'<div style="position:relative;height:34px;background:#f3f4f6;margin:2px 0">{"".join(cells)}</div>'
            f'<div style="font-size:11px">{"".join(legend)}</div>')


def gpu_tile_html(g: GpuTile) -> str:
    pct = 100 * g.memory_used_mib / g.memory_total_mib if g.memory_total_mib else 0
    border = "#111827" if g.healthy else "#dc2626"
    if g.mig:
        body = _mig_bar(g)
    elif g.replicas > 1:
        free = max(0, g.replicas - len(g.holders))
        body = _slot_box("".join(_chip(h) for h in g.holders) + "".join(
            f'<div style="background:{FREE};margin:1px 0;flex:0 0 14px"></div>' for _ in range(free)),
            16 * g.replicas)
    else:
        body = _slot_box("".join(_chip(h, CHIP_WHOLE) for h in g.holders) or
                         f'<div style="background:{FREE};flex:1 1 0"></div>', 34)
    links = f" NVLink→{','.join(map(str, g.nvlink_peers))}" if g.nvlink_peers else ""
    return (f'<div class="mockgpu-gpu" data-index="{g.index}" data-uuid="{escape(g.uuid)}" data-mode="{g.mode}" '
            f'style="border:1px solid {border};border-radius:3px;padding:3px;width:{240 if g.mig else 130}px;'
            f'margin:2px">'
            f'<div><b>GPU {g.index}</b> {escape(g.mode)}{escape(links)}</div>{body}'
            f'<div style="height:5px;background:{FREE}"><div style="height:5px;width:{pct:.1f}%;'
            f'background:#2563eb"></div></div><div>{g.memory_used_mib // 1024}/{g.memory_total_mib // 1024} GiB'
            f'{"" if g.healthy else " UNHEALTHY"}</div></div>')


def node_card_html(n: NodeCard) -> str:
    res = " ".join(f"{escape(r.removeprefix('nvidia.com/'))} {used}/{alloc}" for r, (alloc, used) in
                   n.resources.items())
    gpus = "".join(gpu_tile_html(g) for g in n.gpus)
    unplaced = "".join(_chip(h, CHIP_INLINE) for h in n.unplaced)
    if n.unplaced:
        unplaced = f'<div style="width:100%">devices not published: {unplaced}</div>'
    return (f'<div class="mockgpu-node" data-node="{escape(n.name)}" style="border:1px solid #9ca3af;'
            f'border-radius:6px;padding:6px;margin:4px;background:{"#fff" if n.ready else "#fee2e2"}">'
            f'<div><b>{escape(n.name)}</b> {escape(n.product)}</div><div style="color:#4b5563">{res}</div>'
            f'<div style="display:flex;flex-wrap:wrap">{gpus}{unplaced}</div></div>')


def cluster_map_html(m: ClusterMapModel) -> str:
    pending = ""
    if m.pending:
        pending = ('<div class="mockgpu-pending"><b>Pending:</b> ' + " ".join(
            f'<span data-pod="{escape(h.pod)}" style="background:{h.color};padding:1px 4px;border-radius:2px">'
            f'{escape(h.name)} ({escape(h.device_id)})</span>' for h in m.pending) + "</div>")
    cards = "".join(node_card_html(n) for n in m.nodes) or "<i>no nodes</i>"
    return (f'<div class="mockgpu-clustermap" style="{FONT}"><div style="display:flex;flex-wrap:wrap;'
            f'align-items:flex-start">{cards}</div>{pending}</div>')


def _table(header: list[str], rows: list[list[str]]) -> str:
    th = "".join(f'<th style="text-align:left;padding:2px 6px">{escape(h)}</th>' for h in header)
    # text-align: JupyterLab's rendered-HTML style right-aligns table cells
    trs = "".join("<tr>" + "".join(f'<td style="padding:2px 6px;text-align:left">{c}</td>' for c in r) + "</tr>"
                  for r in rows)
    return f'<table style="border-collapse:collapse"><tr>{th}</tr>{trs}</table>'


def inspector_html(m: InspectorModel) -> str:
    owner = f" of {escape(m.owner)}" if m.owner else ""
    restarts = f' · <span class="mockgpu-restarts">{m.restarts} restarts</span>' if m.restarts else ""
    parts = [f"<div><b>{escape(m.pod)}</b>{owner} {escape(m.phase)}{restarts} on {escape(m.node or '-')} · scheduler "
             f"{escape(m.scheduler)} · asks {escape(', '.join(f'{n} {r}' for r, n in m.requests.items()))}</div>"]
    if m.failed_message:
        parts.append(f'<div class="mockgpu-failed" style="color:#b91c1c"><b>FailedScheduling:</b> '
                     f'{escape(m.failed_message)}</div>')
    if m.rows:
        header = ["node", "filter", *m.plugins, "total"]
        rows = [[("★ " if r.selected else "") + escape(r.node), escape("passed" if r.feasible else r.reason),
                 *[escape(f"{r.scores.get(p, '')}→{r.final.get(p, '')}" if p in r.final else "") for p in m.plugins],
                 "" if r.total is None else str(r.total)] for r in m.rows]
        parts.append("<div><b>Scheduling</b> (raw score→weighted)</div>" + _table(header, rows))
    if m.claims:  # DRA: the env came from the driver's CDI spec for these claims
        env = "<br>".join(escape(f"{k}={v}") for k, v in m.env.items())
        claims = "<br>".join(escape(f"claim {c} (request {r}): {d}") for c, r, d in m.claims)
        parts.append(f'<div class="mockgpu-claims"><b>Allocated through DRA</b> (the scheduler chose the devices; '
                     f"the driver's CDI spec set the env)<br>{claims}<br><code>{env}</code></div>")
    elif m.env or m.allocations:
        env = "<br>".join(escape(f"{k}={v}") for k, v in m.env.items())
        allocs = "<br>".join(escape(f"{a.get('resource')}: {', '.join(a.get('deviceIds') or [])}")
                             for a in m.allocations)
        parts.append(f"<div><b>Injected by the device plugin</b><br><code>{env}</code><br>{allocs}</div>")
    if m.cuda_lines or m.smi_lines:
        parts.append("<div><b>Inside the container</b><pre>" + escape("\n".join((*m.cuda_lines, *m.smi_lines)))
                     + "</pre></div>")
    if m.container_states:
        parts.append("<div>" + escape(", ".join(f"{c}: {s}" for c, s in m.container_states.items())) + "</div>")
    if m.log:
        tail = "\n".join(m.log.splitlines()[-40:])
        parts.append(f'<details><summary>log</summary><pre>{escape(tail)}</pre></details>')
    return f'<div class="mockgpu-inspector" data-pod="{escape(m.pod)}" style="{FONT}">{"".join(parts)}</div>'


def memory_html(gpus: list[GpuMemory]) -> str:
    blocks = []
    for g in gpus:
        total = max(g.total_mib, 1)
        bar = "".join(f'<div data-pod="{escape(p.pod)}" title="{escape(p.pod)} {p.used_mib} MiB" style="width:'
                      f'{100 * p.used_mib / total:.2f}%;background:{p.color}"></div>' for p in g.pods if p.used_mib)
        rows = [[f'<span style="color:{p.color}">■</span> {escape(p.pod)}', escape(p.owner or "-"),
                 escape(p.partition or "-"), f"{p.used_mib} MiB", escape(p.status) + (OOM_BADGE if p.oom else "") +
                 (" ☠ blast radius" if p.pod in g.casualties else ""), str(p.restarts)] for p in g.pods]
        ooms = "".join(f"<div>OOM at {escape(o.time)}: {escape(o.pod)} asked {o.requested_mib} MiB, "
                       f"{o.free_mib} MiB free</div>" for o in g.ooms)
        blocks.append(f'<div class="mockgpu-memgpu" data-node="{escape(g.node)}" data-index="{g.index}" '
                      f'style="margin:6px;padding:4px;border:1px solid #9ca3af;min-width:320px">'
                      f'<b>{escape(g.node)} GPU {g.index}</b> [{escape(g.mode)}] {g.used_mib}/{g.total_mib} MiB'
                      f'<div style="display:flex;height:10px;background:{FREE}">{bar}</div>'
                      f'{_table(["pod", "owner", "partition", "memory", "status", "restarts"], rows)}{ooms}</div>')
    return (f'<div class="mockgpu-memory" style="{FONT};display:flex;flex-wrap:wrap">'
            f'{"".join(blocks) or "<i>no GPU state published yet</i>"}</div>')


def timeline_html(m: TimelineModel) -> str:
    longest = max((r.waited_s for r in m.rows), default=0) or 1
    rows = [[escape(r.pod), str(r.gpus),
             f'<div style="background:{"#f59e0b" if r.pending else "#10b981"};height:10px;'
             f'width:{200 * r.waited_s / longest:.0f}px"></div>',
             f"{r.waited_s:.0f} s{' (pending)' if r.pending else ''}", f"{r.idle_gpu_hours:.3f}",
             f"${r.idle_cost_usd:.2f}"] for r in m.rows]
    return (f'<div class="mockgpu-timeline" style="{FONT}"><div>{escape(m.resource)}: {m.capacity} allocatable · '
            f'${m.usd_per_gpu_hour:.4f}/GPU-hour ({escape(m.price_key)}; {escape(PRICE_SOURCE)})</div>'
            f'{_table(["pod", "GPUs", "wait", "", "idle GPU-h", "idle cost"], rows)}'
            f'<div><b>Idle GPUs while pods waited: ${m.total_idle_cost_usd:.2f}</b></div></div>')
