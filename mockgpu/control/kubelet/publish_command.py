"""``mockgpu gpu-state-publisher``: publish one node's GPU state where a real kubelet runs (the kind DaemonSet's
second container), in the same ConfigMap shape as the embedded kubelet.

With ``--metrics-port`` it also serves the node's GPUs as dcgm-exporter's ``/metrics``
(``mockgpu.control.kubelet.exporter``), for an in-cluster Prometheus.

Allocations come from the real kubelet's device checkpoint (``--checkpoint``, in the device plugin dir the
DaemonSet mounts; its checksum is not verified, see ``kubelet/checkpoint.py``) with pod UIDs resolved to
names by listing the node's pods; time-slicing replicas from the Node's GFD label ``nvidia.com/gpu.replicas``.
With ``--spec`` and ``--cdi-dir`` (a node whose pool gives GPUs to DRA), the devices of prepared ResourceClaims
too, as the embedded kubelet lists them (resource ``resourceclaims/<claim>``, per container naming the claim): a
claim counts as prepared while the DRA driver's CDI spec for its UID is in the CDI directory.
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

from mockgpu.config.clusterspec import load_spec
from mockgpu.config.inventory import dra_gpus, node_inventory
from mockgpu.control.kubelet.exporter import MetricsExporter
from mockgpu.control.kubelet.publisher import GpuStatePublisher, ensure_namespace
from mockgpu.dra.prepare import cdi_file_name
from mockgpu.dra.slices import DRIVER, device_uuids
from mockgpu.errors import MockgpuError
from mockgpu.gpu.driver import Driver, DriverNotFound
from mockgpu.gpu.state import DeviceAllocation, StateInputs, device_uuid
from mockgpu.helptext import describe
from mockgpu.sched.dra.claimname import claim_name_or_empty

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
    p.add_argument("--spec", help="cluster spec file: with --cdi-dir, also publish the devices of prepared claims")
    p.add_argument("--cdi-dir", help="the DRA driver's CDI directory (a claim is prepared while its spec is there)")
    p.add_argument("--metrics-port", type=int, help="also serve dcgm-exporter-style /metrics on this port (the "
                   "DaemonSet: 9400, dcgm-exporter's); default: not served")
    p.add_argument("--metrics-address", default="127.0.0.1",
                   help="address /metrics listens on (default 127.0.0.1; the DaemonSet: 0.0.0.0 of its pod's own "
                        "network namespace, so an in-cluster Prometheus reaches it at the pod IP)")
    p.add_argument("--once", action="store_true", help="publish once and exit")
    p.set_defaults(func=run)


def checkpoint_entries(path: Path) -> list[dict[str, Any]]:
    """PodDeviceEntries of a kubelet checkpoint ([] when absent or unreadable)."""
    try:
        return json.loads(path.read_text())["Data"]["PodDeviceEntries"] or []
    except (OSError, ValueError, KeyError, TypeError):
        return []


def prepared_claims(cdi_dir: Path) -> set[str]:
    """UIDs of the claims the DRA driver has prepared on this node (its CDI spec files)."""
    prefix, suffix = cdi_file_name("\0").split("\0")
    return {p.name[len(prefix):-len(suffix)] for p in Path(cdi_dir).glob(f"{prefix}*{suffix}")}


def claim_allocations(pod: dict[str, Any], claims: dict[str, dict[str, Any]], prepared: set[str], pool: str,
                      uuids: dict[str, str]) -> list[DeviceAllocation]:
    """The devices of ``pod``'s prepared claims (``claims``: name -> ResourceClaim of its namespace) that this
    node's driver gave it, per container naming the claim (and request), as the embedded kubelet lists them."""
    meta, spec = pod["metadata"], pod["spec"]
    entries = {r["name"]: claim_name_or_empty(pod, r) for r in spec.get("resourceClaims") or []}
    out = []
    for c in spec.get("containers") or []:
        by_claim: dict[str, list[str]] = {}
        for ref in (c.get("resources") or {}).get("claims") or []:
            name = entries.get(ref["name"])
            claim = claims.get(name or "")
            if claim is None or claim["metadata"].get("uid") not in prepared:
                continue
            req = ref.get("request") or ""
            results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
            for r in results:
                if (r.get("driver") == DRIVER and r.get("pool") == pool and r.get("device") in uuids
                        and (not req or req in (r.get("request"), r.get("request", "").split("/", 1)[0]))
                        and r["device"] not in by_claim.setdefault(name, [])):
                    by_claim[name].append(r["device"])
        for name, devs in sorted(by_claim.items()):
            if devs:
                out.append(DeviceAllocation(meta["namespace"], meta["name"], c["name"], f"resourceclaims/{name}",
                                            tuple(devs), tuple(uuids[d] for d in devs)))
    return out


