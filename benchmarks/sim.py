"""Wall time of the trace simulator on the full openb cluster (1,213 nodes, 6,212 GPUs).

1. one policy (default FGD, the expensive one) x 10 seeds x arrived 100 %  (target: <= 60 s)
2. the whole figure: every policy x 10 seeds x loads 0..130 % (one run per seed to 130 %,
   measured at every 1 % step)

Prints one JSON object per measurement with the median (and all samples) over --repeat runs.
Usage: PYTHONPATH=. python benchmarks/sim.py [--policy fgd] [--seeds 10] [--repeat 3] [--figure-repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from mockgpu.sim import POLICY_NAMES, default_seeds, load_trace, make_policy, simulate, task_distribution


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--policy", default="fgd")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--figure-repeat", type=int, default=1, help="0 skips the whole-figure measurement")
    args = ap.parse_args()

    nodes, pods = load_trace()
    dist = task_distribution(pods)
    seeds = default_seeds(args.seeds)
    env = {"cpus": os.cpu_count(), "nodes": len(nodes), "gpus": nodes.total_gpus}

    def one_policy() -> None:
        simulate(nodes, pods, make_policy(args.policy, dist), dist, [100], seeds)

    samples = [_time(one_policy) for _ in range(args.repeat)]
    print(json.dumps({"benchmark": f"{args.policy} x {len(seeds)} seeds x arrived 100%", **env,
                      "median_s": round(statistics.median(samples), 2), "samples_s": [round(s, 2) for s in samples]}),
          flush=True)

    if args.figure_repeat <= 0:
        return
    steps = list(range(131))
    per_policy: dict[str, list[float]] = {name: [] for name in POLICY_NAMES}
    totals = []
    for _ in range(args.figure_repeat):
        total = 0.0
        for name in POLICY_NAMES:
            t = _time(lambda name=name: simulate(nodes, pods, make_policy(name, dist), dist, steps, seeds))
            per_policy[name].append(t)
            total += t
        totals.append(total)
    print(json.dumps({"benchmark": f"figure: {len(POLICY_NAMES)} policies x {len(seeds)} seeds x loads 0..130%",
                      **env, "median_s": round(statistics.median(totals), 2),
                      "per_policy_median_s": {k: round(statistics.median(v), 2) for k, v in per_policy.items()}}),
          flush=True)


if __name__ == "__main__":
    main()
