"""``mockgpu gpu-state-publisher``: publish one node's GPU state where a real kubelet runs (the kind DaemonSet's
second container), in the same ConfigMap shape as the embedded kubelet.

Allocations come from the real kubelet's device checkpoint (``--checkpoint``, in the device plugin dir the
DaemonSet mounts; its checksum is not verified, see ``kubelet/checkpoint.py``) with pod UIDs resolved to
names by listing the node's pods; time-slicing replicas from the Node's GFD label ``nvidia.com/gpu.replicas``.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from mockgpu.control.kubelet.publisher import GpuStatePublisher, ensure_namespace
from mockgpu.errors import MockgpuError
from mockgpu.gpu.driver import Driver, DriverNotFound
from mockgpu.gpu.state import DeviceAllocation, StateInputs, device_uuid
from mockgpu.helptext import describe

DEFAULT_CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gpu-state-publisher", help="publish a node's GPU state as ConfigMap gpu-state-<node>",
                       description=describe(__doc__))
    p.add_argument("--node", required=True, help="spec node name (<pool>-<n>): names the ConfigMap")
    p.add_argument("--driver-dir", required=True, help="the node's fake driver directory")
    p.add_argument("--kube-node", help="the cluster's name for the node (default: --node)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster service account)")
    p.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT, help=f"kubelet device checkpoint ({DEFAULT_CHECKPOINT})")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between checks (default 1)")
    p.add_argument("--once", action="store_true", help="publish once and exit")
    p.set_defaults(func=run)


def checkpoint_entries(path: Path) -> list[dict[str, Any]]:
    """PodDeviceEntries of a kubelet checkpoint ([] when absent or unreadable)."""
    try:
        return json.loads(path.read_text())["Data"]["PodDeviceEntries"] or []
    except (OSError, ValueError, KeyError, TypeError):
        return []


class ClusterInputs:
    """Allocations and replicas as a real kubelet and GFD expose them."""

    def __init__(self, core: Any, kube_node: str, checkpoint: Path, driver_dir: Path) -> None:
        self.core, self.kube_node, self.checkpoint, self.driver_dir = core, kube_node, checkpoint, driver_dir

    def __call__(self) -> StateInputs:
        inv = Driver(self.driver_dir).inventory
        try:
            pods = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={self.kube_node}").items
            names = {p.metadata.uid: (p.metadata.namespace, p.metadata.name) for p in pods
                     if (p.status.phase or "") not in ("Succeeded", "Failed")}
            labels = self.core.read_node(self.kube_node).metadata.labels or {}
        except Exception:  # API away: publish what the driver says
            names, labels = {}, {}
        allocs = []
        for e in checkpoint_entries(self.checkpoint):
            if e.get("PodUID") not in names:
                continue
            ids = sorted({i for ids in (e.get("DeviceIDs") or {}).values() for i in ids})
            ns, pod = names[e["PodUID"]]
            allocs.append(DeviceAllocation(ns, pod, e.get("ContainerName", ""), e.get("ResourceName", ""),
                                           tuple(ids), tuple(device_uuid(inv, i) for i in ids)))
        try:
            replicas = int(labels.get("nvidia.com/gpu.replicas", "1"))
        except ValueError:
            replicas = 1
        return StateInputs(tuple(allocs), {g.uuid: max(replicas, 1) for g in inv.gpus if not g.mig})


def _core(kubeconfig: str | None) -> Any:
    from kubernetes import client, config

    try:
        if kubeconfig:
            config.load_kube_config(kubeconfig)
        else:
            config.load_incluster_config()
    except Exception as exc:
        raise MockgpuError(f"gpu-state-publisher: cannot reach the API server: {exc}", exit_code=2) from None
    return client.CoreV1Api()


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    driver_dir = Path(args.driver_dir)
    try:
        Driver(driver_dir)
    except DriverNotFound as exc:
        if args.once:
            raise MockgpuError(str(exc), exit_code=2) from None  # the DaemonSet's plugin container makes it soon
    core = _core(args.kubeconfig)
    ensure_namespace(core)
    inputs = ClusterInputs(core, args.kube_node or args.node, Path(args.checkpoint), driver_dir)
    pub = GpuStatePublisher(core, args.node, driver_dir, inputs=inputs, interval=args.interval)
    if args.once:
        pub.publish_once(force=True)
        return 0
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    pub.start()
    done.wait()
    pub.stop()
    return 0


__all__ = ["ClusterInputs", "add_parser", "checkpoint_entries", "run"]
