"""Small hand-made clusters and pod lists for the simulator tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mockgpu.sim.frag import TaskDistribution
from mockgpu.sim.trace import NodeList, PodList


def nodes(*specs: tuple[int, int, int, str]) -> NodeList:
    """``(cpu_milli, memory_mib, gpus, model)`` per node, named n0, n1, ..."""
    return NodeList(tuple(f"n{i}" for i in range(len(specs))), np.array([s[0] for s in specs], np.int64),
                    np.array([s[1] for s in specs], np.int64), np.array([s[2] for s in specs], np.int64),
                    tuple(s[3] for s in specs))


def pods(*specs: tuple) -> PodList:
    """``(cpu_milli, memory_mib, num_gpu, gpu_milli[, gpu_spec])`` per pod."""
    return PodList(tuple(f"p{i}" for i in range(len(specs))), np.array([s[0] for s in specs], np.int64),
                   np.array([s[1] for s in specs], np.int64), np.array([s[2] for s in specs], np.int64),
                   np.array([s[3] for s in specs], np.int64), tuple(s[4] if len(s) > 4 else "" for s in specs))


def dist(*tasks: tuple[int, int, int, float], specs: tuple[str, ...] | None = None) -> TaskDistribution:
    """``(cpu_milli, gpu_milli, num_gpu, probability)`` per typical task shape."""
    return TaskDistribution(np.array([t[0] for t in tasks], np.int64), np.array([t[1] for t in tasks], np.int64),
                            np.array([t[2] for t in tasks], np.int64), specs or tuple("" for _ in tasks),
                            np.array([t[3] for t in tasks], float))


NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time")


def write_trace(directory: Path) -> Path:
    """A tiny trace directory in the upstream file format: 4 nodes, 6 GPU shapes + 1 CPU pod."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "openb_node_list_gpu_node.csv").write_text(
        NODE_HEADER + "\n" + "\n".join([
            "openb-node-0000,32000,131072,2,T4",
            "openb-node-0001,64000,262144,4,V100M16",
            "openb-node-0002,96000,393216,8,G2",
            "openb-node-0003,16000,65536,1,P100",
        ]) + "\n")
    (directory / "openb_pod_list_default.csv").write_text(
        POD_HEADER + "\n" + "\n".join([
            "openb-pod-0000,4000,16384,1,1000,,LS,Running,0,10,0",
            "openb-pod-0001,2000,8192,1,500,,BE,Running,1,10,1",
            "openb-pod-0002,1000,4096,1,250,,BE,Running,2,10,2",
            "openb-pod-0003,8000,32768,2,1000,,LS,Running,3,10,3",
            "openb-pod-0004,6000,12288,1,460,,LS,Running,4,10,4",
            "openb-pod-0005,16000,65536,4,1000,,LS,Pending,5,10,",
            "openb-pod-0006,8000,30517,0,0,,BE,Running,6,10,6",
        ]) + "\n")
    return directory
