"""``mockgpu device-plugin``: run the device plugin of one spec node (what the DaemonSet runs), or
``--list`` what it would advertise."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from mockgpu.config.clusterspec import load_spec
from mockgpu.config.inventory import device_plugin_inventory, node_inventory
from mockgpu.deviceplugin.allocate import AllocateSettings
from mockgpu.deviceplugin.resources import NodeResourceManager, resource_managers
from mockgpu.deviceplugin.server import NodePlugins
from mockgpu.errors import MockgpuError
from mockgpu.gpu.driver import Driver, write_node_driver
from mockgpu.helptext import describe

DEFAULT_DRIVER_DIR = "/var/lib/mockgpu/driver"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("device-plugin", help="run the fake NVIDIA device plugin of one node (gRPC v1beta1)",
                       description=describe(__doc__))
    p.add_argument("--spec", required=True, help="cluster spec file (clusters/*.yaml)")
    p.add_argument("--node", required=True, help="spec node name, <pool>-<n>")
    p.add_argument("--plugin-dir", help="the kubelet's device plugin directory (holds kubelet.sock)")
    p.add_argument("--driver-dir", default=DEFAULT_DRIVER_DIR,
                   help=f"the node's fake driver directory, mounted into containers (default {DEFAULT_DRIVER_DIR})")
    p.add_argument("--nvidia-smi", default=None, help="host path of a fake nvidia-smi to mount into containers")
    p.add_argument("--list", action="store_true", help="print the resources and device IDs, then exit")
    p.set_defaults(func=run)


def format_table(managers: list[NodeResourceManager]) -> str:
    """Resources and their devices as a small text table."""
    rows = [("RESOURCE", "SOCKET", "DEVICE ID", "GPU", "NUMA")]
    for rm in managers:
        for d in rm.devices():
            rows.append((rm.resource, rm.socket_name, d.id, d.index, str(d.numa_node)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    summary = ", ".join(f"{rm.resource}: {len(rm.devices())}" for rm in managers) or "no GPU resources"
    return "\n".join([*lines, "", summary])


def _health_source(driver_dir: Path):
    def unhealthy() -> list[str]:
        return [uuid for uuid, h in Driver(driver_dir).health().items() if not h.healthy]

    return unhealthy


def run(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    node = spec.node(args.node)
    inventory = node_inventory(spec, args.node)  # the driver dir holds every GPU (nvidia-smi sees them all)
    config = node.gpu.devicePluginConfig if node.gpu else None
    managers = resource_managers(device_plugin_inventory(spec, args.node), config) if config else []
    if args.list:
        print(format_table(managers))
        return 0
    if not args.plugin_dir:
        raise MockgpuError("device-plugin: --plugin-dir is required unless --list is given", exit_code=2)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    driver_dir = Path(args.driver_dir)
    try:
        write_node_driver(driver_dir, inventory)
    except OSError as exc:
        raise MockgpuError(f"cannot write the driver directory {driver_dir}: {exc.strerror}; pass --driver-dir",
                           exit_code=2) from None
    settings = AllocateSettings(
        driver_dir=driver_dir, nvidia_smi=Path(args.nvidia_smi) if args.nvidia_smi else None,
        inject_cuda_visible_devices=bool(config and config.flags.injectCudaVisibleDevices),
    )
    log = logging.getLogger(__name__)
    if not managers:
        log.warning("node %s has no GPUs; nothing to advertise", args.node)
    if config and config.flags.plugin.deviceListStrategy != "envvar":
        log.warning("deviceListStrategy %r is not simulated; devices are passed as NVIDIA_VISIBLE_DEVICES (envvar)",
                    config.flags.plugin.deviceListStrategy)
    if config and config.flags.plugin.passDeviceSpecs:
        log.warning("passDeviceSpecs is ignored: fake GPUs have no /dev/nvidia* device nodes")
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    with NodePlugins(managers, args.plugin_dir, settings, health=_health_source(driver_dir)):
        while not done.wait(0.5):
            pass
    return 0
