"""A small notebook that shows the cluster map and the pod inspector, for the browser test to run in Lab.

It proves the ipywidgets render in a real JupyterLab (widget manager, HTML views) independently of which
labs exist yet. The embedded cluster on this branch serves the Kubernetes API without the scheduler and
kubelet loops, so the notebook writes their effects through the API the way they do (as the widgets'
own API tests do): a Binding for the pod that fits, each node's GPU-state ConfigMap (the kubelet
publisher's document: GPUs, the device allocation, the process's memory), and for the impossible pod a
``FailedScheduling`` event with upstream's message format (DESIGN.md).
"""

from __future__ import annotations

from pathlib import Path

import nbformat

# upstream's format for 4 nodes that each have too few GPUs (kube-scheduler's FitError + preemption note)
FAILED = ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: "
          "4 No preemption victims found for incoming pod.")

CELLS = [
    """from mockgpu.widgets import ClusterMap, LabCluster, PodInspector

lab = LabCluster("clusters/seed-4x2.yaml", name="browser-smoke").start()  # under $MOCKGPU_HOME (tmp)""",
    """import json
core = lab.client.core
lab.submit("train", "train", gpus=1)
core.create_namespaced_pod_binding("train", "default", {{"apiVersion": "v1", "kind": "Binding",
    "metadata": {{"name": "train"}}, "target": {{"apiVersion": "v1", "kind": "Node", "name": "gpu-0"}}}},
    _preload_content=False)
core.create_namespace({{"metadata": {{"name": "mockgpu-system"}}}}, _preload_content=False)
for n in range(4):
    uuids = [f"GPU-{{n:04d}}{{i:04d}}-0000-0000-0000-000000000000" for i in range(2)]
    gpus = [{{"index": i, "uuid": u, "product": "NVIDIA A100-SXM4-80GB", "model": "A100-SXM4-80GB",
             "memoryTotalMiB": 81920, "memoryUsedMiB": 30720 if (n, i) == (0, 0) else 0, "utilization": 0,
             "healthy": True, "nvlinkPeers": [1 - i], "replicas": 1, "mig": []}} for i, u in enumerate(uuids)]
    mine = n == 0
    state = {{"node": f"gpu-{{n}}", "gpus": gpus,
             "allocations": [{{"namespace": "default", "pod": "train", "container": "main",
                              "resource": "nvidia.com/gpu", "deviceIds": uuids[:1], "uuids": uuids[:1]}}] * mine,
             "processes": [{{"device": uuids[0], "gpuIndex": 0, "pid": 100, "namespace": "default", "pod": "train",
                            "container": "main", "usedMiB": 30720}}] * mine, "oomEvents": []}}
    core.create_namespaced_config_map("mockgpu-system", {{"metadata": {{"name": f"gpu-state-gpu-{{n}}",
        "labels": {{"mockgpu.io/gpu-state": "true"}}}}, "data": {{"state.json": json.dumps(state)}}}},
        _preload_content=False)""",
    """pod = lab.submit("too-big", gpus=4)  # each node has 2 GPUs
lab.client.core.create_namespaced_event("default", {{
    "metadata": {{"name": "too-big.failed", "namespace": "default"}},
    "involvedObject": {{"kind": "Pod", "namespace": "default", "name": "too-big", "uid": pod["metadata"]["uid"]}},
    "reason": "FailedScheduling", "type": "Warning", "message": {failed!r},
    "source": {{"component": "default-scheduler"}}}}, _preload_content=False);""",
    """cmap = ClusterMap(lab.client)
cmap.refresh()
cmap""",
    """inspector = PodInspector(lab.client)
inspector.show("too-big")
inspector""",
    "lab.close()",
]


def write_smoke_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src.format(failed=FAILED)) for src in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, path)
    return path
