"""Benchmark of a container's start: the time from ``ProcessRuntime.start`` to the exit of ``true``, through
the whole sandbox (bwrap, setpriv as root, and the step that hands the pod's env to the workload,
``mockgpu/control/kubelet/execenv.py``).

Runs against any tree (for a before/after comparison, run it from each checkout with PYTHONPATH pointing
there); the machine's load dominates the spread, so compare runs taken back to back.

    python benchmarks/container_start.py [--n 30]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from mockgpu.control.kubelet.container import ContainerSpec
from mockgpu.control.kubelet.runtime import ProcessRuntime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=30, help="containers started one after another")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rt = ProcessRuntime(Path(tmp) / "rt")
        rt.sandbox.check()  # the one-time probe is not part of a start
        times = []
        for i in range(args.n):
            spec = ContainerSpec(pod_uid=f"u{i}", pod_name="bench", namespace="default", name="c",
                                 command=("true",), env={"A": "1"})
            t = time.perf_counter()
            rt.start(spec)
            st = rt.wait(spec.pod_uid, "c", timeout=30)
            times.append(time.perf_counter() - t)
            assert st.exit_code == 0, rt.logs(spec.pod_uid, "c")
        rt.stop_all(grace=0)
    times.sort()
    print(f"start -> exit of `true`, {args.n} containers: median {statistics.median(times) * 1000:.1f} ms, "
          f"p90 {times[int(0.9 * (len(times) - 1))] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
