"""``mockgpu up``, ``mockgpu down`` and ``mockgpu status``: clusters through the backend protocol."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mockgpu.backends.base import BACKENDS, SANDBOXED_BACKENDS, UpOptions, get_backend
from mockgpu.backends.common.spec import resolve_spec
from mockgpu.backends.common.state import ClusterState
from mockgpu.config import ClusterSpec
from mockgpu.control.kubelet.sandboxprobe import probe
from mockgpu.errors import MockgpuError

DEFAULT_NAME = "mockgpu"  # the cluster name when neither --spec nor --name says one


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = sub.add_parser("up", help="create or resume a cluster; says which sandbox its pods run under (fails in one "
                        "line when none can be built here) and prints the kubeconfig path last")
    up.add_argument("--spec", type=Path, help="cluster spec (clusters/*.yaml); default: no nodes")
    up.add_argument("--name", help="cluster name (default: the spec's metadata.name)")
    up.add_argument("--kubeconfig", type=Path, help="where to write the kubeconfig (default: in the state dir)")
    up.add_argument("--backend", default="embedded", choices=sorted(BACKENDS))
    up.add_argument("--scheduler-config", type=Path, help="KubeSchedulerConfiguration overriding the spec's")
    up.add_argument("--dry-run", action="store_true", help="say what would be done, change nothing")
    up.add_argument("--device-plugin", default="mockgpu", choices=["mockgpu", "fake-gpu-operator"])
    up.add_argument("--retain", action="store_true", help="keep a half-created cluster for debugging")
    up.set_defaults(func=run_up)

    down = sub.add_parser("down", help="stop a cluster and delete its state")
    down.add_argument("--name", help="cluster name (default: the only cluster of the backend)")
    down.add_argument("--backend", choices=sorted(BACKENDS),
                      help="default: the backend of the named cluster (embedded when there is none)")
    down.set_defaults(func=run_down)

    status = sub.add_parser("status", help="list clusters and their endpoints")
    status.set_defaults(func=run_status)


def _spec_for(args: argparse.Namespace) -> ClusterSpec:
    if args.spec is not None:
        return resolve_spec(args.spec)
    if args.name and args.backend in ("embedded", "upstream"):
        state = ClusterState.of(args.name)
        if state.spec_file.exists():
            return state.load_spec()  # resume with the spec the cluster was made from
    return resolve_spec(None)


def run_up(args: argparse.Namespace) -> int:
    backend = get_backend(args.backend)
    if not args.dry_run:  # a dry run only renders; it must work where the backend's tools are absent
        missing = backend.is_available()
        if missing:
            raise MockgpuError(missing, exit_code=2)
    spec = _spec_for(args)  # bad input is refused first, in one line
    sandbox = None
    if not args.dry_run and backend.name in SANDBOXED_BACKENDS:
        sandbox = probe().check()  # its pods run here: no cluster when the workload sandbox cannot be built
    name = args.name or (spec.name if args.spec is not None else DEFAULT_NAME)
    opts = UpOptions(spec=spec, name=name, kubeconfig=args.kubeconfig, scheduler_config=args.scheduler_config,
                     dry_run=args.dry_run, device_plugin=args.device_plugin, retain=args.retain)
    info = backend.up(opts)
    if args.dry_run:  # the backend printed one YAML stream on stdout; add nothing to it
        return 0
    if sandbox is not None:
        print(sandbox.line, file=sys.stderr, flush=True)  # stdout stays what scripts read
    nodes = sum(1 for _ in spec.nodes())
    print(f"cluster '{info.name}' ({info.backend}, {nodes} nodes in its spec): {info.state} at {info.endpoint}")
    if "resumed" in info.state or "already" in info.state:
        print(f"(an existing cluster keeps its own spec and objects; mockgpu down --name {info.name} to recreate)")
    print(info.kubeconfig)
    return 0


def _backend_of_cluster(name: str | None) -> str:
    """The backend whose state holds cluster ``name`` (state dirs under MOCKGPU_HOME say), else embedded."""
    if name:
        state = ClusterState.of(name)
        if state.exists():
            try:
                return str(state.read_config().get("backend") or "embedded")
            except MockgpuError:
                pass
    return "embedded"


def the_cluster(backend: Any, name: str | None) -> str:
    """``name``, or the backend's one cluster when none is named (a usage error when there are none or several)."""
    if name is None:
        names = [c.name for c in backend.list()]
        if len(names) != 1:
            raise MockgpuError(f"say which cluster with --name (clusters: {', '.join(names) or 'none'})",
                               exit_code=2)
        name = names[0]
    return name


def run_down(args: argparse.Namespace) -> int:
    backend = get_backend(args.backend or _backend_of_cluster(args.name))
    name = args.name
    name = the_cluster(backend, name)
    backend.down(name)
    print(f"cluster '{name}' deleted")
    return 0


def run_status(args: argparse.Namespace) -> int:
    rows = []
    for name in BACKENDS:
        try:
            backend = get_backend(name)
            if backend.is_available() is None:
                rows.extend(backend.list())
        except (ImportError, AttributeError):
            continue  # that backend is not part of this checkout
        except MockgpuError as exc:  # one broken backend must not hide the others' clusters
            print(f"mockgpu: {name}: {exc}", file=sys.stderr)
    if not rows:
        print("no clusters")
        return 0
    print(f"{'NAME':<20} {'BACKEND':<10} {'STATE':<9} {'ENDPOINT':<28} KUBECONFIG")
    for c in rows:
        print(f"{c.name:<20} {c.backend:<10} {c.state:<9} {c.endpoint:<28} {c.kubeconfig}")
    return 0
