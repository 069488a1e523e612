"""``mockgpu fault inject|clear|list``: inject GPU faults (Xid events) into a running cluster's nodes, as the kernel
driver would report them, in host-side state its pods cannot write.

What each Xid does follows NVIDIA's Xid catalog and k8s-device-plugin (docs/faults.md): Xid 79 (the GPU has fallen off
the bus) and Xid 48 (a double-bit ECC error) make the GPU Unhealthy in the device plugin's ListAndWatch (the node's
allocatable drops by one) and in the pods' ``allocatedResourcesStatus``; the application Xids 13, 31, 43, 45, 68 and
109 leave it healthy. ``clear`` is a fake GPU reset (unlike NVIDIA's plugin, the device becomes healthy again).
Embedded and upstream clusters (mockgpu's kubelets), and kind clusters (written inside the kind nodes).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

import yaml

from mockgpu.backends.base import get_backend
from mockgpu.backends.common.faults import FaultRecord, LocalFaults
from mockgpu.backends.common.manifests import NAMESPACE
from mockgpu.backends.common.run import Runner
from mockgpu.backends.common.state import ClusterState, mockgpu_home
from mockgpu.backends.kind.faults import KindFaults
from mockgpu.config.clusterspec import parse_spec
from mockgpu.errors import MockgpuError
from mockgpu.helptext import describe

LOCAL_BACKENDS = ("embedded", "upstream")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("fault", help="inject, clear and list GPU faults (Xid events) on a running cluster",
                       description=describe(__doc__))
    fsub = p.add_subparsers(dest="fault_command", metavar="ACTION", required=True)

    inject = fsub.add_parser("inject", help="record an Xid on one GPU of a node (e.g. --xid 79: fallen off the bus)")
    inject.add_argument("--node", required=True, help="the node's name in the cluster spec")
    inject.add_argument("--gpu", required=True, help="the GPU's index on the node, or a GPU or MIG UUID")
    inject.add_argument("--xid", required=True, type=int, help="the Xid (79, 48, 13, ...; docs/faults.md)")
    inject.add_argument("--name", help="cluster name (default: the only cluster)")
    inject.set_defaults(func=run_inject)

    clear = fsub.add_parser("clear", help="forget injected faults (a fake GPU reset): of one GPU, one node, or all")
    clear.add_argument("--node", help="only this node's faults (default: every node's)")
    clear.add_argument("--gpu", help="only this GPU's (index or UUID; needs --node)")
    clear.add_argument("--name", help="cluster name (default: the only cluster)")
    clear.set_defaults(func=run_clear)

    ls = fsub.add_parser("list", help="the injected faults, oldest first")
    ls.add_argument("--name", help="cluster name (default: the only cluster)")
    ls.add_argument("-o", "--output", choices=["table", "json"], default="table")
    ls.set_defaults(func=run_list)


def _faults(name: str | None) -> LocalFaults | KindFaults:
    """The faults of cluster ``name`` (or the only local cluster); MockgpuError in one line otherwise. A name with
    no local state but a kind cluster of that name is the kind cluster (its spec read from its ``mockgpu-spec``
    ConfigMap, the one the DaemonSets read)."""
    if name is None:
        home = mockgpu_home(None)
        names = sorted(p.name for p in home.iterdir() if (p / "cluster.json").is_file()) if home.is_dir() else []
        if len(names) != 1:
            raise MockgpuError(f"say which cluster with --name (clusters: {', '.join(names) or 'none'})", exit_code=2)
        name = names[0]
    state = ClusterState.of(name)
    if not state.exists():
        kind = _kind_faults(name)
        if kind is None:
            raise MockgpuError(f"no cluster named '{name}' (see mockgpu status)", exit_code=2)
        return kind
    backend = str(state.read_config().get("backend") or "embedded")
    if backend not in LOCAL_BACKENDS:
        get_backend(backend)  # an unknown name is refused there
        raise MockgpuError(f"fault injection is not implemented on the {backend} backend "
                           "(use --backend embedded, upstream or kind)", exit_code=2)
    return LocalFaults(state)


def _kind_faults(name: str) -> KindFaults | None:
    """The kind cluster ``name``'s faults, or None when kind has no such cluster (or is not installed)."""
    backend = get_backend("kind")
    if backend.is_available() is not None:
        return None
    info = backend.status(name)
    if info is None:
        return None
    runner = Runner()
    res = runner.check(["kubectl", "--kubeconfig", str(info.kubeconfig), "--context", f"kind-{name}", "-n", NAMESPACE,
                        "get", "configmap", "mockgpu-spec", "-o", r"jsonpath={.data.spec\.yaml}"], timeout=60)
    return KindFaults(runner, parse_spec(yaml.safe_load(res.stdout)), name)


def _line(r: FaultRecord) -> str:
    when = datetime.fromtimestamp(r.time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{r.node:<20} {r.gpu:<4} {r.uuid:<42} {r.xid:<4} {when}  {r.meaning}".rstrip()


def run_inject(args: argparse.Namespace) -> int:
    r = _faults(args.name).inject(args.node, args.gpu, args.xid)
    meaning = f" ({r.meaning})" if r.meaning else ""
    print(f"Xid {r.xid}{meaning} injected on GPU {r.gpu} ({r.uuid}) of node {r.node}")
    return 0


def run_clear(args: argparse.Namespace) -> int:
    n = _faults(args.name).clear(args.node, args.gpu)
    where = f"GPU {args.gpu} of node {args.node}" if args.gpu is not None else \
        f"node {args.node}" if args.node else "every node"
    print(f"{n} fault{'s' if n != 1 else ''} cleared on {where}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    rows = _faults(args.name).list()
    if args.output == "json":
        print(json.dumps([r.to_json() for r in rows], indent=1))
        return 0
    if not rows:
        print("no faults")
        return 0
    print(f"{'NODE':<20} {'GPU':<4} {'UUID':<42} {'XID':<4} {'TIME':<20}  MEANING")
    for r in rows:
        print(_line(r))
    return 0
