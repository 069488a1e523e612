"""Matplotlib pictures for the lab: the GPUs of a few nodes, and allocation-vs-load curves.

(The interactive cluster-map widget belongs to ``mockgpu.widgets``; these are static figures.)
"""

from __future__ import annotations

from collections.abc import Sequence

from mockgpu.sim.cluster import ClusterState
from mockgpu.sim.engine import PolicyResult
from mockgpu.sim.frag import FragModel
from mockgpu.sim.trace import MILLI


def draw_gpus(state: ClusterState, nodes: Sequence[int], ax=None, frag: FragModel | None = None, title: str = ""):
    """One bar per GPU, stacked with the shares placed on it (one colour per pod), free part grey.
    With ``frag``, each node's label shows its expected fragmented milli-GPU out of its idle ones."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(1.2 + 0.45 * sum(int(state.nodes.gpus[n]) for n in nodes), 2.6))
    colours = plt.get_cmap("tab20").colors
    stacks: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for k, (pod, n, gpus) in enumerate(state.placements):
        for g in gpus:
            stacks.setdefault((n, g), []).append((k, pod.gpu_milli))
    x, ticks, labels = 0.0, [], []
    for n in nodes:
        count = int(state.nodes.gpus[n])
        for g in range(count):
            bottom = 0
            for k, milli in stacks.get((n, g), []):
                ax.bar(x, milli, bottom=bottom, color=colours[k % len(colours)], edgecolor="black", width=0.8)
                bottom += milli
            if bottom < MILLI:
                ax.bar(x, MILLI - bottom, bottom=bottom, color="#eeeeee", edgecolor="grey", width=0.8)
            x += 1
        label = f"{state.nodes.names[n]}\n{state.cpu_left[n] // 1000} cores free"
        if frag is not None:
            one = slice(n, n + 1)
            value = frag.node_frag(state.cpu_left[one], state.gpu_left[one], state.model_ids[one])[0]
            label += f"\nfrag {value:.0f}/{int(state.gpu_left[n].sum())}"
        ticks.append(x - count / 2 - 0.5)
        labels.append(label)
        x += 0.8
    ax.set_xticks(ticks, labels, fontsize=8)
    ax.set_ylim(0, MILLI)
    ax.set_ylabel("milli-GPU")
    ax.set_title(title, fontsize=10)
    return ax


def plot_allocation(results: Sequence[PolicyResult], ax=None, field: str = "gpu_allocation_percent"):
    """Mean (± std band) of a metric against arrived load, one line per policy."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.2))
    for r in results:
        mean, std = r.curve(field)
        ax.plot(r.steps, mean, label=r.policy)
        ax.fill_between(r.steps, mean - std, mean + std, alpha=0.2)
    ax.set_xlabel("arrived GPU request (% of cluster GPU capacity)")
    ax.set_ylabel(field.replace("_", " ").replace("percent", "(%)"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax
