"""A small notebook that shows the cluster map and the pod inspector, for the browser test to run in Lab.

It checks the widgets on their own, apart from any one lab's story. It uses a real embedded cluster:
the scheduler places a 1-GPU training pod, and the kubelet runs it and publishes its GPU memory. The
scheduler reports a 4-GPU pod as FailedScheduling, because every node of seed-4x2 has 2 GPUs.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

# kube-scheduler's message for 4 nodes that each have too few GPUs (the inspector shows the whole line)
FAILED_PREFIX = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."

CELLS = [
    """from mockgpu.widgets import ClusterMap, LabCluster, PodInspector

lab = LabCluster("clusters/seed-4x2.yaml", name="browser-smoke").start()  # under $MOCKGPU_HOME (tmp)""",
    """lab.submit("train", "train", 1, args=("--memory", "30GiB", "--interval", "0.2", "--duration", "0"))
lab.wait("train", "running")
lab.submit("too-big", "inspect", 4)
lab.wait("too-big");""",
    """cmap = ClusterMap(lab.client)
# GPU state is published about once a second: wait until the training pod's memory shows
lab.eventually(cmap.refresh, lambda m: m and any(h.used_mib for n in m.nodes for g in n.gpus for h in g.holders),
               timeout=20)
cmap""",
    """inspector = PodInspector(lab.client)
inspector.show("too-big")
inspector""",
    "lab.close()",
]


def write_smoke_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, path)
    return path
