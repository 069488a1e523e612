"""``mockgpu metrics targets``: where a cluster's nodes serve dcgm-exporter's ``/metrics``, for any Prometheus.

Without ``--out`` it prints one line per node (``NODE URL``); with ``--out FILE`` it writes a Prometheus
``file_sd_configs`` file (one target group per node, labelled ``mockgpu_cluster`` and ``mockgpu_node``), which a
Prometheus re-reads whenever it changes, e.g.::

    scrape_configs:
    - job_name: mockgpu
      file_sd_configs: [{files: [/path/to/targets.json]}]

The URLs come from the Nodes' ``mockgpu.io/dcgm-exporter`` annotations, which mockgpu's kubelets set (embedded and
upstream backends: 127.0.0.1 and a free port, loopback only). On kind the exporters run in the DaemonSet's pods;
scrape them from inside the cluster (the ``mockgpu-dcgm-exporter`` Service and its ``prometheus.io/*``
annotations).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mockgpu.backends.base import BACKENDS, get_backend, kubeconfig_of
from mockgpu.backends.common.state import ClusterState
from mockgpu.commands.cluster import the_cluster
from mockgpu.control.kubelet.exporter import endpoints, write_file_sd
from mockgpu.errors import MockgpuError
from mockgpu.helptext import describe


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("metrics", help="where a cluster's nodes serve dcgm-exporter-style /metrics",
                       description=describe(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    msub = p.add_subparsers(dest="metrics_command", metavar="SUBCOMMAND", required=True)
    t = msub.add_parser("targets", help="list each node's metrics URL, or write a Prometheus file_sd targets file")
    t.add_argument("--name", help="cluster name (default: the only cluster of the backend)")
    t.add_argument("--backend", choices=sorted(BACKENDS), help="default: the backend of the named cluster")
    t.add_argument("--kubeconfig", type=Path, help="reach the cluster with this kubeconfig instead of --name")
    t.add_argument("--out", type=Path, help="write file_sd_configs JSON here instead of printing")
    t.set_defaults(func=run_targets)


def _cluster(args: argparse.Namespace) -> tuple[str, Path]:
    """(cluster name, kubeconfig) from the options."""
    if args.kubeconfig is not None:
        return args.name or args.kubeconfig.stem, args.kubeconfig
    backend_name = args.backend
    if backend_name is None and args.name:
        state = ClusterState.of(args.name)
        backend_name = str(state.read_config().get("backend") or "embedded") if state.exists() else "embedded"
    backend = get_backend(backend_name or "embedded")
    name = args.name
    name = the_cluster(backend, name)
    return name, kubeconfig_of(backend, name)


def _api_client(kubeconfig: Path) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]


def run_targets(args: argparse.Namespace) -> int:
    name, kubeconfig = _cluster(args)
    try:
        urls = endpoints(_api_client(kubeconfig))
    except Exception as exc:  # not running (stopped, or its process gone), or the kubeconfig is wrong
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MockgpuError(f"cannot list the nodes of cluster '{name}' ({kubeconfig}): {first}") from None
    if not urls:
        raise MockgpuError(f"cluster '{name}' has no node serving metrics (no Node has the mockgpu.io/dcgm-exporter "
                           "annotation: on kind, scrape the mockgpu-dcgm-exporter Service from inside the cluster)")
    if args.out is not None:
        write_file_sd(args.out, urls, name)
        print(f"{len(urls)} targets of cluster '{name}' written to {args.out}", file=sys.stderr)
        return 0
    for node, url in urls.items():
        print(f"{node} {url}")
    return 0
