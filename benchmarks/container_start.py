"""Benchmark of a container's start: the time from ``ProcessRuntime.start`` to the exit of ``true``, through
the whole sandbox (bwrap, setpriv as root, and the step that hands the pod's env to the workload,
``mockgpu/control/kubelet/execenv.py``).

Runs against any tree (for a before/after comparison, run it from each checkout with PYTHONPATH pointing
there); the machine's load dominates the spread, so compare runs taken back to back.

    python benchmarks/container_start.py [--n 30] [--layer bwrap|bwrap-userns|uid|landlock]

``--layer`` forces one sandbox layer (``uid`` and ``bwrap-userns`` need root and an interpreter uid 65532 can
run; ``landlock`` as root is the test-only Landlock-alone layer); without it, the layer the probe chooses.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from mockgpu.control.kubelet.container import ContainerSpec
from mockgpu.control.kubelet.runtime import ProcessRuntime
from mockgpu.control.kubelet.sandbox import LAYERS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=30, help="containers started one after another")
    ap.add_argument("--layer", choices=LAYERS, help="force this sandbox layer (default: the probe's choice)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rt = ProcessRuntime(Path(tmp) / "rt", layers=(args.layer,) if args.layer else None)
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
    print(f"layer {rt.sandbox.layer}: start -> exit of `true`, {args.n} containers: "
          f"median {statistics.median(times) * 1000:.1f} ms, p90 {times[int(0.9 * (len(times) - 1))] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
