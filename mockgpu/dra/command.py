"""``mockgpu dra-driver``: run the DRA driver ``gpu.mockgpu.io`` of one spec node (what a DaemonSet runs next to
the kubelet), or ``--list`` the devices it would publish.

It serves the kubelet's DRA v1 service on ``<plugin-dir>/gpu.mockgpu.io/dra.sock`` and registers through
``<registry-dir>/gpu.mockgpu.io-reg.sock``, publishes the node's ResourceSlices through the Kubernetes API
(``--kubeconfig``; otherwise in-cluster config, else the default kubeconfig), retrying until the Node exists,
compares them with the API every 10 s (a deleted or edited slice is restored) and republishes them within a
second of a device's health changing (a ``NoExecute`` taint on each device the fake driver's ``Driver.health()``
reports unhealthy, ``dra.health``), writes CDI specs into
``--cdi-dir`` when the kubelet prepares claims (mounting ``--driver-dir``, whose inventory gains the MIG
instances of prepared MIG devices), and deletes its ResourceSlices on SIGTERM.
"""

from __future__ import annotations

import argparse
import functools
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mockgpu.errors import MockgpuError
from mockgpu.gpu.driver import Driver, DriverNotFound
from mockgpu.helptext import describe

DEFAULT_PLUGIN_DIR = "/var/lib/kubelet/plugins"  # upstream's KubeletPluginsDir
DEFAULT_REGISTRY_DIR = "/var/lib/kubelet/plugins_registry"  # upstream's KubeletRegistryDir
DEFAULT_CDI_DIR = "/var/run/cdi"
DEFAULT_DRIVER_DIR = "/var/lib/mockgpu/driver"  # as mockgpu device-plugin's
RETRY_SECONDS = 1.0
RESYNC_SECONDS = 10.0  # the pool is compared with the API this often (a deleted slice comes back)
HEALTH_SECONDS = 1.0  # the devices' health is read this often

log = logging.getLogger(__name__)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("dra-driver", help="run the DRA driver gpu.mockgpu.io of one node (kubelet DRA gRPC v1)",
                       description=describe(__doc__))
    p.add_argument("--spec", required=True, help="cluster spec file (clusters/*.yaml)")
    p.add_argument("--node", required=True, help="spec node name, <pool>-<n>")
    p.add_argument("--plugin-dir", default=DEFAULT_PLUGIN_DIR,
                   help=f"the kubelet's plugins directory; the socket is <dir>/gpu.mockgpu.io/dra.sock "
                        f"(default {DEFAULT_PLUGIN_DIR})")
    p.add_argument("--registry-dir", default=DEFAULT_REGISTRY_DIR,
                   help=f"the kubelet's plugin registry directory (default {DEFAULT_REGISTRY_DIR})")
    p.add_argument("--cdi-dir", default=DEFAULT_CDI_DIR,
                   help=f"where CDI specs are written (default {DEFAULT_CDI_DIR})")
    p.add_argument("--driver-dir", default=DEFAULT_DRIVER_DIR,
                   help=f"the node's fake driver directory, mounted into containers (default {DEFAULT_DRIVER_DIR})")
    p.add_argument("--kubeconfig", help="kubeconfig of the cluster to publish ResourceSlices to")
    p.add_argument("--list", action="store_true", help="print the devices and their UUIDs, then exit")
    p.set_defaults(func=run)


def api_client_from(kubeconfig: str | None) -> Any:
    from kubernetes import config

    if kubeconfig:
        return config.new_client_from_config(config_file=kubeconfig)
    try:
        config.load_incluster_config()
        from kubernetes import client

        return client.ApiClient()
    except config.ConfigException:
        return config.new_client_from_config()


def format_table(slices: list[dict[str, Any]]) -> str:
    rows = [("DEVICE", "TYPE", "UUID", "MEMORY")]
    for s in slices:
        for d in s["spec"].get("devices", []):
            a = d["attributes"]
            rows.append((d["name"], a["type"]["string"], a["uuid"]["string"], d["capacity"]["memory"]["value"]))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    sets = sum(len(s["spec"].get("sharedCounters", [])) for s in slices)
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([*lines, "", f"{len(rows) - 1} devices, {sets} counter sets, {len(slices)} ResourceSlices"])


def device_health(driver_dir: Path) -> dict[str, Any]:
    """``Driver.health()`` of the node's driver directory; nothing (all healthy) while it does not exist yet."""
    try:
        return dict(Driver(driver_dir).health())
    except DriverNotFound:
        return {}


def run(args: argparse.Namespace) -> int:
    from mockgpu.config.clusterspec import load_spec
    from mockgpu.config.inventory import dra_gpus, node_inventory
    from mockgpu.dra.prepare import CDIDir, Preparer
    from mockgpu.dra.slices import device_uuids, node_slices

    spec = load_spec(args.spec)
    inventory = node_inventory(spec, args.node)
    gpus = dra_gpus(spec, args.node)
    slices = node_slices(inventory, gpus)
    if args.list:
        print(format_table(slices))
        return 0
    if not gpus:
        raise MockgpuError(f"dra-driver: node {args.node} has no GPUs managed by DRA (set gpu.management in its pool)",
                           exit_code=2)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from mockgpu.dra.dynamicmig import refresh_driver_dir
    from mockgpu.dra.health import with_health_taints
    from mockgpu.dra.publish import SlicePublisher, api_message, claim_getter
    from mockgpu.dra.server import DriverServers

    api = api_client_from(args.kubeconfig)
    driver_dir, cdi_dir = Path(args.driver_dir), Path(args.cdi_dir)
    refresh = functools.partial(refresh_driver_dir, driver_dir, inventory, cdi_dir)
    refresh()  # MIG instances of claims prepared before a restart
    preparer = Preparer(args.node, device_uuids(inventory, gpus), CDIDir(cdi_dir), claim_getter(api),
                        driver_dir=driver_dir, on_change=refresh)
    publisher = SlicePublisher(api, args.node, slices)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    with DriverServers(preparer, Path(args.plugin_dir), Path(args.registry_dir)):
        next_sync = 0.0
        while not done.is_set():
            wanted = with_health_taints(slices, device_health(driver_dir))
            if wanted != publisher.slices:
                publisher.slices, next_sync = wanted, 0.0  # health changed: republish now
            if time.monotonic() >= next_sync:
                try:
                    publisher.sync()
                    next_sync = time.monotonic() + RESYNC_SECONDS
                except Exception as exc:  # no Node yet, API not up: retry, as the helper's controller does
                    log.info("ResourceSlices of %s not published: %s", args.node, api_message(exc))
                    next_sync = time.monotonic() + RETRY_SECONDS
            done.wait(HEALTH_SECONDS)
        try:
            publisher.delete_all()
        except Exception as exc:
            log.warning("ResourceSlices of %s not deleted: %s", args.node, api_message(exc))
    return 0