class ClusterInputs:
    """Allocations and replicas as a real kubelet and GFD expose them."""

    def __init__(self, core: Any, kube_node: str, checkpoint: Path, driver_dir: Path,
                 dra: tuple[str, dict[str, str], Path] | None = None) -> None:
        """``dra``: (pool, device name -> UUID, CDI dir) of a node whose pool gives GPUs to DRA."""
        self.core, self.kube_node, self.checkpoint, self.driver_dir = core, kube_node, checkpoint, driver_dir
        self.dra = dra

    def __call__(self) -> StateInputs:
        inv = Driver(self.driver_dir).inventory
        pods: list[Any] = []
        try:
            pods = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={self.kube_node}").items
            names = {p.metadata.uid: (p.metadata.namespace, p.metadata.name) for p in pods
                     if (p.status.phase or "") not in ("Succeeded", "Failed")}
            labels = self.core.read_node(self.kube_node).metadata.labels or {}
        except Exception:  # API away: publish what the driver says
            names, labels = {}, {}
        allocs = self._claim_allocations([p for p in pods if p.metadata.uid in names])
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

    def _claim_allocations(self, pods: list[Any]) -> list[DeviceAllocation]:
        if self.dra is None:
            return []
        with_claims = [p for p in pods if p.spec.resource_claims]
        if not with_claims:
            return []
        from kubernetes import client

        pool, uuids, cdi_dir = self.dra
        serialize = self.core.api_client.sanitize_for_serialization
        try:
            items = client.ResourceV1Api(self.core.api_client).list_resource_claim_for_all_namespaces().items
        except Exception:  # API away: the next pass
            return []
        by_ns: dict[str, dict[str, dict[str, Any]]] = {}
        for c in items:
            by_ns.setdefault(c.metadata.namespace, {})[c.metadata.name] = serialize(c)
        prepared = prepared_claims(cdi_dir)
        return [a for p in with_claims for a in claim_allocations(serialize(p), by_ns.get(p.metadata.namespace, {}),
                                                                  prepared, pool, uuids)]


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


def _dra_inputs(args: argparse.Namespace) -> tuple[str, dict[str, str], Path] | None:
    """(pool, device UUIDs, CDI dir) when --spec and --cdi-dir are given and the node has DRA GPUs."""
    if not (args.spec and args.cdi_dir):
        return None

    spec = load_spec(args.spec)
    gpus = dra_gpus(spec, args.node)
    if not gpus:
        return None
    return args.node, device_uuids(node_inventory(spec, args.node), gpus), Path(args.cdi_dir)


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
    inputs = ClusterInputs(core, args.kube_node or args.node, Path(args.checkpoint), driver_dir,
                           dra=_dra_inputs(args))
    pub = GpuStatePublisher(core, args.node, driver_dir, inputs=inputs, interval=args.interval)
    if args.once:
        pub.publish_once(force=True)
        return 0
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    exporter = MetricsExporter(args.node, driver_dir, inputs, host=args.metrics_address, port=args.metrics_port) \
        if args.metrics_port is not None else None
    pub.start()
    if exporter is not None:
        exporter.start()
        logging.getLogger(__name__).info("serving dcgm-exporter metrics at %s", exporter.url)
    done.wait()
    pub.stop()
    if exporter is not None:
        exporter.stop()
    return 0


__all__ = ["ClusterInputs", "add_parser", "checkpoint_entries", "claim_allocations", "prepared_claims", "run"]
