"""``mockgpu sim``: replay the FGD paper's trace experiment for one or all policies.

``--json`` prints one JSON object for one policy; for ``--policy all`` it prints a JSON *list* of
such objects, one per policy in ``POLICY_NAMES`` order.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from mockgpu.errors import MockgpuError
from mockgpu.sim.names import POLICY_NAMES, SAMPLINGS, canonical_name

if TYPE_CHECKING:
    from mockgpu.sim.engine import PolicyResult

MAX_ARRIVED = 1000.0
MAX_SEEDS = 1000
NOTEBOOK_MODULES = {"numpy", "tqdm"}  # what the simulator needs from the notebook extra


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sim", help="replay the Alibaba GPU trace under a scheduling policy (FGD paper experiment)",
        description="Sample tasks from the trace until their GPU requests reach --arrived percent of the "
                    "cluster's GPU capacity, schedule them one by one, and report GPU allocation, "
                    "fragmentation and unplaced pods (mean and std over seeds 42, 43, ...).")
    p.add_argument("--policy", default="fgd", help=f"one of: {', '.join(POLICY_NAMES)}, or 'all' (default: fgd)")
    p.add_argument("--arrived", type=float, default=100.0, metavar="PERCENT",
                   help="arrived GPU request as a percent of cluster GPU capacity (default: 100)")
    p.add_argument("--seeds", type=int, default=10, metavar="N", help="number of seeds (default: 10)")
    p.add_argument("--curve", type=float, default=None, metavar="STEP",
                   help="also report the curve at 0, STEP, 2*STEP, ... percent up to --arrived")
    p.add_argument("--sampling", choices=SAMPLINGS, default="replacement",
                   help="replacement: draw every task with replacement (default, the paper's text); "
                        "trace-first: every trace pod once in random order, then draws (the paper's simulator)")
    p.add_argument("--trace-dir", default=None, metavar="DIR",
                   help="directory with a node list and a pod list CSV (default: the copy shipped in mockgpu)")
    p.add_argument("--pod-list", default=None, metavar="FILE", help="pod list file name in --trace-dir")
    p.add_argument("--node-list", default=None, metavar="FILE", help="node list file name in --trace-dir")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _steps(arrived: float, curve: float | None) -> list[float]:
    if curve is None:
        return [arrived]
    if curve <= 0:
        raise MockgpuError(f"--curve must be > 0, got {curve:g}", exit_code=2)
    count = int(arrived // curve)
    return sorted({round(i * curve, 6) for i in range(count + 1)} | {arrived})


def summary(result: PolicyResult, arrived: float, extra: dict[str, Any]) -> dict[str, Any]:
    """The JSON object for one policy."""
    at = result.at(arrived)
    out: dict[str, Any] = {"policy": result.policy, "arrived_percent": arrived, "seeds": len(result.runs),
                           "seed_values": list(result.seeds)}
    out.update({k: round(v, 4) for k, v in at.items()})
    out.update(extra)
    return out


def _curve(result: PolicyResult) -> list[dict[str, float]]:
    points = []
    for step in result.steps.tolist():
        at = result.at(step)
        points.append({"arrived_percent": step, **{k: round(v, 4) for k, v in at.items()}})
    return points


def _cell(row: dict[str, Any], key: str, digits: int) -> str:
    return f"{row[key]:.{digits}f} ± {row[key + '_std']:.{digits}f}"


def _table(rows: list[dict[str, Any]]) -> str:
    head = f"{'policy':<22}{'arrived %':>10}{'GPU alloc %':>18}{'frag %':>18}{'unplaced pods':>18}{'seeds':>7}"
    lines = [head, "-" * len(head)]
    for row in rows:
        for r in row.get("curve", [row]):
            lines.append(f"{row['policy']:<22}{r['arrived_percent']:>10g}{_cell(r, 'gpu_allocation_percent', 2):>18}"
                         f"{_cell(r, 'fragmentation_percent', 2):>18}{_cell(r, 'unplaced_pods', 1):>18}"
                         f"{row['seeds']:>7}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    names = list(POLICY_NAMES) if args.policy.strip().lower() == "all" else [canonical_name(args.policy)]
    if not 0 <= args.arrived <= MAX_ARRIVED:
        raise MockgpuError(f"--arrived must be between 0 and {MAX_ARRIVED:g} percent, got {args.arrived:g}",
                           exit_code=2)
    if not 1 <= args.seeds <= MAX_SEEDS:
        raise MockgpuError(f"--seeds must be between 1 and {MAX_SEEDS}, got {args.seeds}", exit_code=2)
    steps = _steps(args.arrived, args.curve)
    try:  # here, not at the top: the CLI builds this parser also where the notebook extra is not installed
        from tqdm import tqdm

        from mockgpu.sim.engine import PolicyResult, default_seeds, simulate
        from mockgpu.sim.frag import task_distribution
        from mockgpu.sim.policies import make_policy
        from mockgpu.sim.trace import load_trace
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in NOTEBOOK_MODULES:
            raise
        raise MockgpuError(f"mockgpu sim needs the notebook extra ({exc.name} is not installed): "
                           "pip install 'mockgpu[notebook]'") from None
    nodes, pods = load_trace(args.trace_dir, pods=args.pod_list, nodes=args.node_list)
    dist = task_distribution(pods)
    seeds = default_seeds(args.seeds)
    show = not args.quiet and sys.stderr.isatty()
    rows = []
    with tqdm(total=len(names) * len(seeds), unit="run", file=sys.stderr, disable=not show) as bar:
        for name in names:
            policy = make_policy(name, dist)
            bar.set_postfix_str(name)
            runs = []
            for seed in seeds:
                runs.extend(simulate(nodes, pods, policy, dist, steps, [seed], sampling=args.sampling).runs)
                bar.update(1)
            result = PolicyResult(policy.name, runs[0].steps, tuple(runs))
            extra: dict[str, Any] = {"total_gpus": nodes.total_gpus, "nodes": len(nodes), "trace_pods": len(pods),
                                     "tie_break": getattr(policy, "tie_break", "name"), "sampling": args.sampling}
            if hasattr(policy, "weights"):
                extra["weights"] = dict(policy.weights)
            row = summary(result, args.arrived, extra)
            if args.curve is not None:
                row["curve"] = _curve(result)
            rows.append(row)
    if args.json:
        print(json.dumps(rows if len(names) > 1 or args.policy.strip().lower() == "all" else rows[0], indent=2))
    else:
        print(_table(rows))
        print(f"\n{len(nodes)} nodes, {nodes.total_gpus} GPUs; {len(pods)} trace pods; mean ± std over seeds "
              f"{seeds[0]}..{seeds[-1]}")
    return 0
